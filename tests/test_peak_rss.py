"""The process-own peak RSS meter: a reset forgets earlier peaks and a child does not inherit its
parent's figure."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from gnnbench.process.peak_rss import PeakRss, peak_rss_mb, reset_peak_rss

MB = 1 << 20

pytestmark = pytest.mark.skipif(not reset_peak_rss(), reason="needs Linux /proc/self/clear_refs")


def test_reset_forgets_an_earlier_peak():
    block = np.ones(300 * MB // 8)  # touched: resident
    assert peak_rss_mb() > 300
    del block
    with PeakRss() as rss:
        # above glibc's largest mmap threshold (32 MB): fresh pages, never free heap that an
        # earlier test in this process left resident (a 20 MB block there grew the RSS by 0)
        small = np.ones(40 * MB // 8)
    del small
    assert rss.reset
    assert rss.peak_mb < rss.start_mb + 80  # the 300 MB block before the reset is not counted
    assert 35 < rss.growth_mb < 80


def test_child_does_not_inherit_the_parents_peak():
    """A child started from a 400 MB parent measures its own work, not the parent's size:
    ru_maxrss would read >= 400 MB there (Linux carries it across fork and exec)."""
    block = np.ones(400 * MB // 8)
    code = "from gnnbench.process.peak_rss import PeakRss\nwith PeakRss() as rss: pass\nprint(rss.peak_mb)"
    # preexec_fn forces fork+exec (not vfork), as the partition stage's launch does
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        preexec_fn=lambda: None,
    ).stdout
    del block
    assert float(out) < 200
