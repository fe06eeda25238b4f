"""Start-up: the wall time of a whole cached `python -m gnnbench dataset=cora train=none` process.

The store and the partition book are prepared by a first run, so what is timed is what a user
waits for around a cached job: the interpreter, Hydra, the imports, MLflow's store and the run's
logging. Recorded in `extra_info` (median and fastest seconds of the rounds), and gated as a ratio
to MLflow's own import floor timed back to back (a fresh interpreter importing mlflow and its
SQLAlchemy store, which every run needs to log): more than STARTUP_MAX_FACTOR x the committed ratio
in bench/baselines/startup.json fails, e.g. the training stack imported by a partition-only run.

    pytest bench/test_startup.py -s
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from bench.gates import paired_ratio, run_times

from .conftest import BASELINES, require_raw

COMMAND = [sys.executable, "-m", "gnnbench", "dataset=cora", "train=none"]
MLFLOW_FLOOR = [
    sys.executable,
    "-c",
    "import mlflow, mlflow.store.tracking.sqlalchemy_store",
]
ROUNDS = 3


def run_quietly(command: list[str], cwd: Path) -> None:
    """Run `command` in `cwd`; a failure shows its stderr's tail."""
    completed = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)
    if completed.returncode != 0:
        raise AssertionError(f"{' '.join(command)} failed: {completed.stderr[-2000:]}")


@pytest.fixture(scope="module")
def startup_gates(request):
    """Gates recorded in bench/baselines/startup.json (the conftest's recorder, its own file)."""
    from .conftest import _recorder

    yield from _recorder(request, "startup")


def test_cached_cora_run_startup(benchmark, startup_gates):
    require_raw("planetoid/ind.cora.graph")
    assert BASELINES.is_dir()
    with tempfile.TemporaryDirectory(prefix="gnnbench-startup-") as scratch:
        cwd = Path(scratch)  # its own mlflow.db and Hydra outputs/
        run_quietly(COMMAND, cwd)  # prepares the store and the book (and the MLflow store)
        wall: list[float] = []

        def cached_run() -> None:
            wall.extend(run_times(lambda: run_quietly(COMMAND, cwd), 1))

        benchmark.pedantic(cached_run, rounds=ROUNDS, warmup_rounds=0)
        ratio = paired_ratio(
            lambda: run_quietly(COMMAND, cwd), lambda: run_quietly(MLFLOW_FLOOR, cwd), rounds=2
        )
    benchmark.extra_info.update(
        cached_run_median_s=statistics.median(wall),
        cached_run_fastest_s=min(wall),
        cached_run_s=wall,
        mlflow_floor_times=ratio,
        load_average_1min=os.getloadavg()[0],
    )
    print(f"cached cora train=none run: median {statistics.median(wall):.2f} s of {wall}")
    startup_gates.check({"startup/cora/train=none/cached_run_mlflow_floors": ratio}, "startup")
