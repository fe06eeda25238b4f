"""Node features and labels that come as files beside an edge list (MUSAE, Twitch, Deezer, ...).

Every row of these files names its node by the edge list's own id, so an edge list imported with
them keeps its ids (see gnnbench/data/sources/edgelist.py). Features: a JSON object
`{"<node id>": [feature ids]}` (a 0/1 bag of features, dimension max feature id + 1), a CSV/TSV
(node id, then the values) or an .npy matrix (row i = node i). Labels: a CSV/TSV of node id and
label columns, with an optional header line; text or boolean labels become class ids in sorted order.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from gnnbench.data.builder import GraphStoreBuilder
from gnnbench.data.sources._io import row_chunk, starts_with, write_feature_rows
from gnnbench.data.sources._text import data_suffix, iter_table, read_header, resolve_delimiter
from gnnbench.errors import ConfigError, DataError

_GZIP_MAGIC = b"\x1f\x8b"
FEATURE_SUFFIXES = (".json", ".csv", ".tsv", ".txt", ".npy")
LABEL_SUFFIXES = (".csv", ".tsv", ".txt")


@dataclass
class NodeFeatures:
    """Feature rows and the node id of each row (`ids` None: row i is node i)."""

    path: Path
    rows: np.ndarray | sp.csr_matrix
    ids: np.ndarray | None

    def max_id(self) -> int:
        if self.ids is None:
            return self.rows.shape[0] - 1
        return int(self.ids.max(initial=-1))

    def write(self, builder: GraphStoreBuilder, num_nodes: int) -> None:
        """Write one float32 row per node 0..num_nodes-1; nodes the file does not list get zeros."""
        if self.ids is None:
            if self.rows.shape[0] != num_nodes:
                raise DataError(
                    f"{self.path}: {self.rows.shape[0]} feature rows, but the graph has {num_nodes}"
                    " nodes (row i must be node i)"
                )
            write_feature_rows(builder, self.rows)
            return
        out = builder.open_features(num_nodes, self.rows.shape[1])  # zero-filled
        step = row_chunk(self.rows.shape[1])
        for start in range(0, len(self.ids), step):
            rows = self.rows[start : start + step]
            out[self.ids[start : start + step]] = rows.toarray() if sp.issparse(rows) else rows
        out.flush()
        del out


def read_node_features(path: Path, delimiter: object) -> NodeFeatures:
    """Features from a JSON bag-of-features, a CSV/TSV with the node id first, or an .npy."""
    suffix = data_suffix(path)
    if suffix == ".json":
        return _json_bag_of_features(path)
    if suffix == ".npy":
        return NodeFeatures(path, _npy_matrix(path), None)
    if suffix in (".csv", ".tsv", ".txt"):
        return _csv_features(path, resolve_delimiter(delimiter, path))
    raise ConfigError(
        f"dataset.features_path: {path}: expected one of {', '.join(FEATURE_SUFFIXES)}"
        " (optionally .gz, except .npy)"
    )


def _json_bag_of_features(path: Path) -> NodeFeatures:
    """`{"node id": [feature ids]}` → a sparse 0/1 (nodes, max feature id + 1) matrix."""
    opener = gzip.open if starts_with(path, _GZIP_MAGIC) else open
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            table = json.load(handle)
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: not a readable JSON file ({exc})") from None
    if not isinstance(table, dict) or not table:
        raise DataError(f"{path}: expected a JSON object {{node id: [feature ids]}}")
    try:
        ids = np.array([int(key) for key in table], dtype=np.int64)
        lengths = np.fromiter((len(value) for value in table.values()), np.int64, len(table))
        columns = np.fromiter(
            (int(feature) for value in table.values() for feature in value),
            np.int64,
            int(lengths.sum()),
        )
    except (TypeError, ValueError):
        raise DataError(
            f"{path}: expected integer node ids mapped to lists of integer feature ids"
        ) from None
    _check_ids(ids, path, "node id")
    if len(columns) and columns.min() < 0:
        raise DataError(f"{path}: negative feature id {int(columns.min())}")
    rows = np.repeat(np.arange(len(ids), dtype=np.int64), lengths)
    dim = int(columns.max(initial=-1)) + 1
    matrix = sp.csr_matrix(
        (np.ones(len(columns), np.float32), (rows, columns)), shape=(len(ids), max(dim, 1))
    )
    matrix.data[:] = 1.0  # a feature listed twice for one node is still present once
    return NodeFeatures(path, matrix, ids)


def _npy_matrix(path: Path) -> np.ndarray:
    try:
        matrix = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise DataError(f"{path}: not a readable .npy array ({exc})") from None
    if matrix.ndim != 2 or not np.issubdtype(matrix.dtype, np.number):
        raise DataError(
            f"{path}: expected a 2-D numeric array, found {matrix.dtype} {matrix.shape}"
        )
    return matrix


def _csv_features(path: Path, delimiter: str | None) -> NodeFeatures:
    """Dense rows `id, x_1, ..., x_F`, parsed block-wise by the vectorised number parser."""
    what = "a node id then the feature values (the same count on every line)"
    blocks = list(iter_table(path, np.float64, what, delimiter, min_columns=2, header=True))
    if not blocks:
        raise DataError(f"{path}: no feature rows found")
    table = np.concatenate(blocks)
    ids = table[:, 0]
    if not np.array_equal(ids, np.round(ids)):
        raise DataError(f"{path}: the first column must hold integer node ids")
    ids = ids.astype(np.int64)
    _check_ids(ids, path, "node id")
    return NodeFeatures(path, table[:, 1:].astype(np.float32), ids)


@dataclass
class NodeLabels:
    """One int64 label per listed node id; `classes` names the ids of text labels (else None)."""

    path: Path
    ids: np.ndarray
    labels: np.ndarray
    classes: list[str] | None

    def max_id(self) -> int:
        return int(self.ids.max(initial=-1))

    def write(self, builder: GraphStoreBuilder, num_nodes: int) -> None:
        """One label per node 0..num_nodes-1; a node the file leaves out is an error, not a guess."""
        if len(self.ids) != num_nodes:
            missing = np.setdiff1d(np.arange(num_nodes), self.ids)
            raise DataError(
                f"{self.path}: labels for {len(self.ids)} of {num_nodes} nodes (every node id of"
                f" the graph needs one; node {int(missing[0])} has none)"
            )
        per_node = np.empty(num_nodes, dtype=np.int64)
        per_node[self.ids] = self.labels
        builder.set_labels(per_node)
        if self.classes is not None:
            builder.add_meta(class_names=self.classes)


def read_node_labels(path: Path, delimiter: object, column: object = None) -> NodeLabels:
    """Node ids and labels from a CSV/TSV of `id, label [, ...]` (optional header line).

    pandas reads the file because label files mix in text columns (MUSAE's names, page types,
    True/False flags) that the numeric block parser cannot take.
    """
    import pandas as pd

    if data_suffix(path) not in LABEL_SUFFIXES:
        raise ConfigError(
            f"dataset.labels_path: {path}: expected one of {', '.join(LABEL_SUFFIXES)} (or .gz)"
        )
    sep = resolve_delimiter(delimiter, path) or r"\s+"
    # no comment lines in label files: a '#' may well be part of a text label
    names = read_header(path, None if sep == r"\s+" else sep, comment_chars=b"")
    compression = "gzip" if starts_with(path, _GZIP_MAGIC) else None
    try:
        table = pd.read_csv(
            path,
            sep=sep,
            header=0 if names else None,
            compression=compression,
            skipinitialspace=True,
        )
    except (ValueError, OSError, UnicodeDecodeError, EOFError) as exc:
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(f"{path}: not a readable label table ({first_line})") from None
    label_column = _label_column(table, column, path)
    ids = _integer_column(table.iloc[:, 0], path, "the first column (node ids)")
    _check_ids(ids, path, "node id")
    labels, classes = _class_ids(table[label_column], path, label_column)
    return NodeLabels(path, ids, labels, classes)


def _label_column(table, column: object, path: Path):
    """`dataset.labels_column`: a header name or a 0-based index; unset → the second of two."""
    columns = list(table.columns)
    if column is None or column == "":
        if len(columns) == 2:
            return columns[1]
        raise ConfigError(
            f"dataset.labels_column: {path} has {len(columns)} columns ({_shown(columns)});"
            " name the label column or give its 0-based index"
        )
    if column in columns:
        return column
    if str(column).lstrip("-").isdigit() and 0 < int(column) < len(columns):
        return columns[int(column)]
    raise ConfigError(
        f"dataset.labels_column: {column!r} is not a column of {path} (found {_shown(columns)})"
    )


def _shown(columns: list) -> str:
    return ", ".join(str(name) for name in columns[:12]) + (", ..." if len(columns) > 12 else "")


def _integer_column(values, path: Path, what: str) -> np.ndarray:
    array = values.to_numpy()
    if array.dtype.kind in "iu":
        return array.astype(np.int64)
    if (
        array.dtype.kind == "f"
        and np.isfinite(array).all()
        and np.array_equal(array, array.round())
    ):
        return array.astype(np.int64)
    raise DataError(f"{path}: {what} must hold integers, found {array.dtype} values")


def _class_ids(values, path: Path, column) -> tuple[np.ndarray, list[str] | None]:
    """Integer labels as they are; text or boolean labels → ids 0..C-1 in sorted order."""
    if values.isna().any():
        line = int(np.argmax(values.isna().to_numpy()))
        raise DataError(f"{path}: column {column!r} has a missing label (data row {line + 1})")
    array = values.to_numpy()
    if array.dtype.kind in "iuf":
        return _integer_column(values, path, f"column {column!r} (labels)"), None
    classes, labels = np.unique(array.astype(str), return_inverse=True)
    return labels.astype(np.int64), [str(name) for name in classes]


def _check_ids(ids: np.ndarray, path: Path, what: str) -> None:
    if len(ids) and ids.min() < 0:
        raise DataError(f"{path}: negative {what} {int(ids.min())}")
    unique, counts = np.unique(ids, return_counts=True)
    if len(unique) != len(ids):
        raise DataError(f"{path}: {what} {int(unique[np.argmax(counts > 1)])} appears twice")
