"""DBH, Degree-Based Hashing (Xie et al., NIPS 2014): cut the higher-degree endpoint.

Each edge (u, v) goes to hash(w) mod p, w its endpoint of lower full degree, so low-degree nodes
keep their edges together and high-degree nodes are the ones replicated. Ties (equal degrees) go
to the endpoint with the smaller id: a fixed total order (degree, id), so every node hashes all its
edges towards "higher" nodes to one part (the reference breaks ties with an unseeded coin flip).
The hash is gnnbench.partition.streaming.hashing's seeded splitmix64, the one `hash` uses.

Passes: the full degrees come from the store's degree.npy, which the store computed by a streaming
pass over edges.bin at import; that degree pass is counted here (passes = 1 + assignment passes),
as 2PS-L's reference counts its own degree pass. State: degrees (|V|), replica bitsets, p loads.
"""

from __future__ import annotations

import numba
import numpy as np

from gnnbench.data.store import GraphStore
from gnnbench.partition.base import PartitionResult, register_partitioner
from gnnbench.partition.streaming.edge_partition import (
    edge_load_stats,
    new_replicas,
    place_edge,
    result_from_replicas,
)
from gnnbench.partition.streaming.hashing import hash_id

# Bump when this module's output changes: part of every partition book's cache key.
VERSION = "1"


@numba.njit(cache=True, nogil=True)
def _dbh_chunk(edges, degree, replicas, load, seed):
    p = np.uint64(load.shape[0])
    for k in range(edges.shape[0]):
        u = edges[k, 0]
        v = edges[k, 1]
        if degree[u] < degree[v] or (degree[u] == degree[v] and u < v):
            w = u
        else:
            w = v
        part = np.int64(hash_id(w, seed) % p)
        place_edge(replicas, load, u, v, part)


@register_partitioner("dbh")
def dbh(store: GraphStore, p: int, seed: int, *, chunk_edges: int) -> PartitionResult:
    """DBH over the store's degrees plus one pass of its edge stream."""
    degree = store.degree()
    replicas = new_replicas(store.num_nodes, p)
    load = np.zeros(p, dtype=np.int64)
    stream = store.edge_stream(chunk_edges)
    for chunk in stream:
        _dbh_chunk(chunk, degree, replicas, load, seed)
    del degree
    stats = {"passes": 1 + stream.passes, **edge_load_stats(load, store.num_edges)}
    return result_from_replicas(replicas, p, seed, stats)
