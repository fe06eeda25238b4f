"""Feature rows on disk: how a store or a partition writes them and how training reads them.

A store keeps its (N, F) features in feat.npy as float32 or, with `dataset.feature_dtype=float16`,
at half the disk (models still compute in float32, as DGL users do for Papers100M). Readers get a
`FeatureRows`: `rows[ids]` gathers the rows of an int index array through memory-mapped windows
of the file and returns them as float32, so neither the store's nor a partition's file is ever
read whole into memory. A partition whose book shares the store's features (`partitioner.feature_rows=shared`) reads them
through its `nodes.npy`: local id -> global id -> a row of the store's feat.npy.

Writers fill the file a row block at a time through `FeatureFile`, with ordinary writes rather
than a writable memory map: the blocks are reserved up front (a full disk under a memory map is a
SIGBUS crash, not an error) and dirty file pages never accumulate in the writer's resident size,
which at 100 M nodes would be the whole file.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from gnnbench import schema
from gnnbench.data.npy_file import NpyLayout, SparseReads
from gnnbench.errors import ConfigError, DataError

FEATURE_DTYPES = schema.choices(schema.FeatureDtype)
# Rows are gathered through one mapped window of the file at a time, unmapped before the next:
# a page fault may map a whole large folio of the page cache (~0.7 MB per random row measured on
# ext4, Linux 6.18), so a mapping of the whole file would count most of it in the reader's
# resident size after one large random batch. A window bounds that to its own size.
WINDOW_BYTES = 64 << 20


def feature_dtype_of(value: object) -> np.dtype:
    """`dataset.feature_dtype` checked: the dtype the store's feat.npy is written in."""
    name = "float32" if value is None else str(value)
    if name not in FEATURE_DTYPES:
        raise ConfigError(
            f"dataset.feature_dtype: expected one of {', '.join(FEATURE_DTYPES)}, got {value!r}"
        )
    return np.dtype(name)


class FeatureRows:
    """Read-only (N, F) feature rows of a .npy file, gathered as float32 through memory maps.

    `global_ids` (optional): row i of this view is row global_ids[i] of the file (a partition
    sharing the store's features). Training uses `rows[ids]` (an int array), `.shape` and
    `len()`; `.dtype` is float32, what the rows come out as. Memory: the rows gathered, their
    order (16 bytes per row), and one mapped window of at most WINDOW_BYTES.
    """

    dtype = np.dtype(np.float32)

    def __init__(self, path: Path, global_ids: np.ndarray | None = None):
        self.path = Path(path)
        self.layout = NpyLayout.read(self.path)
        if len(self.layout.shape) != 2 or self.layout.dtype.kind != "f":
            raise DataError(
                f"{self.path}: expected a 2-D float feature array, found {self.layout.dtype} "
                f"of shape {self.layout.shape}"
            )
        self.global_ids = global_ids
        rows = self.layout.shape[0] if global_ids is None else len(global_ids)
        self.shape = (int(rows), int(self.layout.shape[1]))
        self.sparse_reads = SparseReads()  # how its sparse windows read best, learnt across gathers

    @property
    def stored_dtype(self) -> np.dtype:
        return self.layout.dtype

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, index) -> np.ndarray:
        """Rows `index` (an int array, an int or a slice; a tuple indexes the rows' columns too)
        as float32; only the pages of those rows are read, a window at a time."""
        rows, columns = (index[0], index[1:]) if isinstance(index, tuple) else (index, ())
        if isinstance(rows, slice):
            rows = np.arange(*rows.indices(len(self)))
        rows = np.asarray(rows)
        wanted = np.arange(len(self))[rows] if rows.dtype == bool else rows
        file_rows = wanted if self.global_ids is None else self.global_ids[wanted]
        gathered = self._gather(np.atleast_1d(file_rows)).reshape(*np.shape(file_rows), -1)
        return gathered[(slice(None),) * (gathered.ndim - 1) + columns] if columns else gathered

    def _gather(self, file_rows: np.ndarray) -> np.ndarray:
        order = np.argsort(file_rows, kind="stable")
        out = np.empty((len(file_rows), self.shape[1]), dtype=np.float32)
        position = 0
        wanted = file_rows[order]
        self.layout.prefetch(wanted)  # sparse rows of a file larger than memory: read in parallel
        for block in self.layout.iter_rows_of(wanted, WINDOW_BYTES, self.sparse_reads):
            out[order[position : position + len(block)]] = block
            position += len(block)
        return out

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        """Every row in memory: for in-memory consumers (PyG's METIS, baselines, small graphs)."""
        rows = self[:]
        return rows if dtype is None else rows.astype(dtype, copy=False)

    def __reduce__(self):
        """Pickled as its path (and ids), never as the rows of the file."""
        return (type(self), (self.path, self.global_ids))

    def __repr__(self) -> str:
        shared = "" if self.global_ids is None else ", by global id"
        return f"FeatureRows({self.path}, {self.shape}, {self.stored_dtype}{shared})"


