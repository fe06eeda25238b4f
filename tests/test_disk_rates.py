"""scripts/disk_limits.py's measurement (gnnbench/process/disk_rates.py): cold rates of a probe
that leaves nothing behind, and one line when the disk cannot hold it."""

from __future__ import annotations

import os
import shutil
from collections import namedtuple

import pytest

from gnnbench.errors import GnnbenchError
from gnnbench.process import disk_rates

needs_fadvise = pytest.mark.skipif(not hasattr(os, "posix_fadvise"), reason="no posix_fadvise")


@needs_fadvise
def test_a_small_probe_reads_both_ways_and_is_removed(tmp_path):
    rates = disk_rates.measure(tmp_path, probe_mb=16, reads=200)
    assert rates.probe_mb == 16 and rates.sequential_mb_s > 0 and rates.random_reads_s > 0
    assert list(tmp_path.iterdir()) == []


@needs_fadvise
def test_a_disk_without_room_for_the_probe_is_one_line(tmp_path, monkeypatch):
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda _: usage(0, 0, 100 << 20))
    with pytest.raises(
        GnnbenchError, match=rf"^{tmp_path}: 0\.1 GiB free, the probe needs 2\.0 GiB"
    ):
        disk_rates.measure(tmp_path, probe_mb=2048, reads=10)
    assert list(tmp_path.iterdir()) == []
