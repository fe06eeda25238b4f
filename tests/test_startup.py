"""Start-up: a partition-only run (`train=none`) imports no torch, in any of its processes, and a
cached run still logs a complete MLflow run; `use_tracking_uri` points MLflow at the job's store.

Every process of the run is watched by a `sitecustomize` put on PYTHONPATH: at exit it writes the
top-level packages it imported to a file, so the partition subprocess is checked as well.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest
from helpers.cli import gnnbench

TRAINING_ONLY = ("torch", "torch_geometric", "torch_scatter", "torch_sparse", "dgl")
SMALL_GRAPH = ("dataset=synthetic", "dataset.num_nodes=2000", "dataset.feature_dim=8")

WATCHER = textwrap.dedent(
    """
    import atexit, json, os, sys

    def _record():
        out = os.path.join(os.environ["GNNBENCH_IMPORT_LOG"], f"{os.getpid()}.json")
        program = sys.argv[0]  # runpy's: the path of the module run with -m
        top = sorted({name.split(".")[0] for name in list(sys.modules)})
        with open(out, "w") as handle:
            json.dump({"program": program, "modules": top}, handle)

    atexit.register(_record)
    """
)


def watched_run(cwd: Path, log_dir: Path, *overrides: str) -> list[dict]:
    """Run `python -m gnnbench` with every process's imports recorded; the records it left."""
    hook = cwd / "hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(WATCHER)
    log_dir.mkdir()
    pythonpath = os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")]))
    env = {"PYTHONPATH": pythonpath, "GNNBENCH_IMPORT_LOG": str(log_dir)}
    completed = gnnbench(cwd, *overrides, "train=none", "p=2", env=env)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return [json.loads(path.read_text()) for path in sorted(log_dir.glob("*.json"))]


def test_partition_only_run_imports_no_torch(tmp_path, gnnbench_home):
    fresh = watched_run(tmp_path, tmp_path / "fresh", *SMALL_GRAPH)
    cached = watched_run(tmp_path, tmp_path / "cached", *SMALL_GRAPH)
    stage = str(Path("partition", "stage", "runner.py"))
    programs = [record["program"] for record in fresh]
    assert sum(program.endswith(stage) for program in programs) == 1, programs  # the hook saw it
    for record in fresh + cached:
        loaded = set(record["modules"])
        assert not loaded & set(TRAINING_ONLY), (record["program"], loaded & set(TRAINING_ONLY))
    assert len(cached) == 1, "a cached run starts no partition subprocess"
    _assert_cached_run_logged(tmp_path / "mlflow.db")


def _assert_cached_run_logged(database: Path) -> None:
    """The cached run's MLflow record is as complete as the fresh one's (metrics, tags, files)."""
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{database}")
    experiment = client.get_experiment_by_name("gnnbench")
    fresh, cached = sorted(
        client.search_runs([experiment.experiment_id]), key=lambda run: run.info.start_time
    )
    assert fresh.info.status == cached.info.status == "FINISHED"
    assert cached.data.tags["partition_cached"] == "True"
    assert set(cached.data.metrics) == set(fresh.data.metrics)
    assert cached.data.params == fresh.data.params
    context = {"mlflow.user", "mlflow.source.name", "mlflow.source.type", "mlflow.runName"}
    assert context <= set(cached.data.tags)
    files = {item.path for item in client.list_artifacts(cached.info.run_id)}
    assert {"config.yaml", "partition_metrics.json"} <= files


@pytest.fixture
def mlflow_uri_state(monkeypatch):
    """MLflow's process-wide tracking URI as it was, restored after the test."""
    from mlflow.tracking._tracking_service import utils as tracking_utils

    monkeypatch.setattr(tracking_utils, "_tracking_uri", None)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    return tracking_utils


def test_use_tracking_uri_without_a_uri_set_in_process(tmp_path, mlflow_uri_state):
    import mlflow

    from gnnbench.track.store import BUSY_TIMEOUT_S, use_tracking_uri

    for name in ("a.db", "b.db"):  # a second job of the same process moves to its own store
        uri = f"sqlite:///{tmp_path / name}"
        use_tracking_uri(uri)
        with_timeout = f"{uri}?timeout={BUSY_TIMEOUT_S}"  # SQLite's busy timeout, not retries
        assert mlflow.get_tracking_uri() == with_timeout
        assert os.environ["MLFLOW_TRACKING_URI"] == with_timeout  # subprocesses inherit it
    assert mlflow_uri_state._tracking_uri is None


def test_use_tracking_uri_after_set_tracking_uri(tmp_path, mlflow_uri_state):
    """A URI set in-process by mlflow.set_tracking_uri outranks the variable: it is replaced."""
    import mlflow

    from gnnbench.track.store import use_tracking_uri

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'other.db'}")
    uri = f"sqlite:///{tmp_path / 'job.db'}?timeout=5"  # a timeout of its own is kept
    use_tracking_uri(uri)
    assert mlflow.get_tracking_uri() == uri


def test_keys_of_the_primary_config_are_checked_without_composing(monkeypatch):
    """p=, seed=, tracking.uri=, partitioner.<shared key>= are in the schema (every config): no
    Hydra composition before Hydra's own (a tenth of a second of every such run's start)."""
    from gnnbench import cli
    from gnnbench.errors import ConfigError

    def no_compose(*_args):
        raise AssertionError("composed")

    monkeypatch.setattr(cli, "_compose", no_compose)
    cli.check_overrides(
        cli.HydraConfigs(
            ["dataset=cora", "p=4", "seed=1", "tracking.uri=sqlite:///x.db", "partitioner.hops=2"]
        )
    )
    monkeypatch.undo()
    with pytest.raises(ConfigError, match="p is a value"):  # not a key: the composed check says
        cli.check_overrides(cli.HydraConfigs(["p.x=1"]))
    with pytest.raises(ConfigError, match="did you mean train.epochs"):
        cli.check_overrides(cli.HydraConfigs(["p=4", "train.epochz=3"]))


def test_the_job_runs_with_the_collector_on(monkeypatch, tmp_path):
    """Start-up pauses the garbage collector; it is on again before any stage runs, even when
    loading the job's modules fails."""
    import gc

    from omegaconf import OmegaConf

    from gnnbench import __main__ as entry
    from gnnbench.track import store

    cfg = OmegaConf.create({"tracking": {"uri": f"sqlite:///{tmp_path / 'mlflow.db'}"}})
    try:
        entry.pause_collector()
        entry._load_job_modules(cfg)
        assert gc.isenabled()

        def broken(_uri):
            raise ImportError("no mlflow")

        monkeypatch.setattr(store, "import_tracking", broken)
        entry.pause_collector()
        with pytest.raises(ImportError):
            entry._load_job_modules(cfg)
        assert gc.isenabled()
    finally:
        gc.unfreeze()  # the test session's objects back to the collector
        gc.enable()


def test_a_later_job_of_a_sweep_freezes_nothing():
    """With the collector on (a sweep's second job), resuming freezes nothing: the first job's
    garbage stays collectable."""
    import gc

    from gnnbench.startup import resume_collector

    gc.enable()
    frozen = gc.get_freeze_count()
    resume_collector()
    assert gc.isenabled() and gc.get_freeze_count() == frozen
