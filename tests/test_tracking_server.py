"""Past one machine: sweeps logged to an MLflow tracking server (`gnnbench server`), jobs launched
as separate processes by submitit (as on SLURM), and a store that is gone or is not a store.

Every server runs on 127.0.0.1 with its store in the test's temporary directory, and is stopped
when its test ends (tests/helpers/tracking_server.py).
"""

from __future__ import annotations

import csv
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.cli import gnnbench, start
from helpers.datasets import CORA, requires_dataset
from helpers.tracking_server import TrackingServer, free_port

from gnnbench.errors import TrackingError

# 4 jobs; the seed axis makes run names differ only where the sweep names it (cora-hash-p2-seed=1)
SWEEP = ("-m", "dataset=cora", "partitioner=hash,spring", "p=2", "seed=0,1", "train=none")
LAUNCHERS = {
    "joblib": ("hydra/launcher=joblib", "hydra.launcher.n_jobs=2"),
    "submitit_local": ("hydra/launcher=submitit_local", "hydra.launcher.timeout_min=5"),
}
PROCESSES = {"joblib": 2, "submitit_local": 4}  # job processes: 2 loky workers, one per job
MACHINE_TAGS = ("gnnbench.host", "machine.cpu", "machine.cores", "machine.ram_gb", "machine.gpu",
                "machine.gpu_count", "version.torch", "version.cuda", "version.nccl",
                "version.numba", "version.mlflow", "version.gnnbench",
                "mlflow.source.git.commit")  # fmt: skip


def sweep_runs(uri: str) -> tuple[list, list]:
    """(parents, job runs) of the gnnbench experiment in the store at `uri`."""
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("gnnbench")
    found = client.search_runs([experiment.experiment_id]) if experiment else []
    roles = [run.data.tags.get("gnnbench.role") for run in found]
    return (
        [run for run, role in zip(found, roles, strict=True) if role == "parent"],
        [run for run, role in zip(found, roles, strict=True) if role == "job"],
    )


def end_line(completed: subprocess.CompletedProcess) -> str:
    (line,) = [l for l in completed.stderr.splitlines() if l.startswith("gnnbench: sweep ")]  # noqa: E741
    return line


def report_rows(cwd: Path, line: str) -> list[dict]:
    report = Path(line.rsplit("report: ", 1)[1])
    with open((cwd / report).with_name("report.csv"), newline="") as handle:
        return list(csv.DictReader(handle))


def check_complete_sweep(
    cwd: Path, uri: str, completed: subprocess.CompletedProcess, processes: int
) -> list:
    """4 FINISHED children under one parent, tagged with its sweep, named apart, each saying
    where it ran, logged from `processes` processes; the report has all 4. Returns them."""
    assert completed.returncode == 0, completed.stderr[-3000:]
    (parent,), jobs = sweep_runs(uri)
    assert parent.info.status == "FINISHED" and len(jobs) == 4, completed.stderr[-3000:]
    assert {run.info.status for run in jobs} == {"FINISHED"}
    assert {run.data.tags["mlflow.parentRunId"] for run in jobs} == {parent.info.run_id}
    assert {run.data.tags["sweep_id"] for run in jobs} == {parent.data.tags["sweep_id"]}
    names = sorted(run.info.run_name for run in jobs)
    assert names == [f"cora-{p}-p2-seed={s}" for p in ("hash", "spring") for s in (0, 1)]
    for run in jobs:
        missing = [tag for tag in MACHINE_TAGS if not run.data.tags.get(tag)]
        assert not missing, (run.info.run_name, missing)
    assert len({run.data.tags["gnnbench.pid"] for run in jobs}) == processes
    rows = report_rows(cwd, end_line(completed))
    assert sorted((r["partitioner.name"], r["seed"], r["status"]) for r in rows) == [
        (p, s, "FINISHED") for p in ("hash", "spring") for s in ("0", "1")
    ]
    return jobs


def sweep_on_server(tmp_path: Path, launcher: str) -> None:
    with TrackingServer(tmp_path / "store") as server:
        uri = f"tracking.uri={server.url}"
        first = gnnbench(tmp_path, *SWEEP, *LAUNCHERS[launcher], uri, timeout=300)
        jobs = check_complete_sweep(tmp_path, server.url, first, PROCESSES[launcher])
        again = gnnbench(tmp_path, *SWEEP, *LAUNCHERS[launcher], uri, timeout=300)
        assert again.returncode == 0, again.stderr[-3000:]
        assert ": 0 finished, 4 skipped (already FINISHED: " in end_line(again)
        parents, rerun = sweep_runs(server.url)
        assert len(parents) == 1 and len(rerun) == len(jobs)  # resume added no run


