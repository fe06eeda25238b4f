"""The MLflow store, opened safely by concurrent processes, and cleared of runs killed processes left.

Two sweeps started at the same moment on a new SQLite file race MLflow's table creation ("table
experiments already exists") and the experiment's creation (a UNIQUE constraint). Both happen here
under an exclusive lock on a file beside the database (`<db>.lock`, with a timeout), and the
experiment is looked up again inside the lock before it is created. A tracking server needs no
lock: it serialises itself. Concurrent writes to SQLite wait on its busy timeout (the `timeout`
of the URI, added where the URI has none), not on retries.

Before anything is written, the store is checked (`check_store`): a server must answer its health
check within seconds, and an existing SQLite file must be an MLflow store. Either failure is one
line naming the URI or the file (TrackingError), and the file is never written to.

Every run gnnbench opens is tagged with the host and pid of the process that keeps it. A process
killed outright (SIGKILL, the OOM killer, a lost node) cannot close its run, which would stay
RUNNING forever; the next gnnbench process on the same host that opens the store ends such runs
KILLED (tag error_type=Killed).
"""

from __future__ import annotations

import logging
import os
import socket
import sqlite3
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gnnbench.errors import TrackingError
from gnnbench.process.atomic import pid_alive

log = logging.getLogger(__name__)

HOST_TAG = "gnnbench.host"
PID_TAG = "gnnbench.pid"
LOCK_TIMEOUT_S = 120.0  # bound on waiting for another process's store initialisation
BUSY_TIMEOUT_S = 60  # SQLite's busy timeout: how long a write waits for a parallel job's
HEALTH_TIMEOUT_S = 5.0  # bound on a tracking server's answer to /health
# MLflow's REST client retries a lost server for minutes by default (7 retries, backoff 2 s);
# a job whose server is gone should fail in seconds. Set unless the user set them.
HTTP_RETRY_DEFAULTS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "30",
}
SQLITE_HEADER = b"SQLite format 3\x00"


def sqlite_path(uri: str) -> Path | None:
    """The database file of a `sqlite:///` URI (None for other stores and in-memory ones)."""
    if not uri.startswith("sqlite:///"):
        return None
    path = uri.removeprefix("sqlite:///").split("?", 1)[0]
    return None if path in ("", ":memory:") else Path(path)


def is_server(uri: str) -> bool:
    return uri.startswith(("http://", "https://"))


def with_busy_timeout(uri: str) -> str:
    """A `sqlite:///` URI with SQLite's busy timeout (`?timeout=`, read by SQLAlchemy's pysqlite
    driver) unless it states one; other URIs as they are."""
    if not uri.startswith("sqlite:") or "timeout=" in uri:
        return uri
    return f"{uri}{'&' if '?' in uri else '?'}timeout={BUSY_TIMEOUT_S}"


def check_store(uri: str) -> None:
    """Fail in one line, before any stage runs, on a store that cannot be used (module docstring)."""
    if is_server(uri):
        for name, value in HTTP_RETRY_DEFAULTS.items():
            os.environ.setdefault(name, value)
        _check_server(uri)
        return
    path = sqlite_path(uri)
    if path is not None and path.is_file() and path.stat().st_size > 0:
        _check_sqlite_store(path)


def _check_server(uri: str) -> None:
    health = f"{uri.rstrip('/')}/health"
    try:
        with urllib.request.urlopen(health, timeout=HEALTH_TIMEOUT_S) as response:
            if response.status == 200:
                return
            problem = f"HTTP {response.status}"
    except (urllib.error.URLError, OSError) as exc:
        problem = str(getattr(exc, "reason", exc))
    raise TrackingError(
        f"tracking.uri={uri}: no MLflow tracking server answers at {health} ({problem})"
    )


def blame_lost_server(uri: str, exc: BaseException) -> None:
    """Raise TrackingError naming the URI if `exc` came while a tracking server is gone."""
    if isinstance(exc, Exception) and is_server(uri) and not server_answers(uri):
        from gnnbench.errors import one_line

        raise TrackingError(
            f"tracking.uri={uri}: the tracking server stopped answering ({one_line(exc)})"
        ) from exc


