"""Other systems' own training as baselines: train=distdgl (DistDGL's servers and trainers),
train=pyg_ddp and train=pyg_cluster (PyG's recipes).

They need `python -m gnnbench setup distdgl_metis` (or `pyg_metis`) first; locally their tests
skip without it, in CI (CI=true, where .ci/run sets it up) they fail.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from helpers.cli import gnnbench, start
from helpers.datasets import CORA, requires_dataset
from helpers.runs import runs

DISTDGL_JOB = ("dataset=cora", "partitioner=spring", "p=2", "num_gpus=2", "train=distdgl")


def baseline_processes() -> list[str]:
    """Command lines of every process running a baseline's training script."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "distdgl_train.py" in command:
            found.append(command)
    return found


def shared_memory() -> set[str]:
    return set(os.listdir("/dev/shm"))


def assert_nothing_left(home: Path, shm_before: set[str]) -> None:
    """No server or trainer process, no new shared-memory segment, no scratch folder."""
    deadline = time.monotonic() + 10
    while baseline_processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert baseline_processes() == []
    assert shared_memory() - shm_before == set()
    scratch = home / "baselines"
    assert not (scratch.is_dir() and list(scratch.iterdir()))  # the temporaries are dot-named


@pytest.mark.alone
@requires_dataset(CORA)
@pytest.mark.distributed
def test_distdgl_trains_cora_with_two_trainers(tmp_path, gnnbench_home, distdgl_ready):  # noqa: F811
    """DistDGL's servers and trainers on SPRING's two partitions of Cora: a FINISHED run whose
    test F1 is Cora's, whose epoch wall clock holds its compute and whose summed peak counts
    the servers; nothing is left running or in /dev/shm."""
    shm_before = shared_memory()
    completed = gnnbench(tmp_path, *DISTDGL_JOB, "train.epochs=10")
    assert completed.returncode == 0, completed.stderr[-3000:]
    _, found = runs(tmp_path)
    (run,) = found
    metrics = run.data.metrics
    assert run.info.status == "FINISHED" and run.data.params["train.mode"] == "distdgl"
    assert metrics["test_f1_micro"] >= 0.7
    assert metrics["epoch_time_s"] >= metrics["compute_time_s"] > 0
    assert (
        metrics["train_rss_sum_mb"] > 2 * metrics["train_peak_rss_mb"] > 0
    )  # 2 servers, 2 trainers
    assert metrics["prepare_time_s"] > 0
    assert_nothing_left(gnnbench_home, shm_before)


