"""GraphTheta's clusters (train.strategy=cluster): a partition cut once into the clusters its
batches are made of, by `train.cluster_method`.

- bfs: the nodes in the order a BFS reaches them, cut into `num_clusters` (nearly) equal pieces
  (gnnbench's stand-in, and what runs before the key existed used).
- metis: METIS k-way into `num_clusters` parts of the partition's graph (pymetis), as
  Cluster-GCN and GraphTheta's METIS option.
- louvain: modularity communities (networkx's Louvain, seeded); their number is what the graph
  holds, not `num_clusters`. Pure Python: fine on partitions of up to a few hundred thousand
  edges, slow far beyond.

Every method covers each of the partition's nodes exactly once and is deterministic in its seed.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from gnnbench.errors import ConfigError
from gnnbench.train.batching import bfs_order


def clusters(
    indptr: np.ndarray, indices: np.ndarray, count: int, seed: int, method: str
) -> list[np.ndarray]:
    """The partition's node ids grouped into clusters (each sorted for metis and louvain, in
    BFS order for bfs), empty ones left out."""
    if method == "bfs":
        order = bfs_order(indptr, indices, np.random.default_rng(seed))
        return [piece for piece in np.array_split(order, min(count, len(order))) if len(piece)]
    if method == "metis":
        return _groups(_metis_labels(indptr, indices, count, seed))
    if method == "louvain":
        return _groups(_louvain_labels(indptr, indices, seed))
    raise ConfigError(f"train.cluster_method: expected bfs, metis or louvain, got {method!r}")


def symmetric(indptr: np.ndarray, indices: np.ndarray) -> sp.csr_matrix:
    """The partition's graph as an undirected simple graph (a halo node's edges may be listed
    on one side only; METIS needs both and no self-loops)."""
    n = len(indptr) - 1
    adjacency = sp.csr_matrix((np.ones(len(indices), dtype=np.int8), indices, indptr), shape=(n, n))
    adjacency = ((adjacency + adjacency.T) > 0).astype(np.int8).tocsr()
    adjacency.setdiag(0)
    adjacency.eliminate_zeros()
    adjacency.sort_indices()
    return adjacency


def _metis_labels(indptr: np.ndarray, indices: np.ndarray, count: int, seed: int) -> np.ndarray:
    import pymetis

    n = len(indptr) - 1
    if count <= 1 or n <= count:
        return np.zeros(n, dtype=np.int64) if count <= 1 else np.arange(n)
    graph = symmetric(indptr, indices)
    _, membership = pymetis.part_graph(
        count,
        pymetis.CSRAdjacency(graph.indptr.astype(np.int64), graph.indices.astype(np.int64)),
        options=pymetis.Options(seed=int(seed)),
    )
    return np.asarray(membership, dtype=np.int64)


def _louvain_labels(indptr: np.ndarray, indices: np.ndarray, seed: int) -> np.ndarray:
    import networkx as nx

    graph = symmetric(indptr, indices)
    found = nx.community.louvain_communities(nx.from_scipy_sparse_array(graph), seed=int(seed))
    labels = np.empty(graph.shape[0], dtype=np.int64)
    for label, members in enumerate(sorted(found, key=min)):
        labels[list(members)] = label
    return labels


def _groups(labels: np.ndarray) -> list[np.ndarray]:
    order = np.argsort(labels, kind="stable")
    bounds = np.flatnonzero(np.diff(labels[order])) + 1
    return [piece for piece in np.split(order, bounds) if len(piece)]
