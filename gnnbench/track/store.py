"""The MLflow store, opened safely by concurrent processes, and cleared of runs killed processes left.

Two sweeps started at the same moment on a new SQLite file race MLflow's table creation ("table
experiments already exists") and the experiment's creation (a UNIQUE constraint). Both happen here
under an exclusive lock on a file beside the database (`<db>.lock`), and the experiment is looked up
again inside the lock before it is created. A tracking server needs no lock: it serialises itself.

Every run gnnbench opens is tagged with the host and pid of the process that keeps it. A process
killed outright (SIGKILL, the OOM killer, a lost node) cannot close its run, which would stay
RUNNING forever; the next gnnbench process on the same host that opens the store ends such runs
KILLED (tag error_type=Killed).
"""

from __future__ import annotations

import fcntl
import logging
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gnnbench.atomic import pid_alive
from gnnbench.track.mlflow_run import retrying

log = logging.getLogger(__name__)

HOST_TAG = "gnnbench.host"
PID_TAG = "gnnbench.pid"


def sqlite_path(uri: str) -> Path | None:
    """The database file of a `sqlite:///` URI (None for other stores and in-memory ones)."""
    if not uri.startswith("sqlite:///"):
        return None
    path = uri.removeprefix("sqlite:///").split("?", 1)[0]
    return None if path in ("", ":memory:") else Path(path)


@contextmanager
def store_lock(uri: str) -> Iterator[None]:
    """Exclusive across processes while held, for a SQLite store; a no-op for other stores."""
    path = sqlite_path(uri)
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def process_tags() -> dict[str, str]:
    """Who keeps a run: what `end_dead_runs` checks."""
    return {HOST_TAG: socket.gethostname(), PID_TAG: str(os.getpid())}


def import_tracking(uri: str) -> None:
    """Import MLflow and, for a database URI, its SQLAlchemy store: what opening a run imports
    anyway (1.5 s of start-up), done up front while the garbage collector is paused."""
    import mlflow  # noqa: F401

    if uri.startswith(("sqlite:", "postgresql", "mysql", "mssql")):
        import mlflow.store.tracking.sqlalchemy_store  # noqa: F401


def use_tracking_uri(uri: str) -> None:
    """Point MLflow's fluent API (mlflow.start_run, log_*) at `uri`.

    While nothing in this process called mlflow.set_tracking_uri, MLflow reads the URI from
    MLFLOW_TRACKING_URI, so that is set instead: set_tracking_uri also resets the tracer provider,
    which imports the OpenTelemetry SDK (0.15 s of a run's start) for traces gnnbench never writes.
    """
    import mlflow
    from mlflow.tracking._tracking_service import utils as tracking_utils

    if mlflow.get_tracking_uri() == uri:
        return
    if getattr(tracking_utils, "_tracking_uri", "unknown") is None:  # no URI set in-process
        os.environ["MLFLOW_TRACKING_URI"] = uri  # what set_tracking_uri sets for subprocesses too
    else:
        mlflow.set_tracking_uri(uri)


def open_experiment(uri: str, experiment: str):
    """(client, experiment id): the store initialised and the experiment created at most once,
    whatever other processes do at the same moment; runs left RUNNING by dead processes ended."""
    import mlflow

    with store_lock(uri):
        client = mlflow.MlflowClient(tracking_uri=uri)
        found = retrying(client.get_experiment_by_name, experiment)  # creates the tables if new
        experiment_id = (
            found.experiment_id if found else retrying(client.create_experiment, experiment)
        )
    end_dead_runs(client, experiment_id)
    return client, experiment_id


def end_dead_runs(client, experiment_id: str) -> list[str]:
    """End KILLED the RUNNING runs whose keeping process (this host, recorded pid) is gone."""
    host = socket.gethostname()
    running = retrying(
        client.search_runs,
        [experiment_id],
        filter_string=f"attributes.status = 'RUNNING' and tags.`{HOST_TAG}` = '{host}'",
        max_results=1000,
    )
    ended = []
    for run in running:
        pid = run.data.tags.get(PID_TAG, "")
        if not pid.isdigit() or int(pid) == os.getpid() or pid_alive(int(pid)):
            continue
        retrying(
            client.set_tag, run.info.run_id, "error_type", "Killed"
        )  # the tag first: a run seen KILLED always says why
        retrying(
            client.set_tag,
            run.info.run_id,
            "error",
            f"process {pid} on {host} ended without closing the run (killed)",
        )
        retrying(client.set_terminated, run.info.run_id, "KILLED")
        ended.append(run.info.run_id)
    if ended:
        log.warning("ended %d run(s) left RUNNING by killed processes: KILLED", len(ended))
    return ended
