"""The process-own peak RSS meter: a reset forgets earlier peaks and a child does not inherit its
parent's figure."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from gnnbench.process.peak_rss import reset_peak_rss

MB = 1 << 20

pytestmark = pytest.mark.skipif(not reset_peak_rss(), reason="needs Linux /proc/self/clear_refs")


RESET_PROBE = """
import gc, json
import numpy as np
from gnnbench.process.peak_rss import PeakRss, peak_rss_mb
MB = 1 << 20
gc.disable()
block = np.ones(300 * MB // 8)  # touched: resident
high = peak_rss_mb()
del block
with PeakRss() as rss:
    small = np.ones(40 * MB // 8)  # above glibc's largest mmap threshold (32 MB): fresh pages
print(json.dumps({"high": high, "reset": rss.reset, "start": rss.start_mb, "peak": rss.peak_mb,
                  "growth": rss.growth_mb}))
"""


def test_reset_forgets_an_earlier_peak():
    """In a fresh process: a pytest worker that ran other files may release memory of theirs
    (a collected memmap, another thread's frees) while the block is allocated, and the peak then
    reads no growth at all (CI saw growth 0.0 in a two-worker run)."""
    out = subprocess.run(
        [sys.executable, "-c", RESET_PROBE], capture_output=True, text=True, check=True
    ).stdout
    rss = json.loads(out)
    assert rss["high"] > 300 and rss["reset"]
    assert rss["peak"] < rss["start"] + 80  # the 300 MB block before the reset is not counted
    assert 35 < rss["growth"] < 80


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