class CountedRows:
    """Feature rows (anything answering `rows[ids]`) that count what is gathered from them, for
    measurements and tests: `gathers`, `gathered` (a row once per gather holding it) and
    `distinct` (rows gathered at least once); with `keep`, each gather's ids in `reads`."""

    def __init__(self, rows, keep: bool = False):
        self.rows, self.shape = rows, rows.shape
        self.gathers = self.gathered = 0
        self._seen = np.zeros(rows.shape[0], dtype=np.bool_)  # a flag a row, not its ids
        self.reads: list[np.ndarray] | None = [] if keep else None

    @property
    def distinct(self) -> int:
        return int(np.count_nonzero(self._seen))

    def __getitem__(self, ids) -> np.ndarray:
        ids = np.asarray(ids)
        self.gathers += 1
        self.gathered += ids.size
        self._seen[ids] = True
        if self.reads is not None:
            self.reads.append(ids)
        return self.rows[ids]


def npy_header(shape: tuple, dtype: np.dtype) -> bytes:
    """The .npy header np.save writes for an array of this shape and dtype (version 1.0)."""
    import io

    header = {
        "descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
        "fortran_order": False,
        "shape": tuple(shape),
    }
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, header)
    return buffer.getvalue()


class FeatureFile:
    """A (N, F) .npy file being written: `out[start:stop] = rows` casts and writes one block
    (`out[ids] = rows` scatters rows by id, for sources listing features by node id).

    Its blocks are reserved when it is opened (posix_fallocate), so running out of disk fails
    there, as one OSError, not halfway through the rows.
    """

    def __init__(self, path: Path, num_rows: int, dim: int, dtype: np.dtype):
        self.path = Path(path)
        self.dtype = np.dtype(dtype)
        self.shape = (int(num_rows), int(dim))
        header = npy_header(self.shape, self.dtype)
        self._offset = len(header)
        self._row_bytes = int(dim) * self.dtype.itemsize
        self._handle = open(self.path, "wb")
        try:
            self._handle.write(header)
            self._handle.flush()
            size = self._offset + self.shape[0] * self._row_bytes
            os.posix_fallocate(self._handle.fileno(), 0, size)
        except BaseException:
            self._handle.close()
            raise

    def __setitem__(self, rows: slice | np.ndarray, values: np.ndarray) -> None:
        if not isinstance(rows, slice):  # rows scattered by node id (node files): a mapped block
            self._handle.flush()
            view = np.memmap(self.path, self.dtype, "r+", offset=self._offset, shape=self.shape)
            view[rows] = values
            view.flush()
            del view
            return
        start, stop, step = rows.indices(self.shape[0])
        if step != 1:
            raise ValueError("FeatureFile takes contiguous row ranges")
        block = np.ascontiguousarray(values, dtype=self.dtype)
        if block.shape != (stop - start, self.shape[1]):
            raise ValueError(f"{self.path}: block of shape {block.shape} for rows {start}:{stop}")
        self._handle.seek(self._offset + start * self._row_bytes)
        self._handle.write(block.data)

    def flush(self) -> None:
        """Write out and close (what a writable memory map's flush + del did)."""
        if not self._handle.closed:
            self._handle.close()
