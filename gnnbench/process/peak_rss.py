"""Peak resident memory of this process's own work, never a parent's.

`resource.getrusage(...).ru_maxrss` is a lifetime figure that Linux carries across fork and exec:
a child started from a 900 MB launcher reads 900 MB before it allocates anything. The kernel's
per-process high-water mark (`VmHWM` in /proc/self/status) can instead be reset to the current
resident size (writing 5 to /proc/self/clear_refs, Linux >= 4.0), so a measured step reads the
peak of what this process held while the step ran: its interpreter and libraries plus the step's
own work. A forked child that has not yet touched its parent's pages holds only what it maps;
`PeakRss.growth_mb` is the rise over the size at the start, for figures that must exclude even
that.

Where /proc is missing (not Linux) or clear_refs is not writable, the figure falls back to the
lifetime peak and `PeakRss.reset` is False, so a caller can say the figure is an upper bound.
"""

from __future__ import annotations

import resource
import sys
from pathlib import Path

STATUS = Path("/proc/self/status")
CLEAR_REFS = Path("/proc/self/clear_refs")
RESET_PEAK = "5"  # clear_refs: reset the peak resident set size to the current one


def _status_kb(field: str) -> float | None:
    try:
        for line in STATUS.read_text().splitlines():
            if line.startswith(field + ":"):
                return float(line.split()[1])
    except OSError:
        return None
    return None


def _lifetime_peak_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024  # bytes there, KiB here


def current_rss_mb() -> float:
    """Resident set size now (MB); the lifetime peak where /proc is missing."""
    kb = _status_kb("VmRSS")
    return _lifetime_peak_mb() if kb is None else kb / 1024


def peak_rss_mb() -> float:
    """Resident high-water mark since the last `reset_peak_rss` (or the process's start)."""
    kb = _status_kb("VmHWM")
    return _lifetime_peak_mb() if kb is None else kb / 1024


def reset_peak_rss() -> bool:
    """Start a new high-water mark at the current resident size; False where that is impossible."""
    try:
        CLEAR_REFS.write_text(RESET_PEAK)
    except OSError:
        return False
    return True


class PeakRss:
    """`with PeakRss() as rss: work()` then `rss.peak_mb`: the resident peak while `work` ran
    (counting what the process already held), `rss.growth_mb`: its rise over the start."""

    def __init__(self) -> None:
        self.reset = False
        self.start_mb = 0.0
        self.peak_mb = 0.0

    def __enter__(self) -> PeakRss:
        self.reset = reset_peak_rss()
        self.start_mb = current_rss_mb()
        return self

    def __exit__(self, *exc_info) -> None:
        self.peak_mb = peak_rss_mb()

    @property
    def growth_mb(self) -> float:
        return max(0.0, self.peak_mb - self.start_mb)