@pytest.mark.alone
@requires_dataset(CORA)
@pytest.mark.distributed
@pytest.mark.fault("baseline: a DistDGL job stopped by SIGTERM mid-epoch")
def test_distdgl_job_sigtermed_mid_epoch_leaves_nothing(tmp_path, gnnbench_home, distdgl_ready):  # noqa: F811
    """SIGTERM while the trainers train: exit 143, the run KILLED, and no server, trainer,
    shared-memory segment or scratch folder left."""
    shm_before = shared_memory()
    process = start(tmp_path, *DISTDGL_JOB, "train.epochs=200", stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while not any(" trainer " in c for c in baseline_processes()) and time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read()[-3000:]
        time.sleep(0.5)
    time.sleep(8)  # into the epochs: servers loaded, trainers connected
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 143, stderr[-3000:]
    _, found = runs(tmp_path)
    assert [run.info.status for run in found] == ["KILLED"]
    assert_nothing_left(gnnbench_home, shm_before)


def trainer_pids() -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(part.endswith(b"distdgl_train.py") for part in command) and b"trainer" in command:
            pids.append(int(entry.name))
    return pids


@pytest.mark.alone
@requires_dataset(CORA)
@pytest.mark.distributed
@pytest.mark.fault("baseline: a DistDGL trainer killed mid-run")
def test_distdgl_trainer_killed_fails_the_job_in_one_line(tmp_path, gnnbench_home, distdgl_ready):  # noqa: F811
    """SIGKILL of one trainer: the job ends FAILED in one line naming the partition, and its
    server, the other trainer and their /dev/shm are gone."""
    shm_before = shared_memory()
    process = start(tmp_path, *DISTDGL_JOB, "train.epochs=200", stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while not trainer_pids() and time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read()[-3000:]
        time.sleep(0.5)
    time.sleep(8)  # into the epochs
    os.kill(trainer_pids()[0], signal.SIGKILL)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 2, stderr[-3000:]
    line = stderr.strip().splitlines()[-1]
    assert line.startswith("gnnbench: error: train=distdgl: partition ") and "failed" in line
    _, found = runs(tmp_path)
    assert [run.info.status for run in found] == ["FAILED"]
    assert_nothing_left(gnnbench_home, shm_before)


@pytest.mark.fault("baseline: train=distdgl without the DistDGL environment")
def test_distdgl_without_its_environment_is_one_line(tmp_path, gnnbench_home):
    """The job exits 2 with one line naming train=distdgl and the setup command."""
    completed = gnnbench(tmp_path, "p=2", "num_gpus=2", "train=distdgl", "train.epochs=1")
    assert completed.returncode == 2, completed.stderr[-3000:]
    line = completed.stderr.strip().splitlines()[-1]
    assert line.startswith("gnnbench: error: train=distdgl: the DistDGL environment")
    assert "python -m gnnbench setup distdgl_metis" in line


@pytest.mark.parametrize(
    "overrides, key",
    [(("p=2", "model=gcn"), "model.name"), (("p=2", "train.strategy=full"), "train.strategy"),
     (("p=3",), "num_gpus=2 must be a multiple of p=3")],
)  # fmt: skip
def test_distdgl_refuses_what_its_recipe_cannot_train(tmp_path, gnnbench_home, overrides, key):
    """DistDGL's recipe is GraphSAGE on sampled mini-batches, num_gpus / p trainers a partition:
    anything else is one line before any data is prepared."""
    completed = gnnbench(tmp_path, "num_gpus=2", "train=distdgl", *overrides)
    assert completed.returncode == 2, completed.stderr[-3000:]
    line = completed.stderr.strip().splitlines()[-1]
    assert line.startswith("gnnbench: error: train=distdgl") and key in line


@requires_dataset(CORA)
@pytest.mark.distributed
@pytest.mark.parametrize("mode", ["pyg_ddp", "pyg_cluster"])
def test_pyg_recipes_train_cora(tmp_path, gnnbench_home, pyg_metis_ready, mode):  # noqa: F811
    """PyG's recipes on Cora with two ranks: FINISHED, Cora's F1, the wall clock holding the
    compute, no partition stage (nothing is partitioned)."""
    completed = gnnbench(tmp_path, "dataset=cora", f"train={mode}", "num_gpus=2",
                         "train.epochs=10", "train.num_clusters=8")  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    _, found = runs(tmp_path)
    (run,) = found
    metrics = run.data.metrics
    assert run.info.status == "FINISHED" and run.data.params["train.mode"] == mode
    assert metrics["test_f1_micro"] >= 0.7, metrics["test_f1_micro"]
    assert metrics["epoch_time_s"] >= metrics["compute_time_s"] > 0
    assert metrics["train_rss_sum_mb"] > metrics["train_peak_rss_mb"] > 0
    assert "replication_factor" not in metrics


def test_baselines_doc_splits_the_epoch_and_compares_systems(tmp_path, monkeypatch):
    """The doc from a CSV of runs: per graph and system the seeds' mean wall-clock epoch, its
    ratio to DistDGL on its METIS and to PyG DDP, its parts per epoch; the curves' PNG."""
    import json

    import pandas as pd

    from gnnbench.experiments import training_baselines as doc

    def row(train, partitioner, seed, epoch, f1):
        return {"dataset": "cora", "partitioner": partitioner, "train": train, "seed": seed,
                "p": 2, "num_gpus": 2, "epochs": 2, "epoch_time_s": epoch,
                "compute_time_s": epoch / 2, "sync_time_s": 0.2, "sync_wait_s": 0.4,
                "test_f1_micro": f1, "val_curve": json.dumps([0.5, f1])}  # fmt: skip

    frame = pd.DataFrame([row("distdgl", "distdgl_metis", 0, 2.0, 0.8),
                          row("distdgl", "distdgl_metis", 1, 2.0, 0.8),
                          row("pyg_ddp", "spring", 0, 4.0, 0.7),
                          row("model_avg", "spring", 0, 1.0, 0.75)])  # fmt: skip
    monkeypatch.setattr(doc, "DOC", tmp_path / "doc.md")
    monkeypatch.setattr(doc, "PNG", tmp_path / "curves.png")
    doc.write_doc(frame)
    text = (tmp_path / "doc.md").read_text()
    lines = {line.split(" | ")[1]: line.split(" | ") for line in text.splitlines()
             if line.startswith("| cora")}  # fmt: skip
    assert set(lines) == {"DistDGL on distdgl_metis", "PyG DDP", "gnnbench model_avg on spring"}
    ours = lines["gnnbench model_avg on spring"]
    assert ours[3:6] == ["1.000", "0.50", "0.25"]  # epoch s, vs DistDGL, vs PyG DDP
    assert ours[8] == "0.100"  # sync per epoch: 0.2 s over 2 epochs
    assert lines["DistDGL on distdgl_metis"][2] == "2"  # seeds
    assert (tmp_path / "curves.png").stat().st_size > 0
