"""2PS-L (Mayer et al., ICDE 2022): two-phase streaming edge partitioning, linear-time variant.

Follows the authors' C++ (mayerrn/two_phase_streaming, prepartitioner "streamcom", linear phase 2):

0. Degrees: the store's degree.npy (computed by a streaming pass at import; counted as one pass).
1. Streaming clustering, `stream_iters` passes (the reference's default is 1). A node gets its own
   cluster, of volume = its degree, the first time it is streamed (cluster ids in order of first
   appearance). For an edge (u, v) whose two clusters both have volume <= cap = 2|E|/p, with "real"
   volumes rv_u = vol(c_u) - deg(u) and rv_v = vol(c_v) - deg(v) (the cluster without the moving
   node): if rv_u <= rv_v and vol(c_v) + deg(u) <= cap, u moves to c_v; else if rv_v < rv_u and
   vol(c_u) + deg(v) <= cap, v moves to c_u.
2. Clusters by descending (volume, id), each mapped to the partition of least total volume
   (first such partition), clusters of volume 0 skipped.
3. Pre-partitioning pass: an edge whose endpoints share a cluster or whose clusters map to the same
   partition goes to that partition, unless it holds cap_e = floor(balance_ratio * |E| / p) edges.
4. Scoring pass over the other edges: if either candidate partition (of c_u, of c_v) is full, the
   edge goes to (id of the higher-degree endpoint, v on ties) mod p, or, when that is full too, to
   the least-loaded partition (first such). Otherwise each candidate q scores
   g_u(q) + g_v(q), g_u(q) = [u has a replica on q] * (1 + (1 - deg_u / (deg_u + deg_v))
   + [q is c_u's partition] * vol(c_u) / (vol(c_u) + vol(c_v))), and the higher score wins (c_v's
   partition on ties). There is no balance term: the hard cap cap_e keeps parts balanced.
   A full partition met in step 3 falls back to the rule of step 4.

Passes = 1 (degree) + stream_iters (clustering) + 2 (steps 3 and 4). No randomness: the seed only
enters the shared replica-to-owner step. State: degree, cluster, cluster volume, cluster->partition
(|V| each), replica bitsets, p loads.
"""

from __future__ import annotations

import numba
import numpy as np

from gnnbench.data.store import GraphStore
from gnnbench.errors import ConfigError
from gnnbench.partition.base import PartitionResult, register_partitioner
from gnnbench.partition.streaming.edge_partition import (
    edge_load_stats,
    has_replica,
    new_replicas,
    place_edge,
    result_from_replicas,
)

# Bump when this module's output changes: part of every partition book's cache key.
VERSION = "1"


@numba.njit(cache=True, nogil=True)
def _cluster_chunk(edges, degree, cluster, volume, next_id, cap):
    """One chunk of streaming clustering; next_id[0] is the next unused cluster id."""
    for k in range(edges.shape[0]):
        u = edges[k, 0]
        v = edges[k, 1]
        if cluster[u] < 0:
            cluster[u] = next_id[0]
            volume[next_id[0]] += degree[u]
            next_id[0] += 1
        if cluster[v] < 0:
            cluster[v] = next_id[0]
            volume[next_id[0]] += degree[v]
            next_id[0] += 1
        cu = cluster[u]
        cv = cluster[v]
        if cu == cv or volume[cu] > cap or volume[cv] > cap:
            continue
        real_u = volume[cu] - degree[u]
        real_v = volume[cv] - degree[v]
        if real_u <= real_v and volume[cv] + degree[u] <= cap:
            volume[cu] -= degree[u]
            volume[cv] += degree[u]
            cluster[u] = cv
        elif real_v < real_u and volume[cu] + degree[v] <= cap:
            volume[cv] -= degree[v]
            volume[cu] += degree[v]
            cluster[v] = cu


@numba.njit(cache=True)
def _map_clusters(order, volume, p):
    """Clusters in the given (descending volume) order, each to the least-volume partition."""
    part_of = np.zeros(volume.shape[0], dtype=np.int64)
    part_volume = np.zeros(p, dtype=np.int64)
    for c in order:
        if volume[c] == 0:
            break
        lightest = np.argmin(part_volume)
        part_volume[lightest] += volume[c]
        part_of[c] = lightest
    return part_of, part_volume


@numba.njit(cache=True, inline="always")
def _fallback(u, v, degree, load, cap):
    p = load.shape[0]
    part = (u if degree[u] > degree[v] else v) % p
    if load[part] >= cap:
        part = np.argmin(load)
    return part


