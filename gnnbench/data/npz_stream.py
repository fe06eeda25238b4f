"""Arrays inside an .npz (zip) archive read in fixed-size blocks straight from the archive.

ogbn-papers100M's data.npz holds edge_index (2, E) with 1.6 B edges (26 GB as int64): np.load
would materialise it whole. Here the member's .npy header is parsed from the zip stream, and the
data is then read block by block from `zipfile.ZipFile.open(member)` (stored or deflated).
"""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import numpy as np

from gnnbench.errors import DataError

BLOCK_BYTES = 32 << 20  # bytes read per block from one member
_READ_ERRORS = (OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error)


class NpzMember:
    """One .npy member of an open zip archive: its shape, dtype and order, read lazily."""

    def __init__(self, archive: zipfile.ZipFile, path: Path, key: str):
        self.archive = archive
        self.path = Path(path)
        self.key = key
        self.name = f"{key}.npy"
        try:
            with archive.open(self.name) as handle:
                version = np.lib.format.read_magic(handle)
                read_header = (
                    np.lib.format.read_array_header_1_0
                    if version == (1, 0)
                    else np.lib.format.read_array_header_2_0
                )
                shape, self.fortran, self.dtype = read_header(handle)
                self.offset = handle.tell()
        except KeyError:
            raise DataError(f"{self.path}: missing key '{key}'") from None
        except _READ_ERRORS as exc:
            raise DataError(f"{self.path}: cannot read '{key}' ({exc})") from None
        if self.dtype.hasobject:
            raise DataError(f"{self.path}: '{key}' holds Python objects, expected numbers")
        self.shape = tuple(int(n) for n in shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @contextmanager
    def _opened_at(self, element: int) -> Iterator[IO[bytes]]:
        """The member's stream positioned at a flat element index of the stored order."""
        try:
            with self.archive.open(self.name) as handle:
                skip = self.offset + element * self.dtype.itemsize
                while skip:  # forward reads: seeking a deflated member decompresses anyway
                    skipped = len(handle.read(min(skip, BLOCK_BYTES)))
                    if not skipped:
                        break
                    skip -= skipped
                yield handle
        except _READ_ERRORS as exc:
            raise DataError(f"{self.path}: cannot read '{self.key}' ({exc})") from None

    def _read(self, handle: IO[bytes], count: int) -> np.ndarray:
        data = handle.read(count * self.dtype.itemsize)
        if len(data) != count * self.dtype.itemsize:
            raise DataError(f"{self.path}: '{self.key}' is truncated")
        return np.frombuffer(data, dtype=self.dtype)

    def flat_blocks(self, start: int, count: int, block: int) -> Iterator[np.ndarray]:
        """Elements [start, start + count) of the stored (flat) order, `block` at a time."""
        with self._opened_at(start) as handle:
            for done in range(0, count, block):
                yield self._read(handle, min(block, count - done))

    def whole(self) -> np.ndarray:
        """The whole array (for small members: counts, labels)."""
        flat = next(self.flat_blocks(0, self.size, max(1, self.size)), np.empty(0, self.dtype))
        return flat.reshape(self.shape, order="F" if self.fortran else "C")


def edge_index_blocks(member: NpzMember, block_edges: int) -> Iterator[np.ndarray]:
    """(k, 2) blocks of a (2, E) edge_index member, in edge order, without reading it whole."""
    if len(member.shape) != 2 or member.shape[0] != 2:
        raise DataError(
            f"{member.path}: '{member.key}' must have shape (2, E), found {member.shape}"
        )
    num_edges = member.shape[1]
    if member.fortran:  # stored as (source, target) pairs
        for flat in member.flat_blocks(0, 2 * num_edges, 2 * block_edges):
            yield flat.reshape(-1, 2)
        return
    # C order: all sources, then all targets; two streams walk the two rows side by side
    sources = member.flat_blocks(0, num_edges, block_edges)
    targets = member.flat_blocks(num_edges, num_edges, block_edges)
    for source_block, target_block in zip(sources, targets, strict=True):
        yield np.stack([source_block, target_block], axis=1)


def row_blocks(member: NpzMember, block_rows: int) -> Iterator[np.ndarray]:
    """(k, F) row blocks of a C-ordered 2-D member, in row order."""
    if len(member.shape) != 2:
        raise DataError(f"{member.path}: '{member.key}' must be 2-D, found shape {member.shape}")
    width = member.shape[1]
    if member.fortran:  # column-major: no row block is contiguous; such files are small
        whole = member.whole()
        for start in range(0, member.shape[0], block_rows):
            yield whole[start : start + block_rows]
        return
    for flat in member.flat_blocks(0, member.size, max(1, block_rows) * max(1, width)):
        yield flat.reshape(-1, width)


@contextmanager
def open_npz(path: Path) -> Iterator[zipfile.ZipFile]:
    """The archive, with a broken zip as one DataError line."""
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise DataError(f"{path}: not a readable .npz file ({exc})") from None
    with archive:
        yield archive
