"""MATLAB .mat graphs (Facebook100, BlogCatalog, Flickr, PPI as distributed in .mat form).

The adjacency is `dataset.adjacency_key` or, unset, the file's only square sparse matrix
(Facebook100: `A`, BlogCatalog: `network`); every stored entry is an edge. Labels are optional
(`dataset.labels_key`): a sparse or dense 0/1 (N, C) matrix is multi-label (BlogCatalog's `group`),
a vector is one class per node, and a dense (N, k) table needs `dataset.labels_column` (Facebook100's
`local_info`: status, gender, major, ...). Features are optional (`dataset.features_key`, dense or
sparse (N, F)). No split in these files: the builder's seeded 70/15/15 split is used. MATLAB v7.3
files are HDF5 and need converting first (no h5py dependency here).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import scipy.io
import scipy.sparse as sp
from scipy.io.matlab import MatReadError

from gnnbench.data.builder import GraphStoreBuilder
from gnnbench.data.datasets import raw_path
from gnnbench.data.sources import SOURCES
from gnnbench.data.sources._io import check_node_array, write_feature_rows
from gnnbench.data.sources.npz import add_csr_edges
from gnnbench.errors import ConfigError, DataError

V73_HINT = (
    "MATLAB v7.3 (HDF5) file, which scipy cannot read: re-save it in MATLAB/Octave with"
    " save(name, '-v7') or convert it with h5py"
)


@SOURCES.register("mat")
def import_mat(builder: GraphStoreBuilder, dataset: Mapping[str, Any]) -> None:
    """Edges from the sparse adjacency, then the optional labels and features."""
    path = raw_path(dataset, "path")
    contents = load_mat(path)
    adjacency_key = find_adjacency_key(contents, dataset.get("adjacency_key"), path)
    adjacency = sp.csr_matrix(contents[adjacency_key])
    num_nodes = adjacency.shape[0]
    if adjacency.shape[1] != num_nodes:
        raise DataError(f"{path}: '{adjacency_key}' must be square, found shape {adjacency.shape}")
    builder.set_num_nodes(num_nodes)
    add_csr_edges(builder, adjacency, str(path))
    del adjacency
    if dataset.get("labels_key"):
        labels_key = _present_key(contents, str(dataset["labels_key"]), path, "labels_key")
        labels, multilabel = node_labels(
            contents[labels_key], dataset.get("labels_column"), path, labels_key
        )
        check_node_array(labels, num_nodes, f"'{labels_key}'", path)
        builder.set_labels(labels, multilabel=multilabel)
    if dataset.get("features_key"):
        features_key = _present_key(contents, str(dataset["features_key"]), path, "features_key")
        features = node_features(contents[features_key], path, features_key)
        check_node_array(features, num_nodes, f"'{features_key}'", path)
        write_feature_rows(builder, features)
    builder.add_meta(raw_files=[str(path)], adjacency_key=adjacency_key)


# The keys this source reads (gnnbench/data/spec.py rejects any other).
import_mat.config_keys = ("path", "adjacency_key", "labels_key", "labels_column", "features_key")


def load_mat(path: Path) -> dict[str, Any]:
    """The file's variables (MATLAB's `__header__` etc. dropped); unreadable → one DataError."""
    try:
        contents = scipy.io.loadmat(path)
    except NotImplementedError:  # scipy's answer to v7.3 (HDF5) files
        raise DataError(f"{path}: {V73_HINT}") from None
    except (MatReadError, ValueError, TypeError, IndexError, OSError, EOFError) as exc:
        # scipy reads any bytes as a header: a text file fails with a bare IndexError
        raise DataError(f"{path}: not a readable MATLAB .mat file ({exc})") from None
    return {key: value for key, value in contents.items() if not key.startswith("__")}


def find_adjacency_key(contents: Mapping[str, Any], key: object, path: Path) -> str:
    """`dataset.adjacency_key`, or the only square sparse matrix of the file."""
    if key:
        return _present_key(contents, str(key), path, "adjacency_key")
    candidates = [
        name
        for name, value in contents.items()
        if sp.issparse(value) and value.ndim == 2 and value.shape[0] == value.shape[1]
    ]
    if len(candidates) == 1:
        return candidates[0]
    found = "none" if not candidates else ", ".join(candidates)
    raise ConfigError(
        f"dataset.adjacency_key: {path} has {found} square sparse matrices among its keys"
        f" ({_describe(contents)}); name the adjacency"
    )


def _present_key(contents: Mapping[str, Any], key: str, path: Path, option: str) -> str:
    if key not in contents:
        raise ConfigError(
            f"dataset.{option}: {path} has no key '{key}' (found {_describe(contents)})"
        )
    return key


def _describe(contents: Mapping[str, Any]) -> str:
    """Each key with its shape and kind, e.g. `A (1000x1000 sparse), local_info (1000x7)`."""
    parts = []
    for name, value in contents.items():
        shape = "x".join(str(size) for size in getattr(value, "shape", ()))
        parts.append(f"{name} ({shape}{' sparse' if sp.issparse(value) else ''})")
    return ", ".join(parts) or "no variables"


def node_labels(value: Any, column: object, path: Path, key: str) -> tuple[np.ndarray, bool]:
    """(labels, multilabel): 0/1 (N, C) → multi-label; a vector or a chosen column → classes."""
    if sp.issparse(value):
        value = value.toarray()
    array = np.asarray(value)
    if array.ndim == 2 and 1 in array.shape:
        array = array.reshape(-1)
    if array.ndim == 2 and column is not None and column != "":
        if not str(column).isdigit() or int(column) >= array.shape[1]:
            raise ConfigError(
                f"dataset.labels_column: '{key}' of {path} has columns 0..{array.shape[1] - 1},"
                f" got {column!r}"
            )
        array = array[:, int(column)]
    if array.ndim == 2:
        if not np.isin(array, (0, 1)).all():
            raise ConfigError(
                f"dataset.labels_column: '{key}' of {path} is a {array.shape} table, not a 0/1"
                " multi-label matrix; choose its label column (0-based)"
            )
        # C order: loadmat's (and a csc matrix's) Fortran order cannot be mapped by rows
        return np.ascontiguousarray(array, dtype=np.uint8), True
    if array.ndim != 1 or not np.issubdtype(array.dtype, np.number):
        raise DataError(
            f"{path}: '{key}' must be numeric labels, found {array.dtype} {array.shape}"
        )
    if not np.array_equal(array, np.round(array)):
        raise DataError(f"{path}: '{key}' must hold integer class ids, found fractional values")
    return array.astype(np.int64), False


def node_features(value: Any, path: Path, key: str) -> np.ndarray | sp.csr_matrix:
    """A dense or sparse (N, F) numeric matrix; sparse stays CSR until written row chunk-wise."""
    if sp.issparse(value):
        return sp.csr_matrix(value)
    array = np.asarray(value)
    if array.ndim != 2 or not np.issubdtype(array.dtype, np.number):
        raise DataError(
            f"{path}: '{key}' must be a 2-D numeric matrix, found {array.dtype} {array.shape}"
        )
    return array