@pytest.mark.slow
@requires_dataset(CORA)
def test_joblib_sweep_on_a_tracking_server(tmp_path, gnnbench_home):
    sweep_on_server(tmp_path, "joblib")


@pytest.mark.slow
@requires_dataset(CORA)
def test_submitit_sweep_on_a_tracking_server(tmp_path, gnnbench_home):
    """submitit_local runs each job as its own process, as SLURM would: the job learns its sweep
    from its config (tracking.sweep), not from the driver's environment."""
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason="pip install -e '.[slurm]'")
    sweep_on_server(tmp_path, "submitit_local")


@pytest.mark.fault("tracking: the server killed mid-sweep")
@pytest.mark.slow
@requires_dataset(CORA)
def test_server_killed_mid_sweep_then_resume(tmp_path, gnnbench_home):
    """The server dies after the first job: the other jobs fail in one line naming the URI; a
    resume with the server back completes the sweep with no job lost or run twice."""
    store = tmp_path / "store"
    with TrackingServer(store) as server:
        sweep = start(tmp_path, *SWEEP, f"tracking.uri={server.url}", stdout=subprocess.PIPE,
                      text=True, stderr=subprocess.STDOUT)  # fmt: skip
        lines = []  # Hydra's job log (on stdout) and gnnbench's own lines (stderr)
        try:
            for line in sweep.stdout:
                lines.append(line)
                if "job 2 of 4" in line:
                    server.kill()
            sweep.wait(timeout=120)
        finally:
            if sweep.poll() is None:
                sweep.kill()
    stderr = "".join(lines)
    assert sweep.returncode == 1, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    failed = [line for line in lines if "job failed" in line]
    assert len(failed) == 3 and all(f"tracking.uri={server.url}:" in line for line in failed)
    # the three jobs after the kill could not even be recorded FAILED: they are counted all the
    # same, beside the parent that could not be closed
    assert "gnnbench: 4 job(s) failed:" in stderr and "not closed" in stderr
    assert stderr.count("(not recorded in MLflow: ") == 3

    with TrackingServer(store) as back:  # the same store, another port: still the same sweep
        resumed = gnnbench(tmp_path, *SWEEP, f"tracking.uri={back.url}", timeout=300)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert ": 3 finished, 1 skipped" in end_line(resumed)
        (parent,), jobs = sweep_runs(back.url)
        finished = [run.data.tags["run_key"] for run in jobs if run.info.status == "FINISHED"]
        assert len(finished) == len(set(finished)) == 4  # none lost, none twice
        assert parent.info.status == "FINISHED"
        assert len(report_rows(tmp_path, end_line(resumed))) == 4


@pytest.mark.alone
@pytest.mark.fault("tracking: no server at tracking.uri")
@pytest.mark.parametrize("sweep", [False, True], ids=["run", "sweep"])
def test_unreachable_server_fails_in_one_line(tmp_path, gnnbench_home, sweep):
    """Nothing listens at tracking.uri: a run, or a sweep, fails within 15 s in one line naming
    the URI (a health check before any stage), exit 2."""
    uri = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    args = ("-m", "p=2,4") if sweep else ()
    started = time.monotonic()
    completed = gnnbench(tmp_path, *args, "train=none", f"tracking.uri={uri}", timeout=60)
    elapsed = time.monotonic() - started
    lines = completed.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("gnnbench: error: ")]
    assert completed.returncode == 2 and len(errors) == 1, completed.stderr[-3000:]
    assert f"tracking.uri={uri}: no MLflow tracking server answers" in errors[0]
    assert "Traceback" not in completed.stderr
    assert elapsed < 15, elapsed
    assert not (gnnbench_home / "graphs").exists()  # no stage ran


