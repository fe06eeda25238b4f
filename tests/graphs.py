"""Small graphs the tests share: TWO_TRIANGLES, `make_store` to write one to disk, and
`random_multigraph_store`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from gnnbench.data.builder import GraphStoreBuilder
from gnnbench.data.store import GraphStore

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
