"""HDRF (Petroni et al., CIKM 2015): High-Degree (are) Replicated First, one pass over the edges.

For each streamed edge (u, v) the partial degrees are incremented first (as in the paper's
Algorithm 1 and the 2PS reference), then every part p is scored

    theta_u = delta_u / (delta_u + delta_v)
    g(u, p) = 1 + (1 - theta_u)  if u already has a replica on p, else 0   (same for v)
    C_bal(p) = lambda * (maxsize - |p|) / (epsilon + maxsize - minsize)
    score(p) = g(u, p) + g(v, p) + C_bal(p)

with sizes in edges, and the edge goes to the best part; exact ties are broken at random by a
seeded hash of (seed, edge index), so owners are reproducible and independent of the chunk size.

State: partial degrees (|V| int64), replica bitsets (|V| x ceil(p/64) words), p edge loads.
"""

from __future__ import annotations

import numba
import numpy as np

from gnnbench.data.store import GraphStore
from gnnbench.errors import ConfigError
from gnnbench.partition.base import PartitionResult, register_partitioner
from gnnbench.partition.streaming.edge_partition import (
    argmax_tiebreak,
    chunks_with_offsets,
    edge_load_stats,
    has_replica,
    load_extremes,
    new_replicas,
    place_edge,
    result_from_replicas,
)
from gnnbench.partition.streaming.hashing import hash_id

# Bump when this module's output changes: part of every partition book's cache key.
VERSION = "1"


@numba.njit(cache=True, nogil=True)
def _hdrf_chunk(edges, first_index, partial_degree, replicas, load, lam, epsilon, seed):
    p = load.shape[0]
    scores = np.empty(p, dtype=np.float64)
    for k in range(edges.shape[0]):
        u = edges[k, 0]
        v = edges[k, 1]
        partial_degree[u] += 1
        partial_degree[v] += 1
        total = partial_degree[u] + partial_degree[v]
        theta_u = partial_degree[u] / total
        theta_v = partial_degree[v] / total
        max_load, min_load = load_extremes(load)
        for part in range(p):
            g_u = 1.0 + (1.0 - theta_u) if has_replica(replicas, u, part) else 0.0
            g_v = 1.0 + (1.0 - theta_v) if has_replica(replicas, v, part) else 0.0
            balance = lam * (max_load - load[part]) / (epsilon + max_load - min_load)
            scores[part] = g_u + g_v + balance
        best = argmax_tiebreak(scores, hash_id(first_index + k, seed))
        place_edge(replicas, load, u, v, best)


@register_partitioner("hdrf")
def hdrf(
    store: GraphStore, p: int, seed: int, *, lambda_: float, epsilon: float, chunk_edges: int
) -> PartitionResult:
    """HDRF over one pass of the store's edge stream (no degree pass: degrees are partial)."""
    lam, epsilon = float(lambda_), float(epsilon)
    if lam < 0:
        raise ConfigError(f"partitioner.lambda_: expected >= 0, got {lam}")
    if epsilon <= 0:
        raise ConfigError(f"partitioner.epsilon: expected > 0, got {epsilon}")
    partial_degree = np.zeros(store.num_nodes, dtype=np.int64)
    replicas = new_replicas(store.num_nodes, p)
    load = np.zeros(p, dtype=np.int64)
    stream = store.edge_stream(chunk_edges)
    for first, chunk in chunks_with_offsets(stream):
        _hdrf_chunk(chunk, first, partial_degree, replicas, load, lam, epsilon, seed)
    del partial_degree
    stats = {"passes": stream.passes, **edge_load_stats(load, store.num_edges)}
    return result_from_replicas(replicas, p, seed, stats)