def foreign_sqlite(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("create table users (name text)")


@pytest.mark.fault("tracking: mlflow.db is not an MLflow store")
@pytest.mark.parametrize(
    "write, expected",
    [
        (lambda path: path.write_text("my notes, not a database\n"), "not an SQLite file"),
        (foreign_sqlite, "an SQLite database without MLflow's tables"),
    ],
    ids=["text", "foreign-sqlite"],
)
def test_a_file_that_is_not_a_store_is_named_and_kept(tmp_path, gnnbench_home, write, expected):
    """mlflow.db is a text file or another program's SQLite database: a run and the report end
    in one line naming it, exit 2, and the file is left byte for byte as it was."""
    db = tmp_path / "mlflow.db"
    write(db)
    before = db.read_bytes()
    completed = gnnbench(tmp_path, "train=none", timeout=120)
    lines = completed.stderr.strip().splitlines()
    assert completed.returncode == 2 and len(lines) == 1, completed.stderr[-3000:]
    assert lines[0].startswith(f"gnnbench: error: {db}: {expected}")
    report = gnnbench(tmp_path, "report", timeout=120)  # the report reads it: the same line
    assert report.returncode == 2, report.stderr[-3000:]
    assert report.stderr.strip() == lines[0].replace("gnnbench:", "gnnbench report:", 1)
    assert db.read_bytes() == before  # never overwritten


def test_lock_timeout_is_one_line(tmp_path):
    """Another process holding the store's initialisation lock too long: one line naming it."""
    from filelock import FileLock

    from gnnbench.track.store import store_lock

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import filelock, sys, time\n"
         "with filelock.FileLock(sys.argv[1]):\n    print('held', flush=True); time.sleep(60)",
         str(tmp_path / "mlflow.db.lock")],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        with pytest.raises(TrackingError) as caught, store_lock(uri, timeout_s=0.5):
            pass
        assert time.monotonic() - started < 5
    finally:
        holder.kill()
        holder.wait()
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{tmp_path / 'mlflow.db.lock'}: held by another process")
    with FileLock(tmp_path / "mlflow.db.lock", timeout=5):  # released with its holder
        pass


def test_report_groups_a_sweep_by_machine(small_sweep_store):
    """A sweep whose jobs ran on two hosts: `machine` is the report's first axis, rows grouped."""
    import mlflow

    from gnnbench.track.report.query import load_sweep

    sweep = small_sweep_store
    client = mlflow.MlflowClient(tracking_uri=sweep.tracking_uri)
    single = load_sweep(sweep.tracking_uri, sweep.experiment, sweep.sweep_id)
    assert "machine" not in single.axes  # one host (here: none recorded) is no axis
    for row in single.rows:  # p=2 and p=8 on one node, p=4 on another
        host = "node-a" if row["p"] in ("2", "8") else "node-b"
        client.set_tag(row["run_id"], "gnnbench.host", host)
    grouped = load_sweep(sweep.tracking_uri, sweep.experiment, sweep.sweep_id)
    assert grouped.axes[0] == "machine"
    hosts = [row["machine"] for row in grouped.rows]
    assert hosts == sorted(hosts) and set(hosts) == {"node-a", "node-b"}


@pytest.mark.fault("sweep: a failing job among submitit jobs")
@pytest.mark.slow
@requires_dataset(CORA)
def test_submitit_sweep_isolates_a_failing_job(tmp_path, gnnbench_home):
    """Under submitit_local (a process per job, as on SLURM) a failing job is recorded FAILED
    under the parent and listed at the end (exit 1); the other job FINISHES."""
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason="pip install -e '.[slurm]'")
    completed = gnnbench(
        tmp_path, "-m", "dataset=cora", "partitioner=hash", "p=2,100000", "train=none",
        *LAUNCHERS["submitit_local"], timeout=300,
    )  # fmt: skip
    assert completed.returncode == 1, completed.stderr[-3000:]
    assert "gnnbench: 1 job(s) failed:" in completed.stderr
    assert "cora-hash-p100000: ConfigError: p=100000 is larger" in completed.stderr
    (parent,), jobs = sweep_runs(f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert parent.info.status == "FAILED"
    assert sorted(run.info.status for run in jobs) == ["FAILED", "FINISHED"]
    assert {run.data.tags["mlflow.parentRunId"] for run in jobs} == {parent.info.run_id}
    rows = report_rows(tmp_path, end_line(completed))
    assert sorted((row["p"], row["status"]) for row in rows) == [
        ("100000", "FAILED"), ("2", "FINISHED")
    ]  # fmt: skip
