"""Process lifecycle: helper processes die with their parent, and SIGTERM/SIGINT end a run cleanly.

A SIGKILLed parent cannot clean up, so every process gnnbench starts (training ranks, sampler
processes, the partition subprocess, the DistDGL driver) asks the kernel for SIGKILL when its
parent goes (Linux prctl PR_SET_PDEATHSIG). SIGTERM and SIGINT in the main process raise
`Interrupted`, so `finally` blocks stop the workers and the MLflow run ends KILLED.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from gnnbench.errors import GnnbenchError, Interrupted, Killed, OutOfMemory

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_prctl = None


def _libc_prctl():
    """libc's prctl, resolved once in the parent: a child between fork and exec must not dlopen."""
    global _prctl
    if _prctl is None and sys.platform.startswith("linux"):
        _prctl = ctypes.CDLL(None, use_errno=True).prctl
    return _prctl


def die_with_parent(parent_pid: int, sig: int = signal.SIGKILL) -> None:
    """Have the kernel send `sig` to this process when its parent exits (Linux; elsewhere no-op).

    The kernel fires on the exit of the parent *thread* that started this process, so start helper
    processes from the main thread. A parent that died before the call is caught by comparing
    os.getppid() with `parent_pid`: the process then ends itself at once.
    """
    prctl = _libc_prctl()
    if prctl is None:
        return
    if prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent_pid:  # the parent is already gone: nobody is left to stop us
        os.kill(os.getpid(), sig)


def tied_to_parent(sig: int = signal.SIGKILL) -> Callable[[], None]:
    """A `preexec_fn` for subprocess: the child gets `sig` (SIGKILL) when this process exits;
    SIGTERM for a child that must stop children of its own on the way out."""
    parent_pid = os.getpid()
    _libc_prctl()  # resolve in the parent, before fork

    def tie() -> None:
        die_with_parent(parent_pid, sig)

    return tie


def handle_interrupts() -> None:
    """In the main process: SIGTERM and SIGINT raise `Interrupted` (once; repeats are ignored
    while the first one's cleanup runs, which is bounded: workers get 5 s before SIGKILL)."""
    interrupted = False

    def raise_interrupted(signum: int, _frame) -> None:
        nonlocal interrupted
        if interrupted:
            return
        interrupted = True
        raise Interrupted(signum)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, raise_interrupted)


def ignore_interrupts_from_terminal() -> None:
    """In a worker: Ctrl-C reaches the whole process group, but the parent decides and stops us."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def oom_kill_count() -> int | None:
    """How many processes the kernel's OOM killer ended in this process's memory cgroup so far
    (cgroup v2 memory.events or v1 memory.oom_control), or None when the counter is unreadable."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    candidates = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            candidates.append(Path("/sys/fs/cgroup") / path.lstrip("/") / "memory.events")
        elif "memory" in controllers.split(","):
            memory_root = Path("/sys/fs/cgroup/memory") / path.lstrip("/")
            candidates.append(memory_root / "memory.oom_control")
    for candidate in candidates:
        try:
            for entry in candidate.read_text().splitlines():
                key, _, value = entry.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            continue
    return None


def signal_death(
    what: str, returncode: int, capped: bool, oom_kills_before: int | None
) -> GnnbenchError | None:
    """The error for a child process ended by a signal (None if no signal ended it).

    OutOfMemory only with evidence: the cgroup's OOM-kill counter (`oom_kill_count`, read before
    the child started) rose while it ran, or the child ran under partitioner.memory_limit_gb and
    died of another signal than SIGKILL (a cap fails allocations: a library that cannot handle
    that aborts). A cap never sends SIGKILL, so under a cap a SIGKILL without the counter's rise
    is someone else's: Killed (a test that killed the oldest partition process of its session
    once took an unrelated 1 B-edge run for its own, which was then reported out of memory).
    The counter is per cgroup, so another process OOM-killed there meanwhile would be taken for
    this one; where it is unreadable (and the kernel log is not readable unprivileged), a SIGKILL
    is reported as Killed. Otherwise Killed, naming the signal.
    """
    from gnnbench.process.memory_limit import killed_by_signal

    name = killed_by_signal(returncode)
    if name is None:
        return None
    after = oom_kill_count()
    oom_killed = None not in (oom_kills_before, after) and after > oom_kills_before
    if capped and name != "SIGKILL":
        return OutOfMemory(f"out of memory: {what} was killed by {name} under its memory cap")
    if oom_killed:
        return OutOfMemory(
            f"out of memory: {what} was killed by {name} (the kernel's out-of-memory killer "
            "acted in this cgroup meanwhile)"
        )
    return Killed(f"{what} was killed by {name}")
