"""This machine's storage read rates on a given filesystem, measured cold: one sequential pass and
random 4 KiB reads of a probe file whose pages the page cache has dropped. They are the limits an
out-of-core epoch is judged against (docs/disk_limits.md, scripts/disk_limits.py): a sweep over a
feature file cannot beat the sequential rate, a gather of scattered rows pays the random one.

The probe is written under a temporary name in the folder, checked against free disk first, and
removed whatever happens (a killed run's probe is swept by the next, as every temporary is).
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gnnbench.errors import GnnbenchError
from gnnbench.process.atomic import remove_stale_in, temporary_name
from gnnbench.process.io_counters import drop_from_page_cache

BLOCK = 8 << 20  # bytes per sequential read
PAGE = 4096  # bytes per random read
FREE_MARGIN = 1 << 30  # left free beside the probe


@dataclass(frozen=True)
class DiskRates:
    """Cold read rates of one probe file."""

    folder: str
    probe_mb: float
    sequential_mb_s: float  # one pass, BLOCK at a time
    random_reads_s: float  # 4 KiB reads at random page offsets, one at a time (one thread)

    @property
    def random_mb_s(self) -> float:
        return self.random_reads_s * PAGE / 2**20


def _write_probe(path: Path, size: int) -> None:
    chunk = np.random.default_rng(0).integers(0, 256, BLOCK, dtype=np.uint8).tobytes()
    with open(path, "wb") as handle:
        for _ in range(size // BLOCK):
            handle.write(chunk)
        os.fsync(handle.fileno())


def sequential_mb_s(path: Path) -> float:
    """MiB/s of one cold pass over the file."""
    drop_from_page_cache(path)
    started, total = time.perf_counter(), 0
    with open(path, "rb", buffering=0) as handle:
        while chunk := handle.read(BLOCK):
            total += len(chunk)
    return total / 2**20 / (time.perf_counter() - started)


def random_reads_s(path: Path, reads: int, seed: int = 0) -> float:
    """Cold 4 KiB reads per second at random page offsets (readahead off: each read is its own)."""
    drop_from_page_cache(path)
    pages = path.stat().st_size // PAGE
    offsets = np.random.default_rng(seed).choice(pages, size=min(reads, pages), replace=False)
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_RANDOM)
        started = time.perf_counter()
        for page in offsets.tolist():
            os.pread(descriptor, PAGE, page * PAGE)
        return len(offsets) / (time.perf_counter() - started)
    finally:
        os.close(descriptor)


def measure(folder: Path, probe_mb: int, reads: int) -> DiskRates:
    """Write a probe of `probe_mb` MiB in `folder`, read it cold both ways, remove it."""
    if not hasattr(os, "posix_fadvise"):
        raise GnnbenchError("disk rates: this platform cannot drop a file from the page cache")
    folder.mkdir(parents=True, exist_ok=True)
    remove_stale_in(folder)
    size = max(1, probe_mb * 2**20 // BLOCK) * BLOCK
    free = shutil.disk_usage(folder).free
    if free < size + FREE_MARGIN:
        raise GnnbenchError(
            f"{folder}: {free / 2**30:.1f} GiB free, the probe needs {size / 2**30:.1f} GiB "
            f"plus {FREE_MARGIN / 2**30:.0f} GiB to spare (lower --probe-mb)"
        )
    probe = temporary_name(folder / "disk-probe")
    try:
        _write_probe(probe, size)
        sequential = sequential_mb_s(probe)
        return DiskRates(str(folder), size / 2**20, sequential, random_reads_s(probe, reads))
    finally:
        probe.unlink(missing_ok=True)
