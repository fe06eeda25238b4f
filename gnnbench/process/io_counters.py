"""Bytes a process has read from storage: Linux's `read_bytes` in /proc/<pid>/io, the reads that
reached the block device (page faults of mapped files included), not those the page cache served.
It covers every thread of the process since it started; a forked child starts its own at zero.
Where the platform keeps no such counter (or forbids reading it) the figure is None: absent, never
zero."""

from __future__ import annotations

import os
from pathlib import Path


def storage_read_bytes(pid: int | str = "self") -> int | None:
    """The process's `read_bytes` so far, or None where it cannot be read."""
    try:
        text = Path(f"/proc/{pid}/io").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name == "read_bytes":
            return int(value)
    return None


def mb_between(before: int | None, after: int | None) -> float:
    """MiB read between two readings of a counter; NaN where either is absent."""
    if before is None or after is None:
        return float("nan")
    return (after - before) / 2**20


def drop_from_page_cache(path: Path) -> None:
    """Write the file's dirty pages out and ask the kernel to drop its cached ones
    (POSIX_FADV_DONTNEED: advice, a dirty page would stay), so the next read reaches the disk."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
        os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(descriptor)
