"""NpyLayout: where the rows of a C-ordered .npy file start, so that bounded windows of it can be
mapped (whole scans, sorted gathers) or its sparse rows read one by one.
The store's feature file and the adjacency's index file are read through it."""

from __future__ import annotations

import mmap
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gnnbench.errors import DataError

_WINDOW_BYTES = 64 << 20
# A gather whose rows touch fewer pages than 1/_SPARSE_SHARE of their window is sparse: it reads
# either through a map of the window or by a pread per row, whichever SparseReads measures as
# cheaper. A share of 2.5 is 40% of the pages: at 256-byte rows (16 to a 4 KB page) 2.5% of the
# rows, at 4 KB rows 40%. The whole-file test of prefetch() uses the same share, so a file larger
# than half the memory gets its pages asked for up to 2.5% of 256-byte rows.
_SPARSE_SHARE = 2.5


class SparseReads:
    """Which way one reader reads the sparse rows of a window: a map of the window advised
    MADV_RANDOM ("map") or a pread per row ("pread"). Neither is faster everywhere, and what
    decides it, how the page cache holds the file, is invisible from user space: where it holds
    it in large folios (written or read sequentially), one fault maps a whole folio and a map is
    cheaper; where it holds it a page a folio (read randomly before), every row is a fault and a
    pread is cheaper, as it is cold (scripts/sparse_reads.py, docs/training_speed.md section 8b:
    1.49 against 2.07, 4.60 against 2.72 and 21.4 against 20.3 us a row through FeatureRows).
    So the reader measures: its first sparse window is read by pread, the second mapped, then
    each goes the way whose recent cost a row (an average over windows, COST_WEIGHT for the
    newest) is lower, and every EXPLORE_EVERY-th the other way, so that the estimate follows
    the cache as it warms or is evicted (1 window in 64 read the dearer way costs at most 11%
    where it is 8x dearer). Only the speed depends on it: both ways return the file's bytes."""

    EXPLORE_EVERY = 64
    COST_WEIGHT = 0.25

    def __init__(self):
        self.cost: dict[str, float] = {}  # way -> seconds a row, averaged
        self.windows = 0

    def way(self) -> str:
        """The way to read the next sparse window."""
        self.windows += 1
        for untried in ("pread", "map"):
            if untried not in self.cost:
                return untried
        cheaper, dearer = sorted(self.cost, key=self.cost.__getitem__)
        return dearer if self.windows % self.EXPLORE_EVERY == 0 else cheaper

    def record(self, way: str, seconds: float, rows: int) -> None:
        """A window read `way`: `rows` rows in `seconds`."""
        per_row = seconds / max(1, rows)
        known = self.cost.get(way)
        self.cost[way] = per_row if known is None else known + self.COST_WEIGHT * (per_row - known)


