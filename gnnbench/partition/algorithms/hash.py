"""Hash partitioning: owner = hash(v) mod p, the trivial baseline (no edge pass at all)."""

from __future__ import annotations

import numpy as np

from gnnbench.data.store import GraphStore
from gnnbench.partition.base import PartitionResult, register_partitioner
from gnnbench.partition.streaming.hashing import hash_ids

# Bump when this module's output changes: part of every partition book's cache key.
VERSION = "1"


@register_partitioner("hash")
def hash_partition(store: GraphStore, p: int, seed: int, *, chunk_edges: int) -> PartitionResult:
    """Owner of each node from a seeded hash of its id, in blocks of chunk_edges ids (the shared
    chunk size bounds the scratch; the owners do not depend on it)."""
    owner = np.empty(store.num_nodes, dtype=np.int32)
    for start in range(0, store.num_nodes, chunk_edges):
        ids = np.arange(start, min(store.num_nodes, start + chunk_edges), dtype=np.uint64)
        owner[start : start + len(ids)] = hash_ids(ids, seed) % np.uint64(p)
    return PartitionResult(owner, {"passes": 0})
