"""GraphStore: one prepared dataset on disk, read in bounded memory.

Layout (DESIGN.md): meta.json, edges.bin (E, 2) little-endian ids, degree.npy, feat.npy (N, F)
float32 or float16 (dataset.feature_dtype), label.npy, split.npz. Edges are read through `EdgeStream`, which maps one fixed-size window
of the file per chunk: a memory profiler then sees only the chunk, not the whole file, which is what
a streaming partitioner really holds.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from gnnbench.data.npy_file import NpyLayout
from gnnbench.errors import DataError

if TYPE_CHECKING:
    from gnnbench.data.features import FeatureRows

# Bump when an import's output changes (labels remapped to 0..C-1, NaN checks: version 2), so
# stores prepared by older code are prepared again, not reused.
FORMAT_VERSION = 2
DEFAULT_CHUNK_EDGES = 1 << 20


def read_json(path: Path) -> dict:
    """Read a JSON file, turning a missing or malformed file into one clear DataError."""
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: malformed JSON ({exc.msg} at line {exc.lineno})") from None


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
