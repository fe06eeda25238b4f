"""The one way the tests run gnnbench's command line: `python -m gnnbench ...` (or the same under
torchrun) in a subprocess, in a given directory, inheriting the test's environment
(GNNBENCH_HOME and GNNBENCH_RAW_DIR as the `gnnbench_home` fixture set them) plus any extra
variables. `gnnbench` waits for it with a timeout; `start` hands back the running process for the
tests that watch, signal or kill it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

TIMEOUT_S = 300  # a whole small job (data, partition, a few epochs) on the shared 2-core machine


def command(*args: str, torchrun: Sequence[str] | None = None) -> list[str]:
    """argv of `python -m gnnbench *args`; with `torchrun` (its own options, e.g.
    ["--nproc_per_node=2"]), of the venv's torchrun launching the same module."""
    if torchrun is None:
        return [sys.executable, "-m", "gnnbench", *args]
    launcher = Path(sys.executable).with_name("torchrun")
    return [str(launcher), *torchrun, "-m", "gnnbench", *args]


def environment(
    extra: Mapping[str, str] | None = None, cwd: Path | None = None, torchrun=None
) -> dict[str, str]:
    """The test process's environment (read now, after any monkeypatch) plus `extra`; under
    torchrun with TMPDIR beside `cwd` (in pytest's folder for the test), where its agent writes
    the log folder it never removes (torchelastic_*), not in /tmp."""
    scratch = {}
    if torchrun is not None and cwd is not None:
        folder = Path(cwd).with_name(f"{Path(cwd).name}-torchrun-tmp")
        folder.mkdir(exist_ok=True)
        scratch = {"TMPDIR": str(folder)}
    return {**os.environ, **scratch, **(extra or {})}


def gnnbench(
    cwd: Path,
    *args: str,
    timeout: float = TIMEOUT_S,
    env: Mapping[str, str] | None = None,
    torchrun: Sequence[str] | None = None,
) -> subprocess.CompletedProcess:
    """Run the command line in `cwd` to its end; stdout and stderr captured as text."""
    return subprocess.run(
        command(*args, torchrun=torchrun),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=environment(env, cwd, torchrun),
    )


def start(
    cwd: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    torchrun: Sequence[str] | None = None,
    **popen: object,
) -> subprocess.Popen:
    """Start the command line in `cwd` and return at once; `popen` are Popen's own keywords
    (stdout, stderr, text, start_new_session, ...)."""
    return subprocess.Popen(
        command(*args, torchrun=torchrun), cwd=cwd, env=environment(env, cwd, torchrun), **popen
    )
