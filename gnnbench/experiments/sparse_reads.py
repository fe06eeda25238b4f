"""What a sparse gather of feature rows costs each way (scripts/sparse_reads.py): through a
MADV_RANDOM map of its window, by a pread a row, and as FeatureRows chooses (npy_file.SparseReads),
in three states of the page cache, as microseconds a row."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from gnnbench.data.features import FeatureRows
from gnnbench.data.npy_file import NpyLayout, SparseReads
from gnnbench.process.io_counters import drop_from_page_cache

COLUMNS = 128  # papers_scale's float16 rows: 256 bytes


def _cached_in_large_folios(layout: NpyLayout, handle: int) -> None:
    """Dropped, then read whole through maps: readahead caches the file in large folios."""
    drop_from_page_cache(layout.path)
    for block in layout.row_blocks(64 << 20):
        block[:, 0].max()  # a value of every row: every page faulted in


def _cached_page_by_page(layout: NpyLayout, handle: int) -> None:
    """Dropped, then read whole by random-advised preads: the cache holds a page a folio."""
    drop_from_page_cache(layout.path)
    rows = np.arange(layout.shape[0])
    for start in range(0, len(rows), 1 << 18):
        layout.read_rows(rows[start : start + (1 << 18)], handle)


def _cold(layout: NpyLayout, handle: int) -> None:
    drop_from_page_cache(layout.path)


STATES: dict[str, Callable[[NpyLayout, int], None]] = {
    "warm, large folios (written or read sequentially)": _cached_in_large_folios,
    "warm, a page a folio (read randomly before)": _cached_page_by_page,
    "cold (dropped from the page cache)": _cold,
}


class _Always(SparseReads):
    """One way for every sparse window (the measured choice's alternatives)."""

    def __init__(self, way: str):
        super().__init__()
        self.fixed = way

    def way(self) -> str:
        return self.fixed


def measure(rows: int, share: float, gathers: int, folder: Path | None = None) -> list[dict]:
    """Microseconds a row of `gathers` sorted random gathers of `share` of a `rows` x 128
    float16 file's rows through FeatureRows, each way, in each state of the page cache (the
    file written into `folder`, removed after)."""
    with tempfile.TemporaryDirectory(prefix="sparse-reads-", dir=folder) as tmp:
        path = Path(tmp) / "feat.npy"
        np.save(path, np.ones((rows, COLUMNS), dtype=np.float16))
        layout = NpyLayout.read(path)
        handle = layout.random_access()
        try:
            return [_state_row(name, prepare, layout, handle, share, gathers)
                    for name, prepare in STATES.items()]  # fmt: skip
        finally:
            os.close(handle)


def _state_row(name, prepare, layout, handle, share, gathers) -> dict:
    rng = np.random.default_rng(0)
    size = max(1, int(layout.shape[0] * share))
    row: dict = {"state": name}
    for way in ("map", "pread", "chosen"):
        prepare(layout, handle)
        batches = [np.sort(rng.choice(layout.shape[0], size, replace=False))
                   for _ in range(gathers)]  # fmt: skip
        features = FeatureRows(layout.path)
        if way != "chosen":
            features.sparse_reads = _Always(way)
        started = time.perf_counter()
        for batch in batches:
            features[batch]
        row[way] = (time.perf_counter() - started) / (size * gathers) * 1e6
    cost = features.sparse_reads.cost
    row["settled_on"] = min(cost, key=cost.__getitem__)
    return row


def table(rows: list[dict], file_rows: int, share: float, gathers: int) -> str:
    lines = [
        f"{gathers} gathers of {share:.2%} of a {file_rows:,} x {COLUMNS} float16 file's rows "
        f"through FeatureRows, us a row (load {os.getloadavg()[0]:.1f})",
        "",
        "| page cache | map (MADV_RANDOM) | pread a row | measured choice | cheaper at its end |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['state']} | {row['map']:.2f} | {row['pread']:.2f} | {row['chosen']:.2f} | "
            f"{row['settled_on']} |"
        )
    return "\n".join(lines)