def _physical_memory() -> int:
    """This machine's RAM in bytes (0 where the platform does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 0


@dataclass(frozen=True)
class NpyLayout:
    """Where the rows of a C-ordered .npy file start, so windows of it can be mapped."""

    path: Path
    offset: int
    shape: tuple[int, ...]
    dtype: np.dtype

    @classmethod
    def read(cls, path: Path) -> NpyLayout:
        try:
            with open(path, "rb") as handle:
                version = np.lib.format.read_magic(handle)
                read_header = (
                    np.lib.format.read_array_header_1_0
                    if version == (1, 0)
                    else np.lib.format.read_array_header_2_0
                )
                shape, fortran, dtype = read_header(handle)
                offset = handle.tell()
        except FileNotFoundError:
            raise DataError(f"{path}: file not found") from None
        except ValueError as exc:
            raise DataError(f"{path}: not a valid .npy file ({exc})") from None
        if fortran:
            raise DataError(f"{path}: expected a C-ordered array")
        expected = offset + int(np.prod(shape)) * dtype.itemsize
        if path.stat().st_size < expected:
            raise DataError(
                f"{path}: truncated (expected {expected} bytes, found {path.stat().st_size})"
            )
        return cls(Path(path), offset, tuple(shape), dtype)

    @property
    def row_bytes(self) -> int:
        return int(np.prod(self.shape[1:], dtype=np.int64)) * self.dtype.itemsize

    def window(self, start: int, stop: int, mode: str = "r") -> np.ndarray:
        """Rows [start, stop) as a memory map of just that range (read-only unless `mode`)."""
        return np.memmap(
            self.path,
            dtype=self.dtype,
            mode=mode,
            offset=self.offset + start * self.row_bytes,
            shape=(stop - start, *self.shape[1:]),
        )

    def random_window(self, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) as a read-only map advised MADV_RANDOM: a fault reads its own page,
        not the readahead around it (platforms without madvise get a plain map)."""
        begin = self.offset + start * self.row_bytes
        aligned = begin - begin % mmap.ALLOCATIONGRANULARITY
        length = begin - aligned + (stop - start) * self.row_bytes
        with open(self.path, "rb") as handle:
            mapped = mmap.mmap(handle.fileno(), length, access=mmap.ACCESS_READ, offset=aligned)
        if hasattr(mapped, "madvise") and hasattr(mmap, "MADV_RANDOM"):
            mapped.madvise(mmap.MADV_RANDOM)
        rows = np.frombuffer(mapped, self.dtype, (stop - start) * int(np.prod(self.shape[1:])),
                             begin - aligned)  # fmt: skip
        return rows.reshape(stop - start, *self.shape[1:])

    def row_blocks(self, max_bytes: int, mode: str = "r") -> Iterator[np.ndarray]:
        """Every row, in order, as memory maps of at most `max_bytes` each, each unmapped before
        the next: a scan of the file never holds more than one block's pages."""
        step = max(1, max_bytes // max(1, self.row_bytes))
        for start in range(0, self.shape[0], step):
            block = self.window(start, min(self.shape[0], start + step), mode)
            yield block
            if mode != "r":
                block.flush()
            del block

    def iter_rows_of(
        self,
        rows: np.ndarray,
        max_bytes: int = _WINDOW_BYTES,
        sparse_reads: SparseReads | None = None,
    ) -> Iterator[np.ndarray]:
        """Yield the given sorted rows, in order, in blocks that each read one bounded window: a
        map of it or, where the rows are sparse in it (_SPARSE_SHARE), a map or a pread per row
        as `sparse_reads` (a reader's own, kept across gathers; default a fresh one) measures."""
        window_rows = max(1, max_bytes // max(1, self.row_bytes))
        sparse_reads = SparseReads() if sparse_reads is None else sparse_reads
        position, handle = 0, None
        try:
            while position < len(rows):
                start = int(rows[position])
                stop = min(self.shape[0], start + window_rows)
                end = position + int(np.searchsorted(rows[position:], stop))
                wanted = rows[position:end]
                if not (self._sparse(end - position, stop - start) and hasattr(os, "preadv")):
                    yield self._mapped_rows(wanted, start, stop)
                else:
                    way, began = sparse_reads.way(), time.perf_counter()
                    if way == "pread":
                        handle = self.random_access() if handle is None else handle
                        block = self.read_rows(wanted, handle)
                    else:
                        block = self._mapped_rows(wanted, start, stop, random=True)
                    sparse_reads.record(way, time.perf_counter() - began, len(wanted))
                    yield block
                position = end
        finally:
            if handle is not None:
                os.close(handle)

    def _mapped_rows(
        self, rows: np.ndarray, start: int, stop: int, random: bool = False
    ) -> np.ndarray:
        """Sorted `rows` of the window [start, stop), copied out of a map of it (unmapped after),
        advised MADV_RANDOM with `random`."""
        window = self.random_window(start, stop) if random else self.window(start, stop)
        try:
            return np.asarray(window[rows - start])
        finally:
            del window

    def _sparse(self, count: int, span_rows: int) -> bool:
        """Whether `count` rows touch fewer pages than 1/_SPARSE_SHARE of a `span_rows` range."""
        pages = count * max(self.row_bytes, mmap.PAGESIZE)
        return pages * _SPARSE_SHARE < span_rows * self.row_bytes

    def prefetch(self, rows: np.ndarray) -> None:
        """Ask the kernel to start reading the pages of these sorted rows (POSIX_FADV_WILLNEED)
        when they are sparse in the file: one request per page, issued together, so the disk
        reads them in parallel instead of one fault at a time. At papers_scale's 25.6 GB
        feature file (larger than the page cache) a gather of 100 k random rows took 1.5 s
        with it against 4.2 s without. Advice only: nothing changes if the platform lacks it."""
        if not hasattr(os, "posix_fadvise") or len(rows) == 0:
            return
        if self.shape[0] * self.row_bytes < _physical_memory() // 2:
            return  # the page cache can hold it: a request per page is pure cost (2x the epoch
            # at 10 M nodes, a 2.4 GB file); it pays only when reads miss the cache
        if not self._sparse(len(rows), self.shape[0]):
            return  # dense: the windows' readahead serves it
        starts = self.offset + rows.astype(np.int64) * self.row_bytes
        first = np.ones(len(starts), dtype=bool)
        first[1:] = starts[1:] // mmap.PAGESIZE != starts[:-1] // mmap.PAGESIZE
        handle = os.open(self.path, os.O_RDONLY)
        try:
            for start in starts[first].tolist():
                os.posix_fadvise(handle, start, self.row_bytes, os.POSIX_FADV_WILLNEED)
        finally:
            os.close(handle)

    def random_access(self) -> int:
        """A read-only descriptor of the file advised POSIX_FADV_RANDOM: a read that misses the
        page cache reads its own pages, not the readahead around them."""
        handle = os.open(self.path, os.O_RDONLY)
        try:
            if hasattr(os, "posix_fadvise"):
                os.posix_fadvise(handle, 0, 0, os.POSIX_FADV_RANDOM)
        except BaseException:
            os.close(handle)
            raise
        return handle

    def read_rows(self, rows: np.ndarray, handle: int) -> np.ndarray:
        """The given rows, each read from `handle` by a pread of its own into one array."""
        out = np.empty((len(rows), *self.shape[1:]), dtype=self.dtype)
        size, view = self.row_bytes, memoryview(out).cast("B")
        for i, start in enumerate((self.offset + rows.astype(np.int64) * size).tolist()):
            if os.preadv(handle, [view[i * size : (i + 1) * size]], start) != size:
                raise DataError(f"{self.path}: short read of row {int(rows[i])} (file changed?)")
        return out