@contextmanager
def blame_store(uri: str) -> Iterator[None]:
    """Within: an unexpected error while the tracking server is gone is a TrackingError."""
    try:
        yield
    except TrackingError:
        raise
    except Exception as exc:
        blame_lost_server(uri, exc)
        raise


def server_answers(uri: str) -> bool:
    """Whether a tracking server still answers its health check (what a failed call blames)."""
    try:
        _check_server(uri)
    except TrackingError:
        return False
    return True


def _check_sqlite_store(path: Path) -> None:
    """An existing file must be an SQLite database holding MLflow's tables (or none yet)."""
    path = path.resolve()  # named in full: the URI's path is relative to the working directory
    with open(path, "rb") as handle:
        header = handle.read(len(SQLITE_HEADER))
    if header != SQLITE_HEADER:
        raise TrackingError(f"{path}: not an SQLite file, so not an MLflow store (left as it is)")
    try:  # read-only: a foreign database is never migrated into an MLflow one
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S) as db:
            tables = {row[0] for row in db.execute("select name from sqlite_master")}
    except sqlite3.DatabaseError as exc:
        raise TrackingError(f"{path}: unreadable SQLite file ({exc}; left as it is)") from exc
    if tables and "experiments" not in tables:
        raise TrackingError(
            f"{path}: an SQLite database without MLflow's tables (it holds "
            f"{', '.join(sorted(tables)[:5])}); not used as an MLflow store, left as it is"
        )


@contextmanager
def store_lock(uri: str, timeout_s: float | None = None) -> Iterator[None]:
    """Exclusive across processes while held, for a SQLite store; a no-op for other stores."""
    from filelock import FileLock, Timeout

    path = sqlite_path(uri)
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    lock_path = path.with_name(path.name + ".lock")
    timeout_s = LOCK_TIMEOUT_S if timeout_s is None else timeout_s
    try:
        lock = FileLock(lock_path, timeout=timeout_s)
        lock.acquire()
    except Timeout:
        raise TrackingError(
            f"{lock_path}: held by another process for more than {timeout_s:g} s "
            "(a sweep initialising the store, or a hung one: stop it)"
        ) from None
    try:
        yield
    finally:
        lock.release()


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

    uri = with_busy_timeout(uri)
    if mlflow.get_tracking_uri() == uri:
        return
    os.environ["MLFLOW_TRACKING_URI"] = uri  # what set_tracking_uri sets for subprocesses too
    if mlflow.get_tracking_uri() != uri:  # a URI set in-process outranks the variable
        mlflow.set_tracking_uri(uri)


def open_experiment(uri: str, experiment: str):
    """(client, experiment id): the store initialised and the experiment created at most once,
    whatever other processes do at the same moment; runs left RUNNING by dead processes ended."""
    import mlflow

    check_store(uri)
    with store_lock(uri):
        client = mlflow.MlflowClient(tracking_uri=with_busy_timeout(uri))
        found = client.get_experiment_by_name(experiment)  # creates the tables if new
        experiment_id = found.experiment_id if found else client.create_experiment(experiment)
    end_dead_runs(client, experiment_id)
    return client, experiment_id


def end_dead_runs(client, experiment_id: str) -> list[str]:
    """End KILLED the RUNNING runs whose keeping process (this host, recorded pid) is gone."""
    host = socket.gethostname()
    running = client.search_runs(
        [experiment_id],
        filter_string=f"attributes.status = 'RUNNING' and tags.`{HOST_TAG}` = '{host}'",
        max_results=1000,
    )
    ended = []
    for run in running:
        pid = run.data.tags.get(PID_TAG, "")
        if not pid.isdigit() or int(pid) == os.getpid() or pid_alive(int(pid)):
            continue
        # the tags first: a run seen KILLED always says why
        client.set_tag(run.info.run_id, "error_type", "Killed")
        message = f"process {pid} on {host} ended without closing the run (killed)"
        client.set_tag(run.info.run_id, "error", message)
        client.set_terminated(run.info.run_id, "KILLED")
        ended.append(run.info.run_id)
    if ended:
        log.warning("ended %d run(s) left RUNNING by killed processes: KILLED", len(ended))
    return ended
