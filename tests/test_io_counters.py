"""Storage reads as the training meter counts them (gnnbench/process/io_counters.py): reads that
reach the disk count, page-cache hits do not, and a platform without the counter reads None."""

from __future__ import annotations

import mmap
import os

import numpy as np
import pytest

from gnnbench.process.io_counters import drop_from_page_cache, mb_between, storage_read_bytes

FILE_MB = 16


def _uncached_file(path) -> None:
    """A file on disk whose pages the page cache has dropped."""
    path.write_bytes(os.urandom(FILE_MB << 20))
    drop_from_page_cache(path)


@pytest.mark.skipif(storage_read_bytes() is None, reason="no /proc/self/io on this platform")
@pytest.mark.skipif(not hasattr(os, "posix_fadvise"), reason="cannot drop a file from the cache")
def test_mapped_reads_past_the_cache_count_and_cached_ones_do_not(tmp_path):
    path = tmp_path / "features.bin"
    _uncached_file(path)
    before = storage_read_bytes()
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as m:
        checksum = int(np.frombuffer(m, dtype=np.uint8).sum())  # page faults, as a window's
    cold = mb_between(before, storage_read_bytes())
    if cold == 0:
        pytest.skip(f"{tmp_path}: a filesystem whose reads reach no block device (tmpfs?)")
    assert FILE_MB * 0.9 <= cold <= FILE_MB * 4, f"{cold:.1f} MiB counted for {FILE_MB} MiB"
    before = storage_read_bytes()
    assert int(np.frombuffer(path.read_bytes(), dtype=np.uint8).sum()) == checksum
    assert mb_between(before, storage_read_bytes()) < 1, "a read the page cache served counted"


def test_an_absent_counter_is_nan_never_zero():
    assert np.isnan(mb_between(None, 5)) and np.isnan(mb_between(5, None))
    assert mb_between(0, 3 << 20) == 3
    assert storage_read_bytes(pid=2**31 - 1) is None  # no such process: unreadable, not 0
