"""GraphStore: one prepared dataset on disk, read in bounded memory.

Layout (DESIGN.md): meta.json, edges.bin (E, 2) little-endian ids, degree.npy, feat.npy (N, F)
float32 or float16 (dataset.feature_dtype), label.npy, split.npz. Edges are read through `EdgeStream`, which maps one fixed-size window
of the file per chunk: a memory profiler then sees only the chunk, not the whole file, which is what
a streaming partitioner really holds.
"""

from __future__ import annotations

import json
import mmap
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from gnnbench.errors import DataError

if TYPE_CHECKING:
    from gnnbench.data.features import FeatureRows

# Bump when an import's output changes (labels remapped to 0..C-1, NaN checks: version 2), so
# stores prepared by older code are prepared again, not reused.
FORMAT_VERSION = 2
DEFAULT_CHUNK_EDGES = 1 << 20
_WINDOW_BYTES = 64 << 20
# A gather reading fewer pages than this share of its window maps it for random access: a page
# fault in a default map reads the device's whole readahead around it (8 MB on this machine's
# disk), so sparse rows of a file larger than memory (papers_scale's 25.6 GB of shared
# features) read thousands of times the bytes they use
_SPARSE_SHARE = 8


def _physical_memory() -> int:
    """This machine's RAM in bytes (0 where the platform does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 0


def read_json(path: Path) -> dict:
    """Read a JSON file, turning a missing or malformed file into one clear DataError."""
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: malformed JSON ({exc.msg} at line {exc.lineno})") from None


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
        """Yield the given sorted rows, in order, in blocks that each read one bounded window."""
        window_rows = max(1, max_bytes // max(1, self.row_bytes))
        position = 0
        while position < len(rows):
            start = int(rows[position])
            stop = min(self.shape[0], start + window_rows)
            end = position + int(np.searchsorted(rows[position:], stop))
            sparse = self._sparse(end - position, stop - start)
            window = self.random_window(start, stop) if sparse else self.window(start, stop)
            yield np.asarray(window[rows[position:end] - start])
            del window
            position = end

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


class EdgeStream:
    """Fixed-size chunks of the edge file, one mapped window at a time; counts full passes."""

    def __init__(self, path: Path, num_edges: int, id_dtype: np.dtype, chunk_edges: int):
        self.path = path
        self.num_edges = num_edges
        self.id_dtype = np.dtype(id_dtype)
        self.chunk_edges = max(1, int(chunk_edges))
        self.passes = 0

    def __iter__(self) -> Iterator[np.ndarray]:
        self.passes += 1
        for start in range(0, self.num_edges, self.chunk_edges):
            stop = min(self.num_edges, start + self.chunk_edges)
            window = np.memmap(
                self.path,
                dtype=self.id_dtype,
                mode="r",
                offset=start * 2 * self.id_dtype.itemsize,
                shape=(stop - start, 2),
            )
            yield window
            del window

    def __len__(self) -> int:
        return -(-self.num_edges // self.chunk_edges)


class GraphStore:
    """A prepared dataset directory; opening it validates every file's size against meta.json."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.meta = read_json(self.path / "meta.json")
        version = self.meta.get("format_version")
        if version != FORMAT_VERSION:
            raise DataError(
                f"{self.path / 'meta.json'}: format_version {version!r}, expected {FORMAT_VERSION}"
            )
        self.num_nodes = int(self.meta["num_nodes"])
        self.num_edges = int(self.meta["num_edges"])
        self.id_dtype = np.dtype(self.meta["id_dtype"]).newbyteorder("<")
        self._check_edges_file()

    def _check_edges_file(self) -> None:
        edges = self.path / "edges.bin"
        if not edges.is_file():
            raise DataError(f"{edges}: file not found")
        expected = self.num_edges * 2 * self.id_dtype.itemsize
        found = edges.stat().st_size
        if found != expected:
            raise DataError(
                f"{edges}: expected {expected} bytes for {self.num_edges} edges of "
                f"{self.id_dtype.name}, found {found} (truncated or wrong meta.json)"
            )

    # --- descriptive properties -------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.meta["name"]

    @property
    def fingerprint(self) -> str:
        return self.meta["fingerprint"]

    @property
    def feature_dim(self) -> int:
        return int(self.meta["feature_dim"])

    @property
    def num_classes(self) -> int:
        return int(self.meta["num_classes"])

    @property
    def multilabel(self) -> bool:
        return bool(self.meta["multilabel"])

    @property
    def has_features(self) -> bool:
        return self.feature_dim > 0

    # --- data access ---------------------------------------------------------------------------
    def edge_stream(self, chunk_edges: int = DEFAULT_CHUNK_EDGES) -> EdgeStream:
        return EdgeStream(self.path / "edges.bin", self.num_edges, self.id_dtype, chunk_edges)

    def degree(self) -> np.ndarray:
        return np.load(self.path / "degree.npy")

    def feature_layout(self) -> NpyLayout | None:
        return NpyLayout.read(self.path / "feat.npy") if self.has_features else None

    def features(self) -> FeatureRows:
        """The (N, F) features read through memory maps: `features[ids]` gathers float32 rows."""
        from gnnbench.data.features import FeatureRows

        return FeatureRows(self.path / "feat.npy")

    def labels(self) -> np.ndarray | None:
        path = self.path / "label.npy"
        return np.load(path) if path.is_file() else None

    def split(self) -> dict[str, np.ndarray]:
        with np.load(self.path / "split.npz") as split:
            return {key: split[key] for key in ("train", "val", "test")}

    def edges(self) -> np.ndarray:
        """The whole (E, 2) edge array in memory: only for in-memory baselines and small graphs."""
        return np.fromfile(self.path / "edges.bin", dtype=self.id_dtype).reshape(-1, 2)

    def csr(self, dtype: np.dtype = np.int64) -> tuple[np.ndarray, np.ndarray]:
        """Symmetric CSR (indptr, indices) of the whole graph, in memory (O(E)), of `dtype`."""
        from gnnbench.data.graph_ops import csr_from_edges

        return csr_from_edges(self.edges(), self.num_nodes, dtype)


def open_store(path: Path) -> GraphStore:
    return GraphStore(path)
