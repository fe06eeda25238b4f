"""PowerGraph greedy vertex-cut (Gonzalez et al., OSDI 2012) in its score form, one pass.

Each streamed edge (u, v) goes to the part maximising

    score(p) = [u has a replica on p] + [v has a replica on p]
               + (maxload - load_p) / (1 + maxload - minload)

(loads in edges). The balance term lies in [0, 1), so the score follows PowerGraph's case rules:
a part holding both endpoints beats one holding either, which beats one holding neither, and within
a case the least-loaded part wins. Exact ties are broken at random by a seeded hash of
(seed, edge index), reproducible and independent of the chunk size.

State: replica bitsets (|V| x ceil(p/64) words) and p edge loads.
"""

from __future__ import annotations

import numba
import numpy as np

from gnnbench.data.store import GraphStore
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
def _greedy_chunk(edges, first_index, replicas, load, seed):
    p = load.shape[0]
    scores = np.empty(p, dtype=np.float64)
    for k in range(edges.shape[0]):
        u = edges[k, 0]
        v = edges[k, 1]
        max_load, min_load = load_extremes(load)
        for part in range(p):
            both = 0.0
            if has_replica(replicas, u, part):
                both += 1.0
            if has_replica(replicas, v, part):
                both += 1.0
            scores[part] = both + (max_load - load[part]) / (1.0 + max_load - min_load)
        best = argmax_tiebreak(scores, hash_id(first_index + k, seed))
        place_edge(replicas, load, u, v, best)


@register_partitioner("greedy")
def greedy(store: GraphStore, p: int, seed: int, *, chunk_edges: int) -> PartitionResult:
    """PowerGraph greedy over one pass of the store's edge stream."""
    replicas = new_replicas(store.num_nodes, p)
    load = np.zeros(p, dtype=np.int64)
    stream = store.edge_stream(chunk_edges)
    for first, chunk in chunks_with_offsets(stream):
        _greedy_chunk(chunk, first, replicas, load, seed)
    stats = {"passes": stream.passes, **edge_load_stats(load, store.num_edges)}
    return result_from_replicas(replicas, p, seed, stats)
