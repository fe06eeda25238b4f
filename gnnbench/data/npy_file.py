"""NpyLayout: where the rows of a C-ordered .npy file start, so that bounded windows of it can be
mapped (whole scans, sorted gathers) or its sparse rows read one by one.
The store's feature file and the adjacency's index file are read through it."""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gnnbench.errors import DataError

_WINDOW_BYTES = 64 << 20
# A gather whose rows touch fewer pages than 1/_SPARSE_SHARE of their window reads each row with
# its own pread instead of mapping the window. A fault in a map costs more than a pread of a
# small row (it maps a large folio of the page cache), and in a default map it reads the
# device's whole readahead around it (8 MB on this machine's disk), so sparse rows of a file
# larger than memory (papers_scale's 25.6 GB of shared features) would read thousands of times
# the bytes they use; the preads' descriptor is advised POSIX_FADV_RANDOM for that. Warm, on a
# 2.4 GB float16 file of 10 M rows (256 B each): 1.07 us a row with preads against 3.5 through a
# map at 0.43% of the rows, 1.00 against 1.67 at 1.5%, equal at 3%, 0.97 against 0.70 at 5%.
# A share of 2.5 is 40% of the pages: at 256-byte rows (16 to a 4 KB page) 2.5% of the rows, at
# 4 KB rows 40%. The whole-file test of prefetch() uses the same share, so a file larger than
# half the memory now gets its pages asked for up to 2.5% of 256-byte rows (0.78% before).
_SPARSE_SHARE = 2.5


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
        self, rows: np.ndarray, max_bytes: int = _WINDOW_BYTES
    ) -> Iterator[np.ndarray]:
        """Yield the given sorted rows, in order, in blocks that each read one bounded window:
        a map of it, or a pread per row where the rows are sparse in it (_SPARSE_SHARE)."""
        window_rows = max(1, max_bytes // max(1, self.row_bytes))
        position, handle = 0, None
        try:
            while position < len(rows):
                start = int(rows[position])
                stop = min(self.shape[0], start + window_rows)
                end = position + int(np.searchsorted(rows[position:], stop))
                if self._sparse(end - position, stop - start) and hasattr(os, "preadv"):
                    handle = self._random_access() if handle is None else handle
                    yield self.read_rows(rows[position:end], handle)
                else:
                    window = self.window(start, stop)
                    yield np.asarray(window[rows[position:end] - start])
                    del window
                position = end
        finally:
            if handle is not None:
                os.close(handle)

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

    def _random_access(self) -> int:
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
