"""Two torchrun "nodes" on this machine (two agents meeting at a c10d rendezvous, one rank each)
train one grad_avg job and log one run: the multi-node launch, short of a second machine."""

from __future__ import annotations

import socket
import subprocess

import pytest
from helpers.cli import start
from helpers.datasets import CORA, requires_dataset

NODES = 2


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def node_options(node_rank: int, port: int) -> list[str]:
    """One node's torchrun options; node 0 hosts the rendezvous store (is_host), node 1 joins it."""
    return [f"--nnodes={NODES}", f"--node_rank={node_rank}", "--nproc_per_node=1",
            "--rdzv_backend=c10d", f"--rdzv_endpoint=127.0.0.1:{port}", "--rdzv_id=gnnbench-nodes",
            f"--rdzv_conf=is_host={int(node_rank == 0)}"]  # fmt: skip


@requires_dataset(CORA)
@pytest.mark.slow
@pytest.mark.distributed
def test_two_torchrun_nodes_train_one_grad_avg_job(tmp_path, gnnbench_home):
    port = free_port()
    loopback = {"GLOO_SOCKET_IFNAME": "lo"}  # both "nodes" talk over loopback
    nodes = [
        start(tmp_path, "dataset=cora", "train=grad_avg", "train.epochs=2", f"num_gpus={NODES}",
              "p=2", torchrun=node_options(rank, port), env=loopback, text=True,
              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for rank in range(NODES)
    ]  # fmt: skip
    outputs = []
    try:
        for node in nodes:
            outputs.append(node.communicate(timeout=400)[0])
    finally:
        for node in nodes:
            if node.poll() is None:
                node.kill()
    for rank, (node, output) in enumerate(zip(nodes, outputs, strict=True)):
        assert node.returncode == 0, f"node {rank}:\n{output[-3000:]}"
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    found = [
        run
        for run in client.search_runs([client.get_experiment_by_name("gnnbench").experiment_id])
        if run.data.tags.get("gnnbench.role") != "parent"
    ]
    assert [run.info.status for run in found] == ["FINISHED"]  # one run, logged by rank 0
    assert found[0].data.params["train.mode"] == "grad_avg"
    assert found[0].data.metrics["train_nodes_per_epoch"] == 140  # cora's split, across 2 ranks
    assert sum(out.count("train: grad_avg test micro-F1") for out in outputs) == NODES
