"""`gnnbench server` for tests: on 127.0.0.1 and a free port, its store in a temporary directory,
in its own process group, always stopped (and killable mid-test: `kill`)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from gnnbench.process import lifecycle
from helpers.cli import start

START_S = 60  # bound on waiting for the server to answer /health


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def tail(path: Path, chars: int = 3000) -> str:
    return path.read_text(errors="replace")[-chars:] if path.exists() else ""


class TrackingServer:
    """`python -m gnnbench server --store <store>`: the command a user runs."""

    def __init__(self, store: Path, port: int | None = None):
        self.store = Path(store)
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = self.store.parent / f"{self.store.name}-server-{self.port}.log"
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> TrackingServer:
        where = ["--store", str(self.store), "--host", "127.0.0.1", "--port", str(self.port)]
        with self.log.open("wb") as log:
            self.proc = start(
                self.store.parent,
                "server",
                *where,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # uvicorn's worker goes down with the group
                # and the server with this process, when a killed test run skips stop(): SIGTERM,
                # which mlflow's server passes on to its uvicorn worker (SIGKILL would orphan it)
                preexec_fn=lifecycle.tied_to_parent(signal.SIGTERM),
            )
        try:
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"tracking server exited {self.proc.returncode}:\n{tail(self.log)}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.5)
        pytest.fail(f"tracking server not healthy after {START_S} s:\n{tail(self.log)}")

    def kill(self) -> None:
        """The server gone at once, as a crashed or lost machine (SIGKILL to its group)."""
        self.stop(graceful=False)

    def stop(self, graceful: bool = True) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        steps = ((signal.SIGTERM, 10), (signal.SIGKILL, 5)) if graceful else ((signal.SIGKILL, 5),)
        for sig, wait_s in steps:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(timeout=wait_s)
                return
            except subprocess.TimeoutExpired:
                continue
