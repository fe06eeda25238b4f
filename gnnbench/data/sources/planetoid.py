"""Planetoid citation graphs (Cora, Citeseer) from Kipf's `ind.<name>.*` pickles.

Reproduces the GCN / PyG loading: nodes are allx then tx rows, test rows are put back at the ids
listed in `test.index`, Citeseer's missing (isolated) test ids get zero feature rows and label 0,
and the standard split is train = the first len(y) nodes, val = the next 500, test = test.index.
Pickles are read with an allow-list unpickler: only numpy arrays, scipy CSR matrices and the
graph's dict of lists can be built from them.
"""

from __future__ import annotations

import itertools
import pickle
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from gnnbench.data.builder import GraphStoreBuilder
from gnnbench.data.datasets import raw_path
from gnnbench.data.sources import SOURCES
from gnnbench.data.sources._io import write_feature_rows
from gnnbench.data.sources._text import read_int_column
from gnnbench.errors import ConfigError, DataError

NUM_VAL = 500
_PARTS = ("x", "y", "tx", "ty", "allx", "ally", "graph")
_ALLOWED = {
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("numpy.core.multiarray", "_reconstruct"): np.empty(0).__reduce__()[0],
    ("numpy._core.multiarray", "_reconstruct"): np.empty(0).__reduce__()[0],
    ("scipy.sparse.csr", "csr_matrix"): sp.csr_matrix,
    ("scipy.sparse._csr", "csr_matrix"): sp.csr_matrix,
    ("collections", "defaultdict"): defaultdict,
    ("__builtin__", "list"): list,
    ("builtins", "list"): list,
}


class _PlanetoidUnpickler(pickle.Unpickler):
    """Refuses every global outside the allow-list, so a pickle cannot run arbitrary code."""

    def find_class(self, module: str, name: str) -> Any:
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(f"unexpected object {module}.{name}") from None


def load_pickle(path: Path) -> Any:
    """One Planetoid pickle (protocol 2, Python 2 strings → latin1)."""
    try:
        with open(path, "rb") as handle:
            return _PlanetoidUnpickler(handle, encoding="latin1").load()
    except FileNotFoundError:
        raise DataError(f"{path}: file not found (expected Planetoid file ind.<name>.*)") from None
    except (
        pickle.UnpicklingError,
        EOFError,
        ValueError,
        TypeError,
        AttributeError,
        IndexError,
    ) as exc:
        raise DataError(f"{path}: not a readable Planetoid pickle ({exc})") from None


@SOURCES.register("planetoid")
def import_planetoid(builder: GraphStoreBuilder, dataset: Mapping[str, Any]) -> None:
    """Features, labels, standard split and the citation graph of one Planetoid dataset."""
    folder = raw_path(dataset, "path")
    name = dataset.get("planetoid_name")
    if not name:
        raise ConfigError(
            "dataset.planetoid_name: expected a Planetoid name such as cora or citeseer"
        )
    prefix = folder / f"ind.{str(name).lower()}"
    parts = {part: load_pickle(Path(f"{prefix}.{part}")) for part in _PARTS}
    test_index = read_test_index(Path(f"{prefix}.test.index"))
    features, onehot = node_rows(parts, test_index, prefix)
    num_nodes = features.shape[0]
    builder.set_num_nodes(num_nodes)
    builder.add_edges(
        graph_edges(parts["graph"], Path(f"{prefix}.graph")), origin=f"{prefix}.graph"
    )
    write_feature_rows(builder, features)
    builder.set_labels(onehot.argmax(axis=1))
    num_train = len(parts["y"])
    builder.set_split(
        train=np.arange(num_train),
        val=np.arange(num_train, num_train + NUM_VAL),
        test=np.sort(test_index),
    )
    builder.add_meta(raw_files=[f"{prefix}.*"], split_rule="planetoid standard (GCN / PyG)")


# The keys this source reads (gnnbench/data/spec.py rejects any other).
import_planetoid.config_keys = ("path", "planetoid_name")


def read_test_index(path: Path) -> np.ndarray:
    """The test node ids, one per line, in file order (which the feature rows follow)."""
    ids = read_int_column(path, "one node id per line")
    if len(ids) == 0 or ids.min() < 0:
        raise DataError(f"{path}: expected non-negative test node ids, one per line")
    return ids


def node_rows(
    parts: dict[str, Any], test_index: np.ndarray, prefix: Path
) -> tuple[sp.csr_matrix, np.ndarray]:
    """Feature and one-hot label rows in node order, as in Kipf's `load_data`."""
    tx, ty = sp.csr_matrix(parts["tx"]), np.asarray(parts["ty"])
    if tx.shape[0] != len(test_index) or len(ty) != len(test_index):
        raise DataError(
            f"{prefix}.tx/.ty: expected {len(test_index)} rows (one per test.index line)"
        )
    sorted_test = np.sort(test_index)
    allx = sp.csr_matrix(parts["allx"])
    if sorted_test[0] < allx.shape[0]:
        raise DataError(
            f"{prefix}.test.index: test ids must come after the {allx.shape[0]} allx rows"
        )
    # Citeseer: ids in [min, max] missing from test.index are isolated nodes; pad with zero rows.
    span = int(sorted_test[-1] - sorted_test[0]) + 1
    slots = sorted_test - sorted_test[0]
    placement = sp.csr_matrix(
        (np.ones(len(slots)), (slots, np.arange(len(slots)))), shape=(span, len(slots))
    )
    tx_full = placement @ tx
    ty_full = np.zeros((span, ty.shape[1]), dtype=ty.dtype)
    ty_full[slots] = ty
    features = sp.vstack([allx, tx_full]).tocsr()
    onehot = np.vstack([np.asarray(parts["ally"]), ty_full])
    if features.shape[0] != onehot.shape[0]:
        raise DataError(
            f"{prefix}.allx/.ally: {features.shape[0]} feature rows but {onehot.shape[0]} label rows"
        )
    # Row i of the test block belongs to node test_index[i]: move sorted positions into place.
    order = np.arange(features.shape[0])
    order[test_index] = sorted_test
    return features[order], onehot[order]


def graph_edges(graph: Mapping[int, list[int]], origin: Path) -> np.ndarray:
    """(E, 2) edges of the dict-of-lists adjacency, built without a per-edge Python loop."""
    if not isinstance(graph, Mapping):
        raise DataError(
            f"{origin}: expected a dict of adjacency lists, found {type(graph).__name__}"
        )
    try:
        sources = np.fromiter(graph.keys(), dtype=np.int64, count=len(graph))
        lengths = np.fromiter((len(v) for v in graph.values()), dtype=np.int64, count=len(graph))
        targets = np.fromiter(
            itertools.chain.from_iterable(graph.values()), dtype=np.int64, count=int(lengths.sum())
        )
    except (TypeError, ValueError) as exc:
        raise DataError(f"{origin}: adjacency lists must hold integer node ids ({exc})") from None
    return np.stack([np.repeat(sources, lengths), targets], axis=1)