@numba.njit(cache=True, inline="always")
def _linear_choice(u, v, degree, cluster, volume, part_of, replicas, load, cap):
    cu = cluster[u]
    cv = cluster[v]
    pu = part_of[cu]
    pv = part_of[cv]
    if load[pu] >= cap or load[pv] >= cap:
        return _fallback(u, v, degree, load, cap), True
    total_degree = degree[u] + degree[v]
    total_volume = volume[cu] + volume[cv]
    best = pu
    best_score = 0.0
    for q in (pu, pv):
        # summed in the reference's order (g_u + g_v + c_u + c_v) so exact ties resolve alike
        g_u = g_v = c_u = c_v = 0.0
        if has_replica(replicas, u, q):
            g_u = 1.0 + (1.0 - degree[u] / total_degree)
            if pu == q:
                c_u = volume[cu] / total_volume
        if has_replica(replicas, v, q):
            g_v = 1.0 + (1.0 - degree[v] / total_degree)
            if pv == q:
                c_v = volume[cv] / total_volume
        score = g_u + g_v + c_u + c_v
        if score >= best_score:
            best_score = score
            best = q
    return best, False


@numba.njit(cache=True, nogil=True)
def _prepartition_chunk(edges, degree, cluster, part_of, replicas, load, cap, counts):
    """Step 3; counts[0] += edges placed here, counts[1] += edges sent to the fallback."""
    for k in range(edges.shape[0]):
        u = edges[k, 0]
        v = edges[k, 1]
        cu = cluster[u]
        cv = cluster[v]
        if cu != cv and part_of[cu] != part_of[cv]:
            continue
        part = part_of[cu]
        if load[part] >= cap:
            part = _fallback(u, v, degree, load, cap)
            counts[1] += 1
        place_edge(replicas, load, u, v, part)
        counts[0] += 1


@numba.njit(cache=True, nogil=True)
def _score_chunk(edges, degree, cluster, volume, part_of, replicas, load, cap, counts):
    """Step 4 over the edges step 3 left; counts[1] += edges sent to the fallback."""
    for k in range(edges.shape[0]):
        u = edges[k, 0]
        v = edges[k, 1]
        cu = cluster[u]
        cv = cluster[v]
        if cu == cv or part_of[cu] == part_of[cv]:
            continue
        part, fell_back = _linear_choice(
            u, v, degree, cluster, volume, part_of, replicas, load, cap
        )
        if fell_back:
            counts[1] += 1
        place_edge(replicas, load, u, v, part)


@register_partitioner("twops")
def twops(
    store: GraphStore,
    p: int,
    seed: int,
    *,
    stream_iters: int,
    balance_ratio: float,
    chunk_edges: int,
) -> PartitionResult:
    """2PS-L over the store's degrees and stream_iters + 2 passes of its edge stream."""
    stream_iters, balance_ratio = int(stream_iters), float(balance_ratio)
    if stream_iters < 1:
        raise ConfigError(f"partitioner.stream_iters: expected >= 1, got {stream_iters}")
    if balance_ratio < 1:
        raise ConfigError(f"partitioner.balance_ratio: expected >= 1, got {balance_ratio}")
    n = store.num_nodes
    num_edges = store.num_edges
    degree = store.degree().astype(np.int64, copy=False)
    cluster_cap = 2 * num_edges // p  # the reference's integer MAX_COM_VOLUME
    edge_cap = int(balance_ratio * num_edges / p)  # the reference's MAX_PARTITION_LOAD (uint64)
    stream = store.edge_stream(chunk_edges)

    cluster = np.full(n, -1, dtype=np.int64)
    volume = np.zeros(n, dtype=np.int64)
    next_id = np.zeros(1, dtype=np.int64)
    for _ in range(stream_iters):
        for chunk in stream:
            _cluster_chunk(chunk, degree, cluster, volume, next_id, cluster_cap)
    used = int(next_id[0])
    ids = np.arange(used)
    order = np.lexsort((ids, volume[:used]))[::-1]  # descending (volume, id), as std::sort + rbegin
    del ids
    part_of, _ = _map_clusters(order, volume, p)
    clusters = int(np.count_nonzero(volume[:used]))
    del order

    replicas = new_replicas(n, p)
    load = np.zeros(p, dtype=np.int64)
    counts = np.zeros(2, dtype=np.int64)
    for chunk in stream:
        _prepartition_chunk(chunk, degree, cluster, part_of, replicas, load, edge_cap, counts)
    for chunk in stream:
        _score_chunk(chunk, degree, cluster, volume, part_of, replicas, load, edge_cap, counts)
    del degree, cluster, volume, part_of
    stats = {
        "passes": 1 + stream.passes,
        "clustering_passes": stream_iters,
        "clusters": clusters,
        "max_cluster_volume": cluster_cap,
        "edge_capacity": edge_cap,
        "prepartitioned_edges": int(counts[0]),
        "fallback_edges": int(counts[1]),
        **edge_load_stats(load, num_edges),
    }
    return result_from_replicas(replicas, p, seed, stats)
