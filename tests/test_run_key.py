"""run_key: a job's identity holds what changes its result and nothing its train mode ignores."""

from __future__ import annotations

import pytest
from test_end_to_end import gnnbench, runs

from gnnbench.track.sweep import run_key

BASE = {
    "dataset": {"name": "cora"},
    "partitioner": {"name": "spring"},
    "p": 4,
    "sync_interval": 1,
    "num_gpus": 2,
    "seed": 0,
    "model": {"name": "sage"},
    "tracking": {"uri": "sqlite:///a.db"},
    "resume": True,
}


def key(mode: str, **changes) -> str:
    return run_key({**BASE, "train": {"mode": mode, "epochs": 3}, **changes})


def test_ignored_axes_do_not_change_the_key():
    assert key("grad_avg", sync_interval=1) == key("grad_avg", sync_interval=5)
    assert key("centralized", p=4, num_gpus=2) == key("centralized", p=8, num_gpus=1)
    assert key("centralized") == key("centralized", partitioner={"name": "hash"})
    assert key("none", model={"name": "gcn"}, num_gpus=1) == key("none")
    assert key("model_avg", tracking={"uri": "sqlite:///b.db"}, resume=False) == key("model_avg")


def test_axes_that_matter_change_the_key():
    assert key("model_avg", sync_interval=1) != key("model_avg", sync_interval=5)
    assert key("grad_avg", p=4) != key("grad_avg", p=8)
    assert key("none", p=4) != key("none", p=8)
    assert key("none", p="auto", num_gpus=1) != key("none", p="auto", num_gpus=2)
    assert key("centralized", seed=0) != key("centralized", seed=1)


@pytest.mark.slow
@pytest.mark.distributed
def test_grad_avg_sweep_over_sync_interval_runs_once(tmp_path, gnnbench_home):
    """`-m sync_interval=1,2 train=grad_avg` trains one job and resumes the other."""
    completed = gnnbench(
        tmp_path, "-m", "sync_interval=1,2", "train=grad_avg", "train.epochs=1",
        "dataset.num_nodes=2000", "p=2",
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-2000:]
    _, found = runs(tmp_path)
    assert len(found) == 1 and found[0].info.status == "FINISHED"
    assert "already FINISHED" in completed.stdout + completed.stderr
