"""Faults a shared cluster produces: corrupt caches, leftovers of killed runs, concurrent stores.

Each test stands for one row of docs/reliability.md (scripts/fault_matrix.py): its docstring says
the fault and the expected behaviour. Signals and killed processes: tests/test_faults_signals.py;
bad input files: tests/test_faults_data.py.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
from helpers.cli import gnnbench, start

from gnnbench.data.datasets import prepare_dataset
from gnnbench.errors import DataError
from gnnbench.partition.spec import PartitionSpec
from gnnbench.partition.stage.book import PartitionBook, open_verified
from gnnbench.partition.stage.runner import run_partition_stage
from gnnbench.process.atomic import remove_stale_temporaries, scratch_directory

SMALL_SYNTHETIC = {
    "name": "faults",
    "source": "synthetic",
    "num_nodes": 2000,
    "avg_degree": 8,
    "num_classes": 4,
    "feature_dim": 8,
    "seed": 1,
}


def dead_pid() -> int:
    """The pid of a process that has already exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.fixture
def store(gnnbench_home):
    return prepare_dataset(SMALL_SYNTHETIC)


def _book(store, node_data: bool = True, **keys):
    spec = PartitionSpec.defaults("spring", **keys)
    return run_partition_stage(store, partitioner=spec, p=4, seed=0, node_data=node_data)


@pytest.mark.fault("cache: truncated owner.npy in a cached book")
def test_truncated_owner_is_recomputed_not_reused(store, caplog):
    """A cached book whose owner.npy was cut to 100 bytes is removed and recomputed (one warning
    line), with the same replication factor; it is never reported as cached."""
    book, cached = _book(store)
    assert not cached
    with open(book.path / "owner.npy", "r+b") as handle:
        handle.truncate(100)
    again, cached = _book(store)
    assert not cached
    assert again.metrics["replication_factor"] == book.metrics["replication_factor"]
    assert np.load(again.path / "owner.npy").shape == (store.num_nodes,)
    assert any("failed its check" in r.message for r in caplog.records)


