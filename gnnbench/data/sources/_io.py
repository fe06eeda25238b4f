"""File access shared by the importers: gzip-aware block reading, npz members, chunked writes.

Every failure of the underlying libraries (truncated gzip, broken zip, missing npz key) becomes one
DataError line naming the file, so no importer shows a numpy/zlib traceback.
"""

from __future__ import annotations

import gzip
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from gnnbench.data.builder import GraphStoreBuilder
from gnnbench.errors import DataError

BLOCK_BYTES = 16 << 20  # ~1M edge-list lines per block
EDGE_CHUNK = 1 << 20  # edges handed to the builder per add_edges call
ROW_CHUNK_BYTES = 64 << 20  # feature rows converted per step
_GZIP_MAGIC = b"\x1f\x8b"
_ZIP_MAGIC = b"PK"
_UTF8_BOM = b"\xef\xbb\xbf"
_GZIP_ERRORS = (EOFError, zlib.error, gzip.BadGzipFile)


def starts_with(path: Path, magic: bytes) -> bool:
    """True when the file starts with these magic bytes (whatever its name says)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(len(magic)) == magic
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror or exc})") from None


def iter_line_blocks(path: Path, block_bytes: int | None = None) -> Iterator[tuple[int, bytes]]:
    """Yield (number of the block's first line, 1-based; bytes of whole lines ending in newline).

    Plain or gzip input, read in bounded blocks; a block is cut after its last newline and the
    rest carried into the next one, so no line is ever split.
    """
    path = Path(path)
    block_bytes = block_bytes or BLOCK_BYTES
    opener = gzip.open if starts_with(path, _GZIP_MAGIC) else open
    line_number = 1
    carry = b""
    first = True
    try:
        with opener(path, "rb") as handle:
            while block := handle.read(block_bytes):
                if first:  # a UTF-8 byte order mark (spreadsheet exports) is not data
                    block, first = block.removeprefix(_UTF8_BOM), False
                block = carry + block
                cut = block.rfind(b"\n") + 1
                carry = block[cut:]
                if cut:
                    yield line_number, block[:cut]
                    line_number += block.count(b"\n", 0, cut)
    except _GZIP_ERRORS:
        raise DataError(f"{path}: truncated or corrupt gzip") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if carry:
        yield line_number, carry + b"\n"


class NpzArrays:
    """An .npz file opened without pickle; `get` turns every read failure into a DataError."""

    def __init__(self, path: Path, expected: str):
        self.path = Path(path)
        self.expected = expected
        if not starts_with(self.path, _ZIP_MAGIC):
            raise DataError(f"{self.path}: not an .npz (zip) archive of {expected}")
        try:
            self._npz = np.load(self.path, allow_pickle=False)
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise DataError(f"{self.path}: not a readable .npz file ({exc})") from None
        if not hasattr(self._npz, "files"):
            raise DataError(
                f"{self.path}: expected an .npz archive of {expected}, found a single array"
            )

    def __enter__(self) -> NpzArrays:
        return self

    def __exit__(self, *exc_info) -> None:
        self._npz.close()

    def has(self, key: str) -> bool:
        return key in self._npz.files

    @property
    def keys(self) -> list[str]:
        return list(self._npz.files)

    def pickled_keys(self) -> list[str]:
        """Keys whose array holds Python objects (needs unpickling), told from the .npy headers
        alone: nothing is unpickled."""
        pickled = []
        try:
            with zipfile.ZipFile(self.path) as archive:
                for member in archive.namelist():
                    if member.endswith(".npy") and _holds_objects(archive, member):
                        pickled.append(member.removesuffix(".npy"))
        except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error):
            return pickled  # unreadable members are reported when they are read
        return pickled

    def get(self, key: str, ndim: int | None = None) -> np.ndarray:
        """The array stored under `key`; missing, unreadable or of the wrong rank → DataError."""
        if key not in self._npz.files:
            raise DataError(
                f"{self.path}: missing key '{key}' (expected {self.expected}; found {', '.join(self._npz.files)})"
            )
        try:
            array = self._npz[key]
        except ValueError as exc:
            if "allow_pickle" in str(exc):
                raise DataError(
                    f"{self.path}: '{key}' holds pickled Python objects, which are not loaded"
                    " (unpickling a file can run code); re-save it as plain arrays"
                ) from None
            raise DataError(f"{self.path}: cannot read '{key}' ({exc})") from None
        except (OSError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
            raise DataError(f"{self.path}: cannot read '{key}' ({exc})") from None
        if ndim is not None and array.ndim != ndim:
            raise DataError(f"{self.path}: '{key}' must be {ndim}-D, found shape {array.shape}")
        return array


def _holds_objects(archive: zipfile.ZipFile, member: str) -> bool:
    with archive.open(member) as handle:
        version = np.lib.format.read_magic(handle)
        if version == (1, 0):
            _, _, dtype = np.lib.format.read_array_header_1_0(handle)
        else:
            _, _, dtype = np.lib.format.read_array_header_2_0(handle)
    return dtype.hasobject


def add_edge_array(builder: GraphStoreBuilder, edges: np.ndarray, origin: str) -> None:
    """Hand an in-memory (E, 2) edge array to the builder in bounded chunks."""
    for start in range(0, len(edges), EDGE_CHUNK):
        builder.add_edges(edges[start : start + EDGE_CHUNK], origin=origin)


def row_chunk(num_columns: int) -> int:
    """Rows per step so that one float32 chunk of that width stays near ROW_CHUNK_BYTES."""
    return max(1, ROW_CHUNK_BYTES // max(1, 4 * num_columns))


def write_feature_rows(builder: GraphStoreBuilder, features: np.ndarray | sp.spmatrix) -> None:
    """Copy a dense or CSR (N, F) matrix into the store's float32 feat.npy, a row chunk at a time.

    A CSR matrix is densified one chunk at a time, so its dense form is never held in memory.
    """
    num_nodes, dim = features.shape
    out = builder.open_features(num_nodes, dim)
    step = row_chunk(dim)
    for start in range(0, num_nodes, step):
        rows = features[start : start + step]
        out[start : start + step] = rows.toarray() if sp.issparse(rows) else rows
    out.flush()
    del out


def check_node_array(array: np.ndarray, num_nodes: int, what: str, origin: Path) -> None:
    """Node-indexed arrays (features, labels, masks) must have one row per node."""
    if array.shape[0] != num_nodes:
        raise DataError(
            f"{origin}: {what} has {array.shape[0]} rows, expected {num_nodes} (one per node)"
        )
