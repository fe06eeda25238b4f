"""`partitioner.memory_limit_gb`: cap the partition process so that running out of memory is a result.

The in-memory baselines exist to be compared on memory; on a graph they cannot hold, the job must
end FAILED with reason "out of memory" and the peak it reached, not crash the sweep. The cap is
RLIMIT_DATA: the process's private writable memory (heap, anonymous mmaps, what the interpreter,
imports and compiled kernels already hold, about 500 MB), set just before the measured step (a cap
below what is already held is a config error: nothing could run) and inherited by the
processes the step starts (the DistDGL driver). Unlike RLIMIT_AS it does not count shared
libraries mapped read-only, so DistDGL's CUDA build of torch can still load under a small cap.
Allocators then fail in the open (MemoryError, std::bad_alloc, ENOMEM) instead of the kernel's
out-of-memory killer ending the process.
"""

from __future__ import annotations

import resource
import signal
from pathlib import Path

from gnnbench.errors import ConfigError, OutOfMemory

LIMIT = resource.RLIMIT_DATA

# Substrings of the messages with which numpy, torch (C++), METIS wrappers and the dynamic loader
# report a failed allocation, lower-cased.
_OUT_OF_MEMORY_MESSAGES = (
    "bad_alloc",
    "can't allocate memory",
    "cannot allocate memory",
    "out of memory",
    "metis_error_memory",
    "failed to map segment",
    "unable to allocate",
)


def memory_limit_bytes(value: float | None) -> int | None:
    """`partitioner.memory_limit_gb` in bytes, or None; a non-positive or non-numeric value is a
    config error."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(f"partitioner.memory_limit_gb: expected a positive number, got {value!r}")
    return int(value * 2**30)


def private_bytes() -> int | None:
    """The private memory this process holds now, as RLIMIT_DATA counts it (None off Linux)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmData:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def apply_memory_limit(limit_bytes: int | None) -> None:
    """Cap this process (and the processes it starts) at `limit_bytes` of private memory."""
    if limit_bytes is None:
        return
    held = private_bytes()
    if held is not None and limit_bytes <= held:  # nothing could run, not even the meter
        raise ConfigError(
            f"partitioner.memory_limit_gb={limit_bytes / 2**30:g}: below the {held / 2**20:.0f} MB "
            "the partition process holds before the partitioner starts"
        )
    _, hard = resource.getrlimit(LIMIT)  # the soft limit only: `uncapped` can lift it again
    resource.setrlimit(LIMIT, (limit_bytes, hard))


def uncapped() -> None:
    """For a helper process (the flamegraph renderer) that must not count against the cap."""
    _, hard = resource.getrlimit(LIMIT)
    resource.setrlimit(LIMIT, (hard, hard))


def current_memory_limit() -> int | None:
    """The cap this process runs under (bytes), or None."""
    soft, _ = resource.getrlimit(LIMIT)
    return None if soft == resource.RLIM_INFINITY else soft


# How a thread that cannot start reports it (CPython, and memray's tracker thread): under the cap
# that means no room for its stack; elsewhere EAGAIN has other causes, so only capped runs count it.
_THREAD_START_MESSAGES = ("can't start new thread", "resource temporarily unavailable")


def is_out_of_memory(exc: BaseException, capped: bool = False) -> bool:
    """Whether `exc`, or an error it was raised from, is a failed allocation. Wrappers often
    hide the reason: torch's library loader raises "Could not load this library" from the
    dynamic loader's "failed to map segment" when the cap leaves no room for the library."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, MemoryError | OutOfMemory):
            return True
        text = f"{type(exc).__name__}: {exc}".lower()
        if any(message in text for message in _OUT_OF_MEMORY_MESSAGES):
            return True
        thread_start = isinstance(exc, RuntimeError) and any(
            m in text for m in _THREAD_START_MESSAGES
        )
        if capped and thread_start:
            return True
        # the explicit cause, or the error being handled unless `raise ... from None` hid it
        exc = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    return False


def peak_of(tracker_file: Path) -> float | None:
    """The heap peak (MB) a memray capture reached, also when the tracked work failed."""
    try:
        import memray

        return memray.FileReader(tracker_file).metadata.peak_memory / 2**20
    except Exception:  # an unreadable capture leaves the peak unknown, not the error hidden
        return None


def out_of_memory(
    name: str, limit_bytes: int | None, peak_mb: float | None, rss_mb: float
) -> OutOfMemory:
    """The error a run records: which partitioner, what it reached, under what cap."""
    reached = f"heap peak {peak_mb:.0f} MB, " if peak_mb is not None else ""
    cap = f" under partitioner.memory_limit_gb={limit_bytes / 2**30:g}" if limit_bytes else ""
    metrics = {"partition_rss_mb": rss_mb}
    if peak_mb is not None:
        metrics["partition_peak_mb"] = peak_mb
    return OutOfMemory(
        f"out of memory: {name} reached {reached}max RSS {rss_mb:.0f} MB{cap}", metrics
    )


def killed_by_signal(returncode: int) -> str | None:
    """'SIGKILL' etc. when a child process ended by a signal (the kernel's OOM killer sends SIGKILL)."""
    if returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"