@pytest.mark.fault("cache: a partition file of a full book truncated")
def test_truncated_partition_file_is_recomputed(store):
    """A truncated part-<i>/feat.npy in a cached full book is found before training uses it."""
    book, _ = _book(store, feature_rows="copy")
    feat = book.path / "part-1" / "feat.npy"
    with open(feat, "r+b") as handle:
        handle.truncate(feat.stat().st_size // 2)
    with pytest.raises(DataError, match="truncated"):
        PartitionBook(book.path).verify()
    again, cached = _book(store, feature_rows="copy")
    assert not cached and again.load(1).features.shape[0] == again.load(1).nodes.shape[0]


@pytest.mark.fault("cache: a byte flipped inside a small book file")
def test_corrupted_small_file_fails_the_checksum(store):
    """Same size, different content: the checksum of the small arrays catches it."""
    book, _ = _book(store, node_data=False)
    owner = book.path / "owner.npy"
    data = bytearray(owner.read_bytes())
    data[-1] ^= 0xFF
    owner.write_bytes(bytes(data))
    assert open_verified(book.path) is None
    assert not book.path.exists()  # removed, never used


@pytest.mark.fault("cache: a book written by another format version")
def test_book_of_another_format_version_is_not_used(store):
    """A book from an older gnnbench (format_version 1, no manifest) is recomputed."""
    import json

    book, _ = _book(store, node_data=False)
    meta = json.loads((book.path / "meta.json").read_text())
    meta["format_version"] = 1
    (book.path / "meta.json").write_text(json.dumps(meta))
    _, cached = _book(store, node_data=False)
    assert not cached


@pytest.mark.fault("cache: the partitioner's code changed")
def test_partitioner_version_is_part_of_the_cache_key(store, monkeypatch):
    """Bumping a partitioner module's VERSION gives a new book instead of the old one."""
    from gnnbench.partition.algorithms import spring

    first, _ = _book(store, node_data=False)
    monkeypatch.setattr(spring, "VERSION", "999")
    second, cached = _book(store, node_data=False)
    assert not cached and second.path != first.path


@pytest.mark.fault("leftovers: temporary directories of killed imports and partitions")
def test_stale_temporaries_are_removed(gnnbench_home):
    """`.<name>.tmp-<host>-<pid>` whose pid is dead is removed; a live writer's, another host's
    and an ordinary directory are kept."""
    host = socket.gethostname()
    partitions = gnnbench_home / "partitions"
    graphs = gnnbench_home / "graphs"
    stale = [
        partitions / f".cora-spring-p4.tmp-{host}-{dead_pid()}",
        partitions / f".cora-hash-p4.tmp-{dead_pid()}",  # the older name, without the host
        graphs / "cora-1234" / f".adj_indices.npy.tmp-{host}-{dead_pid()}",
    ]
    kept = [
        partitions / f".cora-spring-p8.tmp-{host}-{os.getpid()}",
        partitions / f".cora-spring-p16.tmp-elsewhere-{dead_pid()}",
        graphs / "cora-1234",
    ]
    for path in stale + kept:
        path.mkdir(parents=True, exist_ok=True)
    (stale[0] / "owner.npy").write_bytes(b"x" * 1000)
    freed = remove_stale_temporaries(gnnbench_home)
    assert freed >= 1000
    assert not any(path.exists() for path in stale)
    assert all(path.exists() for path in kept)


def test_a_killed_process_s_scratch_directory_is_removed_by_the_next(tmp_path, monkeypatch):
    """A SIGKILL skips a scratch directory's removal; the next scratch_directory in the same
    temporary folder removes it (and only gnnbench's: a look-alike of another program stays)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    host = socket.gethostname()
    killed = tmp_path / f".gnnbench-train-x1y2.tmp-{host}-{dead_pid()}"
    (killed / "result.json").parent.mkdir()
    (killed / "result.json").write_text("{}")
    live = tmp_path / f".gnnbench-train-a3b4.tmp-{host}-{os.getppid()}"
    foreign = tmp_path / f".other-program.tmp-{host}-{dead_pid()}"
    live.mkdir()
    foreign.mkdir()
    with scratch_directory("train") as scratch:
        assert scratch.is_dir() and scratch.name.endswith(f".tmp-{host}-{os.getpid()}")
        assert not killed.exists() and live.exists() and foreign.exists()
    assert not scratch.exists()
    child = subprocess.Popen(  # killed inside its scratch directory: it stays, until the next
        [sys.executable, "-c", "import time\nfrom gnnbench.process.atomic import scratch_directory\n"
         "with scratch_directory('train') as s:\n    print(s, flush=True)\n    time.sleep(60)"],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "TMPDIR": str(tmp_path)},
    )  # fmt: skip
    left = Path(child.stdout.readline().strip())
    child.kill()
    child.wait()
    child.stdout.close()
    assert left.is_dir()
    with scratch_directory("partition"):
        assert not left.exists()


@pytest.mark.fault("tracking: a run left RUNNING by a killed process")
def test_running_run_of_dead_process_ends_killed(tmp_path):
    """On the next run in the same store, a RUNNING run whose host+pid is dead ends KILLED with
    error_type=Killed; a live process's run stays RUNNING."""
    import mlflow

    from gnnbench.track.store import HOST_TAG, PID_TAG, open_experiment

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client, experiment_id = open_experiment(uri, "gnnbench")
    host = socket.gethostname()
    dead = client.create_run(experiment_id, tags={HOST_TAG: host, PID_TAG: str(dead_pid())})
    alive = client.create_run(experiment_id, tags={HOST_TAG: host, PID_TAG: str(os.getppid())})
    open_experiment(uri, "gnnbench")
    client = mlflow.MlflowClient(tracking_uri=uri)
    assert client.get_run(dead.info.run_id).info.status == "KILLED"
    assert client.get_run(dead.info.run_id).data.tags["error_type"] == "Killed"
    assert client.get_run(alive.info.run_id).info.status == "RUNNING"


_OPEN_STORE = """
import sys, time
from gnnbench.track.store import open_experiment
while time.time() < float(sys.argv[2]):
    time.sleep(0.001)
client, experiment_id = open_experiment(sys.argv[1], "gnnbench")
print(experiment_id)
"""


@pytest.mark.fault("concurrency: several processes create a new MLflow store at once")
def test_concurrent_store_creation(tmp_path):
    """Four processes released at the same instant on a fresh SQLite file all open the store and
    agree on one experiment (no 'table experiments already exists')."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    start_at = str(time.time() + 4.0)  # after every interpreter has imported mlflow
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _OPEN_STORE, uri, start_at],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    outputs = [child.communicate(timeout=120) for child in children]
    assert all(child.returncode == 0 for child in children), [err for _, err in outputs]
    assert len({out.strip() for out, _ in outputs}) == 1


@pytest.mark.slow
@pytest.mark.fault("concurrency: two sweeps launched together in one new directory")
def test_two_sweeps_started_together(tmp_path, gnnbench_home):
    """Both exit 0, two parents, every child FINISHED under its parent."""
    import mlflow

    children = [
        start(tmp_path, "-m", "dataset=synthetic", "dataset.num_nodes=3000",
              f"partitioner={name}", "p=2,4", "train=none",
              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for name in ("spring", "hash")
    ]  # fmt: skip
    results = [child.communicate(timeout=600) for child in children]
    assert [child.returncode for child in children] == [0, 0], [err[-2000:] for _, err in results]
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("gnnbench")
    found = client.search_runs([experiment.experiment_id])
    parents = {r.info.run_id for r in found if r.data.tags.get("gnnbench.role") == "parent"}
    children_runs = [r for r in found if r.data.tags.get("gnnbench.role") == "job"]
    assert len(parents) == 2 and len(children_runs) == 4
    assert all(r.info.status == "FINISHED" for r in children_runs)
    assert {r.data.tags.get("mlflow.parentRunId") for r in children_runs} == parents


@pytest.mark.fault("tracking: the sweep's parent run cannot be created")
def test_sweep_without_parent_fails_loudly(tmp_path, gnnbench_home):
    """An unusable store (its folder is a file) fails the sweep in one line with exit 2 before
    any job runs, instead of logging orphan runs and exiting 0."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    completed = gnnbench(
        tmp_path, "-m", "dataset=synthetic", "p=2,4", "train=none",
        f"tracking.uri=sqlite:///{blocker}/mlflow.db",
    )  # fmt: skip
    assert completed.returncode == 2, completed.stderr[-2000:]
    errors = [line for line in completed.stderr.splitlines() if "gnnbench: error" in line]
    assert len(errors) == 1 and "sweep could not start" in errors[0]
    assert not (gnnbench_home / "partitions").exists()  # no job ran


