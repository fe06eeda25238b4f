"""What every edge (vertex-cut) partitioner shares: replica bitsets and the reduction to owners.

An edge partitioner places each streamed edge in one part and records, per node, the set of parts
holding one of its edges: a |V| x ceil(p/64) uint64 bitset, O(|V| p) bits, never a part per edge.
DESIGN.md's reduction then gives every node one owner: a replica chosen at random with the run's
seed (as CATGNN does); a node with no edge goes to the currently lightest partition.
"""

from __future__ import annotations

import numba
import numpy as np

from gnnbench.partition.base import PartitionResult


def new_replicas(num_nodes: int, p: int) -> np.ndarray:
    return np.zeros((num_nodes, (p + 63) // 64), dtype=np.uint64)


@numba.njit(cache=True, inline="always")
def has_replica(replicas, v, part):
    return (replicas[v, part >> 6] >> np.uint64(part & 63)) & np.uint64(1) != 0


@numba.njit(cache=True, inline="always")
def add_replica(replicas, v, part):
    replicas[v, part >> 6] |= np.uint64(1) << np.uint64(part & 63)


@numba.njit(cache=True, inline="always")
def place_edge(replicas, load, u, v, part):
    """Put edge (u, v) in `part`: both endpoints gain a replica there, the part one edge."""
    add_replica(replicas, u, part)
    add_replica(replicas, v, part)
    load[part] += 1


@numba.njit(cache=True, inline="always")
def load_extremes(load):
    """(max, min) of the per-part edge loads, for the balance terms of HDRF and greedy."""
    max_load = load[0]
    min_load = load[0]
    for part in range(1, load.shape[0]):
        max_load = max(max_load, load[part])
        min_load = min(min_load, load[part])
    return max_load, min_load


def chunks_with_offsets(stream):
    """(index of the chunk's first edge, chunk) over one pass: seeded tie-breaks hash the edge
    index, so results do not depend on the chunk size."""
    first = 0
    for chunk in stream:
        yield first, chunk
        first += chunk.shape[0]


@numba.njit(cache=True, inline="always")
def _popcount(word):
    count = 0
    while word:
        word &= word - np.uint64(1)
        count += 1
    return count


@numba.njit(cache=True)
def _pick_owners(replicas, p, seed):
    n = replicas.shape[0]
    owner = np.full(n, -1, dtype=np.int32)
    load = np.zeros(p, dtype=np.int64)
    total_replicas = 0
    covered = 0
    np.random.seed(seed)
    for v in range(n):
        count = 0
        for w in range(replicas.shape[1]):
            count += _popcount(replicas[v, w])
        if count == 0:
            continue
        total_replicas += count
        covered += 1
        pick = np.random.randint(0, count)
        for part in range(p):
            if has_replica(replicas, v, part):
                if pick == 0:
                    owner[v] = part
                    load[part] += 1
                    break
                pick -= 1
    for v in range(n):
        if owner[v] < 0:
            lightest = np.argmin(load)
            owner[v] = lightest
            load[lightest] += 1
    return owner, total_replicas, covered


def result_from_replicas(replicas: np.ndarray, p: int, seed: int, stats: dict) -> PartitionResult:
    """Owners from replica sets; `rf_edge_partition` is the vertex-cut RF over nodes with edges."""
    owner, total_replicas, covered = _pick_owners(replicas, p, seed)
    stats = {**stats, "rf_edge_partition": total_replicas / max(1, covered)}
    return PartitionResult(owner, stats)


@numba.njit(cache=True, inline="always")
def argmax_tiebreak(scores, key):
    """Index of the largest score; among exact ties the (key mod #ties)-th, key a uint64 hash.

    Scoring partitioners (HDRF, greedy) break ties at random; hashing (seed, edge index) into
    `key` makes that choice reproducible and independent of how the stream is chunked.
    """
    best = scores[0]
    ties = 1
    for i in range(1, scores.shape[0]):
        if scores[i] > best:
            best = scores[i]
            ties = 1
        elif scores[i] == best:
            ties += 1
    pick = np.int64(key % np.uint64(ties))
    for i in range(scores.shape[0]):
        if scores[i] == best:
            if pick == 0:
                return i
            pick -= 1
    return scores.shape[0] - 1


def edge_load_stats(load: np.ndarray, num_edges: int) -> dict:
    """Per-part edge counts of an edge partitioner and their balance, as JSON-ready figures."""
    p = len(load)
    max_load = int(load.max()) if p else 0
    return {
        "edge_loads": [int(x) for x in load],
        "max_edge_load": max_load,
        "edge_balance_partitioner": max_load * p / num_edges if num_edges else 1.0,
    }
