"""DistDGL's own training of a partitioned graph; runs in the DistDGL environment, not gnnbench's.

    python distdgl_train.py convert --store DIR --owner owner.npy --parts P --out DIR
    python distdgl_train.py machine --part I --job job.json
    python distdgl_train.py server  --part I --job job.json      (started by `machine`)
    python distdgl_train.py trainer --part I --rank R --job job.json   (started by `machine`)

`convert` writes any gnnbench PartitionBook's owners (METIS's from partitioner=distdgl_metis,
SPRING's, ...) in DistDGL's partition format: `dgl.distributed.partition_graph` on a DGLGraph with
the store's features, labels and split masks, its node assignment replaced by the book's owners
(partition_graph's own "random" assignment is the one hook it has), then reshuffled and halo-ed by
DGL itself as for METIS.

`machine` is one partition's "machine": it starts that partition's graph server and its trainers
and waits for them; gnnbench runs it inside a private mount namespace with its own /dev/shm,
because DGL names a server's shared-memory segments after the graph only, so two servers on one
host would overwrite each other. A trainer is told its machine id (DGL would take the first
ip_config line whose address is local: every trainer on 127.0.0.1 would be machine 0).

A trainer is DGL's distributed recipe (DistGraph, node_split, DistNodeDataLoader with
NeighborSampler, GraphSAGE of dgl.nn.SAGEConv initialised as gnnbench's, DDP over gloo, Adam) with gnnbench's fanouts,
batch size, model shape, learning rate, epochs and evaluation split, and gnnbench's meter: an
epoch's wall clock from its first batch to its last optimizer step (DDP's all-reduce inside it),
the wait for each batch (DGL's sampling and remote feature fetches) apart. Evaluation samples every
neighbour of each trainer's share of the validation and test nodes. Each process writes
`<role>-<part>-<rank>.json` (its figures and its resident peak) into the job's folder.

This file imports only the standard library, numpy, torch and dgl; what it shares with gnnbench is
loaded from gnnbench's files themselves: the DGLGraph of a store (gnnbench/partition/
distdgl_driver.py, as distdgl_metis builds it) and the F1 rule (gnnbench/train/metrics.py, named
in job.json; it imports only torch).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np


def _read_json(path: Path) -> dict:
    return json.loads(Path(path).read_text())


def _write_json(path: Path, payload: dict) -> None:
    tmp = Path(f"{path}.tmp")
    tmp.write_text(json.dumps(payload))
    os.replace(tmp, path)


def _peak_rss_mb() -> float:
    """VmHWM in MB: this process's resident peak (since exec: a fresh interpreter)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return float(line.split()[1]) / 1024
    return float("nan")


# --- convert -------------------------------------------------------------------------------------


def _module(name: str, path: Path):
    """A gnnbench file loaded on its own (this environment has no gnnbench to import)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def convert(store: Path, owner_path: Path, parts: int, out: Path) -> None:
    """The book's owners as DistDGL's partitions under out/dgl (graph.json and part<i>/)."""
    import dgl.distributed.partition as dgl_partition
    import torch

    started = time.perf_counter()
    owner = torch.from_numpy(np.load(owner_path).astype(np.int64))
    # the DGLGraph with features, labels and split masks, as distdgl_metis builds it
    driver = _module(
        "distdgl_driver",
        Path(__file__).parents[2] / "partition" / "baselines" / "distdgl_driver.py",
    )
    graph = driver.load_graph(store, features=True)
    if len(owner) != graph.num_nodes():
        raise ValueError(f"{owner_path}: {len(owner)} owners for {graph.num_nodes()} nodes")

    def book_owners(num_parts: int, num_nodes: int):
        assert num_parts == parts and num_nodes == len(owner)
        return owner

    dgl_partition.random_choice = book_owners  # partition_graph's one assignment hook
    dgl_partition.partition_graph(
        graph, "graph", parts, str(out / "dgl"), part_method="random", num_hops=1,
        return_mapping=False,
    )  # fmt: skip
    _write_json(out / "convert.json",
                {"seconds": time.perf_counter() - started, "rss_mb": _peak_rss_mb()})  # fmt: skip


# --- one machine: its server and trainers -----------------------------------------------------


def _dgl_env(job: dict, part: int, role: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DGL_DIST_MODE="distributed", DGL_ROLE=role, DGL_NUM_SAMPLER="0", DGL_NUM_SERVER="1",
        DGL_NUM_CLIENT=str(job["num_trainers"]), DGL_CONF_PATH=job["part_config"],
        DGL_IP_CONFIG=job["ip_config"], DGL_GRAPH_FORMAT="csc", DGL_SERVER_ID=str(part),
        OMP_NUM_THREADS=str(job["threads"]), DGLBACKEND="pytorch",
    )  # fmt: skip
    return env


def _die_with_parent() -> None:
    """preexec_fn: the kernel SIGKILLs this child when the machine process goes (PR_SET_PDEATHSIG),
    so a killed machine leaves no server or trainer."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)


