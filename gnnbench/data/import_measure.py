"""The import's own cost, measured like the partition stage: seconds, memray heap peak, and the
resident peak since the import started (gnnbench.process.peak_rss: never a launcher's carried-over size).

The figures go into the store's meta.json (import_time_s, import_peak_mb, import_rss_mb), so the
track stage logs them with every run that uses the store.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import memray

from gnnbench.process.peak_rss import PeakRss


@contextmanager
def measured_import(capture: Path) -> Iterator[dict[str, float]]:
    """Track the block with memray into `capture` (deleted afterwards); fill the yielded dict.

    In a process that memray already tracks (only one tracker may run), the heap peak is left out.
    """
    figures: dict[str, float] = {}
    capture = Path(capture)
    started = time.perf_counter()
    rss = PeakRss()
    # aggregated: only the high-water mark is read back, and the capture stays small and fast
    tracker = memray.Tracker(capture, file_format=memray.FileFormat.AGGREGATED_ALLOCATIONS)
    with rss:
        try:
            tracker.__enter__()
        except RuntimeError:  # another tracker is active in this process
            tracker = None
        try:
            yield figures
        finally:
            if tracker is not None:
                tracker.__exit__(None, None, None)
    figures["import_time_s"] = round(time.perf_counter() - started, 3)
    if tracker is not None:
        figures["import_peak_mb"] = round(
            memray.FileReader(capture).metadata.peak_memory / 2**20, 1
        )
        capture.unlink()
    figures["import_rss_mb"] = round(rss.peak_mb, 1)
