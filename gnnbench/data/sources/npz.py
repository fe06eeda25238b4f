"""gnn-benchmark .npz graphs (Amazon, Coauthor, ...): CSR adjacency, CSR or dense features, labels.

Keys: adj_data/adj_indices/adj_indptr/adj_shape, attr_data/attr_indices/attr_indptr/attr_shape (or a
dense attr_matrix), labels. Loaded without pickle. These files carry no split, so the builder's
seeded 70/15/15 split is used.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp

from gnnbench.data.builder import GraphStoreBuilder
from gnnbench.data.datasets import raw_path
from gnnbench.data.sources import SOURCES
from gnnbench.data.sources._io import (
    EDGE_CHUNK,
    NpzArrays,
    check_node_array,
    write_feature_rows,
)
from gnnbench.errors import DataError

EXPECTED = "gnn-benchmark keys adj_*, attr_* or attr_matrix, labels"
CSR_PARTS = ("data", "indices", "indptr", "shape")
READ_KEYS = {f"{m}_{part}" for m in ("adj", "attr") for part in CSR_PARTS}
READ_KEYS |= {"adj_matrix", "attr_matrix", "labels"}


@SOURCES.register("npz")
def import_npz(builder: GraphStoreBuilder, dataset: Mapping[str, Any]) -> None:
    """Edges from the CSR adjacency, features densified row-chunk-wise, integer labels."""
    path = raw_path(dataset, "path")
    with NpzArrays(path, EXPECTED) as npz:
        refuse_pickled(npz)
        adjacency = csr_from_keys(npz, "adj")
        num_nodes = adjacency.shape[0]
        if adjacency.shape[1] != num_nodes:
            raise DataError(f"{path}: adjacency must be square, found shape {adjacency.shape}")
        builder.set_num_nodes(num_nodes)
        add_csr_edges(builder, adjacency, str(path))
        write_features(builder, npz, num_nodes)
        if npz.has("labels"):
            labels = npz.get("labels")
            check_node_array(labels, num_nodes, "'labels'", path)
            builder.set_labels(labels, multilabel=labels.ndim == 2)
    builder.add_meta(raw_files=[str(path)])


# The keys this source reads (gnnbench/data/spec.py rejects any other).
import_npz.config_keys = ("path",)


def refuse_pickled(npz: NpzArrays) -> None:
    """A file of pickled scipy matrices (the original gnn-benchmark release) is not unpickled:
    the error gives the one command that converts it, for a user who trusts the file."""
    # only the keys this source reads: names and descriptions beside them (shchur/gnn-benchmark's
    # node_names, class_names) may be Python objects without making the graph unreadable
    pickled = [key for key in npz.pickled_keys() if key in READ_KEYS]
    if not pickled:
        return
    adjacency = "adj_matrix" if "adj_matrix" in pickled else pickled[0]
    code = [
        "import numpy as np",
        f"d = dict(np.load({str(npz.path)!r}, allow_pickle=True))",
        f"A = d[{adjacency!r}].item().tocsr()",
    ]
    keys = ["adj_data=A.data, adj_indices=A.indices, adj_indptr=A.indptr, adj_shape=A.shape"]
    if "attr_matrix" in pickled:
        code.append("X = d['attr_matrix'].item().tocsr()")
        keys.append(
            "attr_data=X.data, attr_indices=X.indices, attr_indptr=X.indptr, attr_shape=X.shape"
        )
    elif npz.has("attr_matrix"):
        keys.append("attr_matrix=d['attr_matrix']")
    if npz.has("labels"):
        labels = "d['labels'].item().toarray()" if "labels" in pickled else "d['labels']"
        keys.append(f"labels={labels}")
    target = npz.path.with_name(npz.path.stem + "_plain.npz")
    code.append(f"np.savez({str(target)!r}, {', '.join(keys)})")
    raise DataError(
        f"{npz.path}: holds pickled Python objects ({', '.join(pickled)}), which are not loaded"
        " (unpickling a file can run code); if you trust it, convert it to the gnn-benchmark"
        f' key layout with: python -c "{"; ".join(code)}"'
    )


def csr_from_keys(npz: NpzArrays, prefix: str) -> sp.csr_matrix:
    """The CSR matrix stored as <prefix>_data/_indices/_indptr/_shape; inconsistent → DataError."""
    parts = [npz.get(f"{prefix}_{key}", ndim=1) for key in ("data", "indices", "indptr", "shape")]
    data, indices, indptr, shape = parts
    if (
        len(shape) != 2
        or len(indptr) != shape[0] + 1
        or len(indices) != len(data)
        or indptr[-1] != len(data)
    ):
        raise DataError(
            f"{npz.path}: '{prefix}_*' arrays do not form a CSR matrix of shape {tuple(int(v) for v in shape)}"
        )
    if len(indices) and (indices.min() < 0 or indices.max() >= shape[1]):
        raise DataError(f"{npz.path}: '{prefix}_indices' holds column ids outside [0, {shape[1]})")
    return sp.csr_matrix((data, indices, indptr), shape=tuple(int(v) for v in shape))


def add_csr_edges(builder: GraphStoreBuilder, adjacency: sp.csr_matrix, origin: str) -> None:
    """Every stored entry (row, column) is an edge, handed over in bounded row ranges."""
    indptr = adjacency.indptr.astype(np.int64)
    rows_per_chunk = max(1, int(adjacency.shape[0] * EDGE_CHUNK / max(1, adjacency.nnz)))
    for start in range(0, adjacency.shape[0], rows_per_chunk):
        stop = min(adjacency.shape[0], start + rows_per_chunk)
        lengths = np.diff(indptr[start : stop + 1])
        sources = np.repeat(np.arange(start, stop, dtype=np.int64), lengths)
        targets = adjacency.indices[indptr[start] : indptr[stop]]
        builder.add_edges(np.stack([sources, targets.astype(np.int64)], axis=1), origin=origin)


def write_features(builder: GraphStoreBuilder, npz: NpzArrays, num_nodes: int) -> None:
    """CSR attributes (attr_*) or a dense attr_matrix; none present → structure only."""
    if npz.has("attr_data"):
        features = csr_from_keys(npz, "attr")
    elif npz.has("attr_matrix"):
        features = npz.get("attr_matrix", ndim=2)
    else:
        return
    check_node_array(features, num_nodes, "features", npz.path)
    write_feature_rows(builder, features)
