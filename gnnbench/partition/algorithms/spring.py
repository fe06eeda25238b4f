"""SPRING (SDT-GNN, Algorithm 1): streaming clustering, richest-neighbour merging, greedy assignment.

1. A degree pass (kept in the store as degree.npy, computed by a streaming pass at import).
2. One streaming pass of Hollocou-style clustering: every node starts in its own cluster whose
   volume is its degree; for an edge whose two clusters are both under the volume cap, the node of
   the lower-volume cluster moves to the other. The same pass records each node's richest (highest
   degree) neighbour.
3. Merging: clusters in ascending order of node count; each is merged into the cluster of the
   richest of its members' richest neighbours when the result stays within beta * |V| / p nodes.
4. Largest-first greedy assignment of the merged clusters to the least-loaded partition.

State is O(|V|): degree, cluster, volume, richest neighbour, union-find parent, sizes.
"""

from __future__ import annotations

import numba
import numpy as np

from gnnbench.data.store import GraphStore
from gnnbench.errors import ConfigError
from gnnbench.partition.base import PartitionResult, register_partitioner

# Bump when this module's output changes: part of every partition book's cache key.
VERSION = "1"


@numba.njit(cache=True, nogil=True)
def _cluster_chunk(edges, degree, cluster, volume, richest, max_volume):
    for k in range(edges.shape[0]):
        u = edges[k, 0]
        v = edges[k, 1]
        if richest[v] < 0 or degree[u] > degree[richest[v]]:
            richest[v] = u
        if richest[u] < 0 or degree[v] > degree[richest[u]]:
            richest[u] = v
        cu = cluster[u]
        cv = cluster[v]
        if cu == cv or volume[cu] > max_volume or volume[cv] > max_volume:
            continue
        if volume[cu] <= volume[cv]:
            volume[cv] += degree[u]
            volume[cu] -= degree[u]
            cluster[u] = cv
        else:
            volume[cu] += degree[v]
            volume[cv] -= degree[v]
            cluster[v] = cu


@numba.njit(cache=True, inline="always")
def _find(parent, c):
    while parent[c] != c:
        parent[c] = parent[parent[c]]
        c = parent[c]
    return c


@numba.njit(cache=True)
def _merge_clusters(cluster, richest, degree, max_nodes):
    """Richest-neighbour merging; returns each node's merged cluster and the cluster counts."""
    n = cluster.shape[0]
    size = np.zeros(n, dtype=np.int64)
    best = np.full(n, -1, dtype=np.int64)  # richest node among the members' richest neighbours
    for v in range(n):
        c = cluster[v]
        size[c] += 1
        r = richest[v]
        if r >= 0 and (best[c] < 0 or degree[r] > degree[best[c]]):
            best[c] = r
    present = np.flatnonzero(size)
    # ascending node count, ties by cluster id (lexsort is not available in numba)
    order = present[np.argsort(size[present] * n + present, kind="mergesort")]
    parent = np.arange(n)
    for idx in range(order.shape[0] - 1):
        c = order[idx]
        r = best[c]
        if r < 0:
            continue
        target = _find(parent, cluster[r])
        if target == c or size[target] + size[c] > max_nodes:
            continue
        parent[c] = target
        size[target] += size[c]
        size[c] = 0
        if best[target] < 0 or degree[best[c]] > degree[best[target]]:
            best[target] = best[c]
    merged = np.empty(n, dtype=np.int64)
    for v in range(n):
        merged[v] = _find(parent, cluster[v])
    return merged, present.shape[0], np.count_nonzero(size)


@numba.njit(cache=True)
def _assign_largest_first(merged, p):
    """Clusters by descending node count, each to the currently lightest partition."""
    n = merged.shape[0]
    size = np.zeros(n, dtype=np.int64)
    for v in range(n):
        size[merged[v]] += 1
    present = np.flatnonzero(size)
    order = present[np.argsort(-size[present] * n + present, kind="mergesort")]
    load = np.zeros(p, dtype=np.int64)
    part_of = np.full(n, -1, dtype=np.int32)
    for c in order:
        lightest = np.argmin(load)
        part_of[c] = lightest
        load[lightest] += size[c]
    owner = np.empty(n, dtype=np.int32)
    for v in range(n):
        owner[v] = part_of[merged[v]]
    return owner


def volume_cap_of(rule: str, num_edges: int, p: int) -> float:
    """Cluster volume cap: SDT-GNN's 0.1 * |E_directed| / p or 2PS-L's 2|E| / p."""
    if rule == "sdt":
        return 0.1 * 2 * num_edges / p
    if rule == "2ps":
        return 2.0 * num_edges / p
    raise ConfigError(f"partitioner.volume_cap: expected 'sdt' or '2ps', got {rule!r}")


@register_partitioner("spring", vertex_balance_bound=lambda p, n, *, beta, **_: float(beta) + p / n)
def spring(
    store: GraphStore,
    p: int,
    seed: int,
    *,
    volume_cap: str,
    beta: float,
    stream_iters: int,
    chunk_edges: int,
) -> PartitionResult:
    """SPRING over the store's edge stream; deterministic (no randomness is involved)."""
    n = store.num_nodes
    degree = store.degree()
    cluster = np.arange(n, dtype=np.int64)
    volume = degree.astype(np.int64)
    richest = np.full(n, -1, dtype=np.int64)
    max_volume = volume_cap_of(str(volume_cap), store.num_edges, p)
    stream = store.edge_stream(chunk_edges)
    for _ in range(int(stream_iters)):
        for chunk in stream:
            _cluster_chunk(chunk, degree, cluster, volume, richest, max_volume)
    del volume
    max_nodes = float(beta) * n / p
    merged, before, after = _merge_clusters(cluster, richest, degree, max_nodes)
    del cluster, richest
    owner = _assign_largest_first(merged, p)
    stats = {
        "passes": 1 + stream.passes,  # the degree pass (made at import) plus clustering
        "clusters_before_merge": int(before),
        "clusters_after_merge": int(after),
        "max_cluster_volume": max_volume,
    }
    return PartitionResult(owner, stats)


# Merged clusters hold at most beta |V| / p nodes (SDT-GNN's balance factor), plus one node of rounding.