def machine(part: int, job_path: Path) -> int:
    """Start partition `part`'s server and trainers; wait; the first failure stops the rest."""
    job = _read_json(job_path)
    me = [sys.executable, __file__]
    per_machine = job["num_trainers"] // job["parts"]
    processes = [subprocess.Popen([*me, "server", "--part", str(part), "--job", str(job_path)],
                                  env=_dgl_env(job, part, "server"), preexec_fn=_die_with_parent)]  # fmt: skip
    for local in range(per_machine):
        rank = part * per_machine + local
        command = [*me, "trainer", "--part", str(part), "--rank", str(rank), "--job", str(job_path)]
        processes.append(subprocess.Popen(command, env=_dgl_env(job, part, "client"),
                                          preexec_fn=_die_with_parent))  # fmt: skip

    def stop(code: int) -> None:
        for process in processes:
            if process.poll() is None:
                process.kill()
        sys.exit(code)

    signal.signal(signal.SIGTERM, lambda *_args: stop(143))
    while True:
        codes = [process.poll() for process in processes]
        failed = [code for code in codes if code not in (None, 0)]
        if failed:
            stop(1)
        if all(code == 0 for code in codes):
            return 0
        time.sleep(0.2)


def server(part: int, job_path: Path) -> None:
    """DistDGL's graph server of partition `part` (returns when every trainer has exited)."""
    import atexit

    import dgl

    job = _read_json(job_path)
    out = Path(job["out"])
    atexit.register(
        lambda: _write_json(out / f"server-{part}.json", {"peak_rss_mb": _peak_rss_mb()})
    )
    dgl.distributed.initialize(job["ip_config"])  # serves, then sys.exit()


# --- a trainer -----------------------------------------------------------------------------------


def build_model(in_dim: int, job: dict):
    import dgl.nn as dglnn
    import torch
    import torch.nn.functional as F

    dims = [in_dim] + [job["hidden"]] * (job["layers"] - 1) + [job["num_classes"]]

    class SAGE(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.convs = torch.nn.ModuleList(
                dglnn.SAGEConv(dims[i], dims[i + 1], "mean") for i in range(len(dims) - 1)
            )
            for conv in self.convs:
                _init_as_pyg(conv)

        def forward(self, blocks, h):
            for i, (conv, block) in enumerate(zip(self.convs, blocks, strict=True)):
                h = conv(block, h)
                if i < len(self.convs) - 1:
                    h = F.dropout(F.relu(h), job["dropout"], self.training)
            return h

    return SAGE()


def _init_as_pyg(conv) -> None:
    """gnnbench's (PyG's) SAGEConv initialisation for DGL's: both linear maps as torch.nn.Linear
    initialises them (kaiming-uniform, bound 1/sqrt(fan_in)), the bias uniform in that bound.
    DGL's own (xavier-uniform weights with the ReLU gain) draws them ~3x larger on
    amazon_cs's 767 inputs; on row-normalised features it left the majority class behind two
    epochs sooner than PyG's and gnnbench's did, which is the model's start, not the system's."""
    import math

    import torch

    conv.fc_self.reset_parameters()  # DGL 2.1 keeps the bias here, as PyG's lin_l does
    conv.fc_neigh.reset_parameters()
    bias = getattr(conv, "bias", None)  # where another DGL version keeps it
    if isinstance(bias, torch.nn.Parameter):
        bound = 1 / math.sqrt(conv.fc_neigh.in_features)
        torch.nn.init.uniform_(bias, -bound, bound)


def trainer(part: int, rank: int, job_path: Path) -> None:
    import dgl
    import dgl.distributed.rpc_client as rpc_client
    import torch
    import torch.distributed as dist

    job = _read_json(job_path)
    torch.set_num_threads(job["threads"])
    rpc_client.get_local_machine_id = lambda _namebook: part  # DGL would say 0 for every trainer
    dgl.distributed.initialize(job["ip_config"])
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(job["master_port"]))
    dist.init_process_group("gloo", rank=rank, world_size=job["num_trainers"])
    graph = dgl.distributed.DistGraph("graph", part_config=job["part_config"])
    book = graph.get_partition_book()
    seeds = {
        name: dgl.distributed.node_split(graph.ndata[f"{name}_mask"], book, force_even=True)
        for name in ("train", "val", "test")
    }
    torch.manual_seed(job["seed"])
    model = torch.nn.parallel.DistributedDataParallel(
        build_model(graph.ndata["feat"].shape[1], job)
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=job["lr"], weight_decay=job["weight_decay"])
    sampler = dgl.dataloading.NeighborSampler(list(reversed(job["fanouts"])))
    loader = dgl.dataloading.DistNodeDataLoader(
        graph, seeds["train"], sampler, batch_size=job["batch_size"], shuffle=True, drop_last=False
    )
    metrics = _module("gnnbench_metrics", job["metrics_py"])
    figures = {key: [] for key in ("epoch_time_s", "compute_time_s", "batch_wait_s", "train_loss")}
    evaluations, eval_times = {}, []
    for epoch in range(1, job["epochs"] + 1):
        wall, wait, compute, loss_sum = _train_epoch(model, optimizer, loader, graph)
        print(f"trainer {rank}: epoch {epoch} {wall:.3f} s", flush=True)  # gnnbench's watchdog
        for key, value in zip(figures, (wall, compute, wait, loss_sum), strict=True):
            figures[key].append(value)
        if epoch % job["eval_every"] == 0 or epoch == job["epochs"]:
            started = time.perf_counter()
            evaluations[epoch] = _evaluate(model.module, graph, seeds, job, metrics)
            eval_times.append(time.perf_counter() - started)
    result = {**figures, "train_nodes": len(seeds["train"]), "evaluations": evaluations,
              "eval_time_s": eval_times, "peak_rss_mb": _peak_rss_mb()}  # fmt: skip
    _write_json(Path(job["out"]) / f"trainer-{part}-{rank}.json", result)
    dist.barrier()  # every trainer's result is written before any leaves the servers


