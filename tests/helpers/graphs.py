"""Small graphs the tests share: TWO_TRIANGLES, `make_store` to write one to disk,
`random_multigraph_store`, `community_store` (a graph with a class signal), `random_csr`, and
what partition tests compare: `edge_cut`, `start_owner`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from gnnbench.data.builder import GraphStoreBuilder
from gnnbench.data.graph_ops import csr_from_edges
from gnnbench.data.store import GraphStore
from helpers.configured import configured

# Two triangles joined by the bridge 2-3, in this stream order.
TWO_TRIANGLES = [(0, 1), (1, 2), (0, 2), (3, 4), (4, 5), (3, 5), (2, 3)]
FEATURE_DIM = 3


def make_store(path: Path, edges: ArrayLike, num_nodes: int, node_data: bool = False) -> GraphStore:
    """A GraphStore of `edges` over `num_nodes` ids at `path`, optionally with node data.

    node_data adds features (row v is 3v, 3v+1, 3v+2: every row distinct, so a misplaced row
    shows), labels v % 2 and the split v % 3 = 0 / 1 / 2 -> train / val / test (on
    TWO_TRIANGLES: train {0, 3}); without it the builder draws its seeded 70/15/15 split.
    """
    with GraphStoreBuilder(path, "tiny", "test") as builder:
        builder.set_num_nodes(num_nodes)
        builder.add_edges(np.asarray(edges), origin="test")
        if node_data:
            ids = np.arange(num_nodes)
            features = np.arange(num_nodes * FEATURE_DIM, dtype=np.float32)
            builder.set_features(features.reshape(num_nodes, FEATURE_DIM))
            builder.set_labels(ids % 2)
            builder.set_split(ids[ids % 3 == 0], ids[ids % 3 == 1], ids[ids % 3 == 2])
        builder.finish()
    return GraphStore(path)


def random_multigraph_store(
    path: Path, seed: int, linked_nodes: int, num_edges: int, isolated: int
) -> GraphStore:
    """`num_edges` seeded random edges over the first `linked_nodes` ids (self loops and repeated
    edges included), and `isolated` more nodes without any."""
    edges = np.random.default_rng(seed).integers(0, linked_nodes, size=(num_edges, 2))
    return make_store(path, edges, linked_nodes + isolated)


def community_store(
    path: Path, num_nodes: int = 300, classes: int = 3, multilabel: bool = False
) -> GraphStore:
    """A small stochastic-block graph whose features carry a weak class signal."""
    rng = np.random.default_rng(0)
    label = rng.integers(0, classes, num_nodes)
    sources = rng.integers(0, num_nodes, 6 * num_nodes)
    by_class = np.argsort(label, kind="stable")
    first = np.searchsorted(label[by_class], np.arange(classes))
    source_class = label[sources[: 4 * num_nodes]]  # 2/3 of the edges stay inside a class
    offset = rng.integers(0, np.bincount(label, minlength=classes)[source_class])
    same_class = by_class[first[source_class] + offset]
    targets = np.concatenate([same_class, rng.integers(0, num_nodes, 2 * num_nodes)])
    features = np.eye(classes)[label] + rng.normal(0, 1.5, (num_nodes, classes))
    with GraphStoreBuilder(path, "community", "test") as builder:
        builder.set_num_nodes(num_nodes)
        builder.add_edges(np.stack([sources, targets], axis=1), origin="test")
        builder.set_features(np.hstack([features, rng.normal(size=(num_nodes, 5))]))
        labels = np.eye(classes, dtype=np.uint8)[label] if multilabel else label
        builder.set_labels(labels, multilabel=multilabel)
        builder.finish()
    return GraphStore(path)


def random_csr(num_nodes: int = 60, num_edges: int = 400, seed: int = 0):
    rng = np.random.default_rng(seed)
    edges = rng.integers(0, num_nodes, (num_edges, 2))
    edges = np.unique(np.sort(edges[edges[:, 0] != edges[:, 1]], axis=1), axis=0)
    return csr_from_edges(edges, num_nodes)


def edge_cut(store: GraphStore, owner: np.ndarray) -> int:
    edges = store.edges()
    return int((owner[edges[:, 0]] != owner[edges[:, 1]]).sum())


def start_owner(graph, p: int, start: str) -> np.ndarray:
    """A partition to refine: uniform random blocks (seeded by p) or hash's owners."""
    if start == "random":
        return np.random.default_rng(p).integers(0, p, size=graph.num_nodes).astype(np.int32)
    return configured("hash")(graph, p, 0).owner.astype(np.int32)
