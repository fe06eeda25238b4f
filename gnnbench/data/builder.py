"""GraphStoreBuilder: what every importer writes through, so every store has one shape.

Importers hand over edge chunks in any orientation, with duplicates and self-loops; the builder
makes them undirected, deduplicated and loop-free, relabels ids to 0..N-1 when the source has no
fixed node count, keeps the source's first-occurrence order as the stream order, adds a seeded
split (`dataset.split_fractions`, 70/15/15 by default) where the source has none, writes features in
`dataset.feature_dtype`, and renames the directory into place only when complete.

Memory: deduplication sorts 64-bit keys in memory when they fit `import_memory_gb` (~64 bytes per
raw edge), else goes through bucket files on disk (gnnbench/data/canonical.py) within that bound;
both give the same bytes. Every later stage streams the result.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

from gnnbench.data.canonical import write_canonical_edges
from gnnbench.data.features import FeatureFile, feature_dtype_of
from gnnbench.data.graph_ops import streaming_degree
from gnnbench.data.import_checks import (
    check_disk_space,
    check_node_memory,
    compact_labels,
    nonfinite_policy,
    os_error_as_data_error,
    scan_nonfinite,
)
from gnnbench.data.npy_file import NpyLayout
from gnnbench.data.store import FORMAT_VERSION, GraphStore
from gnnbench.errors import ConfigError, DataError
from gnnbench.process.atomic import atomic_directory
from gnnbench.schema import DatasetKeys


class GraphStoreBuilder:
    """Collects one dataset and writes it as a GraphStore at `dest` (atomically).

    Use as a context manager; `finish()` returns the opened store. Leaving the block with an
    exception removes everything written.
    """

    def __init__(
        self,
        dest: Path,
        name: str,
        source: str,
        seed: int = DatasetKeys.split_seed,
        normalize_features: bool = DatasetKeys.normalize_features,
        nonfinite: str = DatasetKeys.nonfinite,
        import_memory_gb: float = DatasetKeys.import_memory_gb,
        feature_dtype: str = DatasetKeys.feature_dtype,
        split_fractions: tuple[float, float, float] = DatasetKeys.split_fractions,
    ):
        self.dest = Path(dest)
        self.import_memory = int(import_memory_gb * 2**30)  # bytes for deduplication
        self.nonfinite = nonfinite_policy(nonfinite)
        self.feature_dtype = feature_dtype_of(feature_dtype)
        self.split_fractions = split_fractions_of(split_fractions)
        self._edge_origin: str | None = None
        self.normalize_features = normalize_features
        self.name = name
        self.source = source
        self.seed = seed
        self.num_nodes: int | None = None
        self._chunks = 0
        self._labels: np.ndarray | None = None
        self._split: dict[str, np.ndarray] | None = None
        self._feature_dim = 0
        self._extra_meta: dict = {}
        self._after_edges: list = []
        self._atomic = atomic_directory(self.dest)
        self._finished = False

    def __enter__(self) -> GraphStoreBuilder:
        try:
            self.tmp = self._atomic.__enter__()
        except OSError as exc:
            raise (os_error_as_data_error(exc, self.dest.parent) or exc) from None
        self._raw = open(self.tmp / "raw_edges.bin", "wb")
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if not self._raw.closed:
            try:
                self._raw.close()
            except OSError:  # a full disk fails the final flush too; the error below says so
                pass
        if exc_type is None and not self._finished:
            incomplete = RuntimeError(f"{self.dest}: builder left without finish()")
            self._atomic.__exit__(RuntimeError, incomplete, None)  # removes the temporary dir
            raise incomplete
        try:
            handled = bool(self._atomic.__exit__(exc_type, exc, tb))
        except OSError as error:  # the rename into place failed; the temporary dir is removed
            raise (os_error_as_data_error(error, self.dest.parent) or error) from None
        # read-only or full GNNBENCH_HOME while writing: one line (the temporary dir is removed)
        converted = os_error_as_data_error(exc, self.dest.parent) if exc_type else None
        if isinstance(exc, OSError) and converted:
            raise converted from None
        return handled

    # --- inputs ------------------------------------------------------------------------------
    def set_num_nodes(self, num_nodes: int, origin: str = "dataset.num_nodes") -> None:
        """Fix the node count: ids must then lie in [0, num_nodes) and are kept as they are.

        Checked against free memory first: `origin` names where the count came from.
        """
        check_node_memory(int(num_nodes), origin)
        self.num_nodes = int(num_nodes)

    def add_edges(self, edges: np.ndarray, origin: str) -> None:
        """Append a chunk of (k, 2) integer ids; `origin` names the file for error messages."""
        edges = np.asarray(edges)
        if edges.ndim != 2 or edges.shape[1] != 2:
            raise DataError(f"{origin}: expected pairs of node ids, got shape {edges.shape}")
        self._edge_origin = origin
        if edges.size == 0:
            return
        if not np.issubdtype(edges.dtype, np.integer):
            raise DataError(f"{origin}: node ids must be integers, found {edges.dtype}")
        low, high = int(edges.min()), int(edges.max())
        if low < 0:
            raise DataError(f"{origin}: negative node id {low}")
        if self.num_nodes is not None and high >= self.num_nodes:
            raise DataError(
                f"{origin}: node id {high} out of range (expected ids in [0, {self.num_nodes}))"
            )
        check_disk_space(self.tmp, edges.shape[0] * 16, "raw_edges.bin")
        np.ascontiguousarray(edges, dtype="<i8").tofile(self._raw)
        self._chunks += 1

    def set_features(self, features: np.ndarray) -> None:
        """Write the (N, F) feature matrix in `feature_dtype`."""
        features = np.asarray(features)
        if features.ndim != 2:
            raise DataError(f"{self.source}: features must be 2-D, got shape {features.shape}")
        out = self.open_features(*features.shape)
        out[:] = features
        out.flush()

    def open_features(self, num_nodes: int, dim: int) -> FeatureFile:
        """The (N, F) feat.npy, its disk reserved, for sources that fill it a row block at a
        time (`out[start:stop] = rows`, then `out.flush()`)."""
        self._feature_dim = int(dim)
        needed = int(num_nodes) * int(dim) * self.feature_dtype.itemsize
        check_disk_space(self.tmp, needed, "feat.npy")
        return FeatureFile(self.tmp / "feat.npy", num_nodes, dim, self.feature_dtype)

    def after_edges(self, write) -> None:
        """Run `write()` (a generator's feature rows) once the canonical edges are written and
        the raw edge file is gone: the import's disk peak then never holds both."""
        self._after_edges.append(write)

    def set_labels(self, labels: np.ndarray, multilabel: bool = False) -> None:
        labels = np.asarray(labels)
        self._labels = labels.astype(np.uint8 if multilabel else np.int64)

    def set_split(self, train: np.ndarray, val: np.ndarray, test: np.ndarray) -> None:
        self._split = {
            "train": np.asarray(train, dtype=np.int64),
            "val": np.asarray(val, dtype=np.int64),
            "test": np.asarray(test, dtype=np.int64),
        }

    def add_meta(self, **fields) -> None:
        self._extra_meta.update(fields)

    def record_meta(self, **fields) -> None:
        """Add fields to the finished store's meta.json (figures known only after finish())."""
        meta = json.loads((self.tmp / "meta.json").read_text())
        meta.update(fields)
        (self.tmp / "meta.json").write_text(json.dumps(meta, indent=2))

    # --- output ------------------------------------------------------------------------------
    def finish(self) -> None:
        """Write edges, degrees, split and meta; the directory is renamed into place on exit."""
        self._raw.close()
        num_nodes, num_edges, id_dtype = write_canonical_edges(
            self.tmp, self.num_nodes, self.import_memory
        )
        if not num_edges:
            raise DataError(f"{self._origin()}: no edges after removing self-loops")
        os.remove(self.tmp / "raw_edges.bin")
        for write in self._after_edges:
            write()
        self._check_node_arrays(num_nodes)
        if self._feature_dim:
            origin = self._origin(features=True)
            bad_rows = scan_nonfinite(self.tmp / "feat.npy", self.nonfinite, origin)
            if bad_rows:
                self._extra_meta["nonfinite_features"] = bad_rows
        if self.normalize_features and self._feature_dim:
            row_normalize(self.tmp / "feat.npy")
            self._extra_meta["feature_normalization"] = "row (L1)"
        self._write_split(num_nodes)
        meta = self._meta(num_nodes, num_edges, id_dtype)
        (self.tmp / "meta.json").write_text(json.dumps(meta, indent=2))
        store = GraphStore(self.tmp)
        np.save(self.tmp / "degree.npy", streaming_degree(store.edge_stream(), num_nodes))
        meta["fingerprint"] = fingerprint(self.tmp, num_nodes)
        (self.tmp / "meta.json").write_text(json.dumps(meta, indent=2))
        self._finished = True

    def _check_node_arrays(self, num_nodes: int) -> None:
        if self.num_nodes is None and (self._feature_dim or self._labels is not None):
            # relabelled ids would no longer match the rows of features or labels
            raise DataError(f"{self.source}: features or labels given without a fixed node count")
        if self._feature_dim:
            rows = NpyLayout.read(self.tmp / "feat.npy").shape[0]
            if rows != num_nodes:
                raise DataError(f"{self.source}: {rows} feature rows for {num_nodes} nodes")
        if self._labels is not None:
            if len(self._labels) != num_nodes:
                raise DataError(f"{self.source}: {len(self._labels)} labels for {num_nodes} nodes")
            if self._labels.ndim == 1:
                # classes 1..C or with gaps would otherwise give max+1 output classes
                self._labels, values = compact_labels(self._labels)
                self._extra_meta["label_values"] = values
            np.save(self.tmp / "label.npy", self._labels)

    def _origin(self, features: bool = False) -> str:
        """The raw file an error names: the edges' file or (for features) the source's raw file."""
        raw_files = [str(path) for path in self._extra_meta.get("raw_files") or []]
        candidates = (
            [*raw_files, self._edge_origin] if features else [self._edge_origin, *raw_files]
        )
        return next((name for name in candidates if name), self.source)

    def _write_split(self, num_nodes: int) -> None:
        split = self._split
        if split is None:
            split = seeded_split(num_nodes, self.seed, self.split_fractions)
            shares = "/".join(f"{100 * share:g}" for share in self.split_fractions)
            self._extra_meta["split_rule"] = f"seeded {shares} (seed {self.seed})"
        for key, ids in split.items():
            if len(ids) and (ids.min() < 0 or ids.max() >= num_nodes):
                raise DataError(f"{self.source}: {key} split holds ids outside [0, {num_nodes})")
        np.savez(self.tmp / "split.npz", **split)

    def _meta(self, num_nodes: int, num_edges: int, id_dtype: np.dtype) -> dict:
        labels = self._labels
        multilabel = labels is not None and labels.ndim == 2
        if labels is None:
            num_classes = 0
        elif multilabel:
            num_classes = int(labels.shape[1])
        else:
            num_classes = int(labels.max()) + 1 if len(labels) else 0
        return {
            "name": self.name,
            "num_nodes": num_nodes,
            "num_edges": num_edges,
            "id_dtype": id_dtype.name,
            "feature_dim": self._feature_dim,
            "feature_dtype": self.feature_dtype.name,
            "num_classes": num_classes,
            "multilabel": multilabel,
            "source": self.source,
            "stream_order": "source order (first occurrence)",
            "fingerprint": "",
            "format_version": FORMAT_VERSION,
            **self._extra_meta,
        }


def row_normalize(path: Path, block_bytes: int = 64 << 20) -> None:
    """Divide each feature row by its sum (PyG's NormalizeFeatures), in place, a chunk at a time.

    Dense binary bag-of-words rows (amazon_cs: ~270 of 767 words set) otherwise give first-layer
    inputs so large that Adam's first steps overshoot.
    """
    for block in NpyLayout.read(path).row_blocks(block_bytes, "r+"):
        chunk = block.astype(
            np.float32
        )  # float16 rows: summed and divided in float32, rounded once
        chunk /= np.maximum(chunk.sum(axis=1, keepdims=True), 1.0)  # as PyG: sums < 1 kept
        block[:] = chunk


def seeded_split(
    num_nodes: int, seed: int, fractions: tuple[float, float, float] = DatasetKeys.split_fractions
) -> dict[str, np.ndarray]:
    """The rule for sources without a split: a seeded split of the nodes (CATGNN's 70/15/15 of
    all nodes by default; fractions summing under 1 leave the rest unlabelled, as Papers100M's
    1.1/0.1/0.2 %)."""
    order = np.random.default_rng(seed).permutation(num_nodes)
    n_train = int(round(fractions[0] * num_nodes))
    n_val = int(round(fractions[1] * num_nodes))
    covers_all = abs(sum(fractions) - 1.0) < 1e-9  # then the test set is every node left
    n_test = num_nodes - n_train - n_val if covers_all else int(round(fractions[2] * num_nodes))
    return {
        "train": np.sort(order[:n_train]),
        "val": np.sort(order[n_train : n_train + n_val]),
        "test": np.sort(order[n_train + n_val : n_train + n_val + n_test]),
    }


def split_fractions_of(value: object) -> tuple[float, float, float]:
    """`dataset.split_fractions`: three shares (train, val, test), each in [0, 1], summing <= 1."""
    try:
        shares = tuple(float(share) for share in value)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        shares = ()
    if len(shares) != 3 or min(shares) < 0 or sum(shares) > 1 + 1e-9:
        raise ConfigError(
            "dataset.split_fractions: expected three fractions (train, val, test) >= 0 summing "
            f"to at most 1, got {value!r}"
        )
    return shares  # type: ignore[return-value]


def fingerprint(directory: Path, num_nodes: int) -> str:
    """Hash of the content files and node count, so caches keyed on it change with the data."""
    digest = hashlib.blake2b(str(num_nodes).encode(), digest_size=12)
    for name in ("edges.bin", "feat.npy", "label.npy", "split.npz"):
        path = Path(directory) / name
        if not path.is_file():
            continue
        digest.update(name.encode())
        with open(path, "rb") as handle:
            while block := handle.read(4 << 20):  # a small fixed buffer in the import peak
                digest.update(block)
    return digest.hexdigest()