def _train_epoch(model, optimizer, loader, graph) -> tuple[float, float, float, float]:
    """(wall, batch wait, compute, summed loss) of one epoch on this trainer."""
    import torch
    import torch.nn.functional as F

    model.train()
    started = time.perf_counter()
    wait = compute = loss_sum = 0.0
    batches, said = iter(loader), started
    with model.join():  # node_split may leave trainers a batch apart: DDP's uneven inputs
        while True:
            fetch = time.perf_counter()
            try:
                input_nodes, seeds, blocks = next(batches)
            except StopIteration:
                break
            x = graph.ndata["feat"][input_nodes].float()  # a float16 store's rows too
            y = graph.ndata["label"][seeds].long()
            ready = time.perf_counter()
            wait += ready - fetch
            loss = F.cross_entropy(model(blocks, x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()  # DDP all-reduces the gradients here
            optimizer.step()
            loss_sum += float(loss.detach()) * len(seeds)
            compute += time.perf_counter() - ready
            if time.perf_counter() - said > 30:  # alive, for gnnbench's no-progress watchdog
                print(f"training: {loss_sum:.1f}", flush=True)
                said = time.perf_counter()
    torch.distributed.barrier()  # the epoch ends at the slowest trainer's last step
    return time.perf_counter() - started, wait, compute, loss_sum


def _evaluate(model, graph, seeds: dict, job: dict, metrics) -> dict:
    """Micro and macro F1 of every trainer's share of the validation and test nodes together,
    every neighbour sampled (one confusion count all-reduced over the trainers)."""
    import dgl
    import torch
    import torch.distributed as dist

    model.eval()
    sampler = dgl.dataloading.MultiLayerFullNeighborSampler(job["layers"])
    scores = {}
    for name in ("val", "test"):
        loader = dgl.dataloading.DistNodeDataLoader(
            graph, seeds[name], sampler, batch_size=job["eval_batch_size"], shuffle=False
        )
        counts = torch.zeros(3, job["num_classes"], dtype=torch.int64)
        with torch.no_grad():
            for input_nodes, nodes, blocks in loader:
                predicted = model(blocks, graph.ndata["feat"][input_nodes].float()).argmax(1)
                target = graph.ndata["label"][nodes].long()
                counts += metrics.confusion_counts(predicted, target, job["num_classes"])
                print("evaluating", flush=True)  # alive, for gnnbench's no-progress watchdog
        dist.all_reduce(counts)
        scores[name] = list(metrics.f1_scores(counts))
    return scores


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("role", choices=("convert", "machine", "server", "trainer"))
    parser.add_argument("--store", type=Path)
    parser.add_argument("--owner", type=Path)
    parser.add_argument("--parts", type=int)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--part", type=int)
    parser.add_argument("--rank", type=int)
    parser.add_argument("--job", type=Path)
    args = parser.parse_args()
    if args.role == "convert":
        convert(args.store, args.owner, args.parts, args.out)
    elif args.role == "machine":
        return machine(args.part, args.job)
    elif args.role == "server":
        server(args.part, args.job)
    else:
        trainer(args.part, args.rank, args.job)
    return 0


if __name__ == "__main__":
    sys.exit(main())