@pytest.mark.fault("partition: owners break the partitioner's stated balance bound")
def test_balance_violation_is_tagged(tmp_path, gnnbench_home):
    """A partition whose vertex_balance exceeds its bound is tagged balance_violation on the run
    and shown in the sweep's end line and report (here hash with the shared bound set below what
    hashing reaches)."""
    from helpers.runs import runs

    first = gnnbench(tmp_path, "dataset=synthetic", "dataset.num_nodes=3000", "partitioner=hash",
                     "p=4", "train=none")  # fmt: skip
    assert first.returncode == 0 and "balance violation" not in first.stdout + first.stderr
    completed = gnnbench(
        tmp_path, "-m", "dataset=synthetic", "dataset.num_nodes=3000", "partitioner=hash",
        "p=4,8", "train=none", "partitioner.max_vertex_balance=1.0",
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-2000:]
    _, found = runs(tmp_path)
    swept = [r for r in found if r.data.params.get("partitioner.max_vertex_balance") == "1.0"]
    # the p=4 book is reused from the first run: the bound is the sweep's, not the book's
    assert len(swept) == 2 and all("balance_violation" in r.data.tags for r in swept)
    assert any(r.data.tags.get("partition_cached") == "True" for r in swept)
    assert "partitioner.max_vertex_balance" in swept[0].data.tags["balance_violation"]
    assert "2 balance violation(s)" in completed.stderr
    report = next((tmp_path / "reports").glob("*/report.md")).read_text()
    assert "balance_violation" in report


@pytest.mark.fault("bad input: an npz whose CSR arrays disagree with its shape")
def test_npz_shape_message_shows_plain_numbers(tmp_path, gnnbench_home):
    """The one-line error names the shape as (200, 200), not (np.int64(200), np.int64(200))."""
    path = tmp_path / "bad.npz"
    np.savez(
        path,
        adj_data=np.ones(3),
        adj_indices=np.array([1, 2, 0]),
        adj_indptr=np.array([0, 1, 3]),  # 3 entries: a 2-row matrix, not 200 rows
        adj_shape=np.array([200, 200]),
    )
    with pytest.raises(DataError) as error:
        prepare_dataset({"name": "bad", "source": "npz", "path": str(path)})
    assert "shape (200, 200)" in str(error.value) and "np.int64" not in str(error.value)


