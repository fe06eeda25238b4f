"""`gnnbench server`: an MLflow tracking server for runs from several processes or machines.

    gnnbench server --store /shared/mlflow --host 0.0.0.0 --port 5000
    gnnbench -m ... tracking.uri=http://<this host>:5000          # from any machine

One SQLite backend store (`<store>/mlflow.db`) and the artifacts under `<store>/mlartifacts`,
proxied by the server (`--artifacts-destination`), so clients need no access to its disk. The
default host is 127.0.0.1: other machines reach it only where you bind another address.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

DEFAULT_PORT = 5000


def server_command(store: Path, host: str = "127.0.0.1", port: int = DEFAULT_PORT) -> list[str]:
    """The `mlflow server` command line for a store directory."""
    store = Path(store).resolve()
    return [
        sys.executable, "-m", "mlflow", "server",
        "--backend-store-uri", f"sqlite:///{store / 'mlflow.db'}",
        "--artifacts-destination", str(store / "mlartifacts"),
        "--host", host, "--port", str(port),
        "--workers", "1",  # one process writes the SQLite file
    ]  # fmt: skip


def server_env() -> dict[str, str]:
    """The server's environment: no job runner (it forks consumers gnnbench never uses)."""
    return {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", **os.environ}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="gnnbench server", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--store",
        type=Path,
        default=Path("mlflow-server"),
        help="directory of the backend store and the artifacts (created)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)  # fmt: skip
    args = parser.parse_args(argv)
    args.store.mkdir(parents=True, exist_ok=True)
    command = server_command(args.store, args.host, args.port)
    print(f"gnnbench: tracking.uri=http://{args.host}:{args.port} ({args.store.resolve()})",
          file=sys.stderr, flush=True)  # fmt: skip
    os.execve(command[0], command, server_env())  # the server replaces this process
    return 0  # not reached