def _huge_feature_npz(path) -> None:
    """A 400-node ring whose finite features (3e38) overflow the first layer: the loss is NaN."""
    import scipy.sparse as sp

    n = 400
    ring = sp.coo_matrix((np.ones(n), (np.arange(n), (np.arange(n) + 1) % n)), shape=(n, n))
    adj = ring.tocsr()
    np.savez(
        path, adj_data=adj.data, adj_indices=adj.indices, adj_indptr=adj.indptr,
        adj_shape=np.array(adj.shape), attr_matrix=np.full((n, 4), 3e38, dtype=np.float32),
        labels=np.arange(n) % 3,
    )  # fmt: skip


@pytest.mark.fault("training: the loss becomes NaN or infinite")
def test_nonfinite_loss_fails_the_run_with_its_epoch(tmp_path, gnnbench_home):
    """A non-finite training loss stops the run FAILED with error_type=NonFiniteLoss and the
    epoch, in one line, instead of logging a meaningless F1 with exit 0."""
    from helpers.runs import runs

    _huge_feature_npz(tmp_path / "huge.npz")
    completed = gnnbench(
        tmp_path, "dataset=npz", f"dataset.path={tmp_path / 'huge.npz'}", "train=centralized",
        "train.epochs=2",
    )  # fmt: skip
    assert completed.returncode == 2, completed.stderr[-2000:]
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and "train loss is nan at epoch 1" in lines[0]
    _, found = runs(tmp_path)
    assert found[0].info.status == "FAILED"
    assert found[0].data.tags["error_type"] == "NonFiniteLoss"


@pytest.mark.distributed
@pytest.mark.fault("training: a non-finite loss on one rank of two")
def test_nonfinite_loss_on_a_rank_fails_fast(tmp_path, gnnbench_home):
    """The same under model averaging: the rank's error reaches the parent as NonFiniteLoss."""
    from gnnbench.errors import NonFiniteLoss
    from gnnbench.train.runner import run_training
    from gnnbench.train.spec import spec_from_conf

    _huge_feature_npz(tmp_path / "huge.npz")
    store = prepare_dataset({"name": "huge", "source": "npz", "path": str(tmp_path / "huge.npz")})
    book, _ = run_partition_stage(store, partitioner=PartitionSpec.defaults("hash"), p=2, seed=0)
    train = {"mode": "model_avg", "epochs": 2, "batch_size": 64, "fanouts": [5, 5]}
    model = {"name": "sage", "layers": 2, "hidden": 8}
    with pytest.raises(NonFiniteLoss, match="at epoch 1"):
        run_training(
            store_path=store.path,
            book_path=book.path,
            spec=spec_from_conf(train, model, num_gpus=2, sync_interval=1, seed=0),
        )


def _rank_making_a_temporary_folder_then_dying(job, rank, num_gpus, device, payload) -> dict:
    """A rank that creates multiprocessing's temporary folder, says where, and is SIGKILLed."""
    import multiprocessing.util

    Path(payload).write_text(multiprocessing.util.get_temp_dir())
    os.kill(os.getpid(), signal.SIGKILL)
    return {}


@pytest.mark.distributed
def test_a_killed_rank_leaves_no_temporary_folder(tmp_path):
    """A spawned rank's temporary files live in the launch's scratch folder: a rank that is
    killed (or ends with os._exit, as every rank does) skips its own clean-up, and its pymp-*
    folder went on living in /tmp; now the launcher removes it with the scratch."""
    from gnnbench.train.launch import spawn_workers
    from gnnbench.train.spec import Job, spec_from_conf

    job = Job(spec_from_conf({"mode": "model_avg"}), tmp_path, None, 1, 2, False, None)
    said = tmp_path / "temporary_folder.txt"
    with pytest.raises(Exception, match="worker 0"):
        spawn_workers(job, 1, _rank_making_a_temporary_folder_then_dying, str(said))
    folder = Path(said.read_text())
    assert folder.name.startswith("pymp-") and ".gnnbench-train-" in str(folder)
    assert not folder.exists()
