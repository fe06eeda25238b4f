"""LDG (Stanton & Kliot, KDD 2012): linear deterministic greedy over a node stream.

Node v, arriving with its full neighbour list, goes to

    argmax_i |N(v) ∩ P_i| * (1 - |P_i| / C),    C = capacity_factor * |V| / p,

over the partitions that are not full (|P_i| < C); neighbours not yet placed count for nothing.
Ties go to the partition with fewer nodes, then to the lower index; so a node without placed
neighbours (the first one, isolated ones) goes to the smallest partition. Since C >= |V| / p
(capacity_factor >= 1), some partition is always open and every |P_i| < C + 1.

Restreaming (Nishimura & Ugander, KDD 2013: ReLDG, ReFennel), `passes: t` with t > 1: every
later pass streams all nodes again in the same order; a node is first taken out of its partition
(its size drops by one), then placed by the same score and capacity rule, now counting every
neighbour at its latest partition (all are placed after pass 1). The state stays the owner array
and the sizes; `restream_moves_<t>` in the stats counts the nodes pass t moved.

Stream order is node id order (`order: id`) or a permutation seeded by the run's seed
(`order: random`). The neighbour lists come from the store's on-disk CSR
(gnnbench.data.adjacency): built with bounded memory by bucketed edge passes inside every run (the
one meter of docs/design.md: nothing the algorithm reads is prepared before its measurement), its
edge passes added to `passes` (`adjacency_build_passes`). Reading the node stream maps
one bounded window of adj_indices.npy at a time; the state is O(|V|): the owner array, indptr
and the partition sizes.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from gnnbench.data.adjacency import ensure_adjacency
from gnnbench.data.store import GraphStore
from gnnbench.errors import ConfigError
from gnnbench.partition.base import PartitionResult, register_partitioner
from gnnbench.spec_keys import whole_at_least

# Bump when this module's output changes: part of every partition book's cache key.
VERSION = "1"

SCORE_LDG = 0
SCORE_FENNEL = 1


@numba.njit(cache=True, inline="always")
def count_owners(start, stop, indices, owner, counts):
    """counts[i] = neighbours indices[start:stop] already placed in partition i."""
    counts[:] = 0
    for e in range(start, stop):
        o = owner[indices[e]]
        if o >= 0:
            counts[o] += 1


@numba.njit(cache=True, inline="always")
def best_open_block(counts, sizes, capacity, score_kind, alpha, gamma):
    """The open partition (|P_i| < C) of best LDG or Fennel score; ties to the smaller, then
    to the lower index. C >= |V| / p keeps one open."""
    best = -1
    best_score = 0.0
    for j in range(sizes.shape[0]):
        if sizes[j] >= capacity:
            continue
        if score_kind == SCORE_LDG:
            score = counts[j] * (1.0 - sizes[j] / capacity)
        else:
            score = counts[j] - alpha * gamma * sizes[j] ** (gamma - 1.0)
        if best < 0 or score > best_score or (score == best_score and sizes[j] < sizes[best]):
            best = j
            best_score = score
    return best


@numba.njit(cache=True)
def _assign_block(
    nodes, starts, stops, indices, owner, sizes, capacity, counts, score_kind, alpha, gamma
):
    """Place every node of one block, in order, at its best open partition; return the moves.

    A node placed by an earlier pass is taken out of its partition first (restreaming), so it
    sees its neighbours' latest partitions and the sizes without itself; moves counts the nodes
    that end in another partition than before (every node in a first pass).
    """
    moves = 0
    for i in range(nodes.shape[0]):
        previous = owner[nodes[i]]
        if previous >= 0:
            sizes[previous] -= 1
            owner[nodes[i]] = -1  # a self loop must not count for its own partition
        count_owners(starts[i], stops[i], indices, owner, counts)
        best = best_open_block(counts, sizes, capacity, score_kind, alpha, gamma)
        owner[nodes[i]] = best
        sizes[best] += 1
        if best != previous:
            moves += 1
    return moves


def stream_passes_of(passes: int) -> int:
    """`passes`: node-stream passes (1 = the original algorithm, more = restreaming)."""
    return whole_at_least("partitioner.passes", passes, 1)


def capacity_of(capacity_factor: float, num_nodes: int, p: int) -> tuple[float, float]:
    """(capacity_factor, C = capacity_factor * |V| / p); the factor must be at least 1."""
    factor = float(capacity_factor)
    if not factor >= 1.0:
        raise ConfigError(f"partitioner.capacity_factor: expected a number >= 1, got {factor}")
    return factor, factor * num_nodes / p


def node_stream_partition(
    store: GraphStore,
    p: int,
    seed: int,
    *,
    capacity_factor: float,
    order: str,
    passes: int,
    score_kind: int,
    alpha: float = 0.0,
    gamma: float = 1.5,
) -> PartitionResult:
    """`passes` node-stream passes with the LDG or Fennel score; shared by both modules."""
    order = str(order)
    if order not in ("id", "random"):
        raise ConfigError(f"partitioner.order: expected 'id' or 'random', got {order!r}")
    factor, capacity = capacity_of(capacity_factor, store.num_nodes, p)
    stream_passes = stream_passes_of(passes)
    adjacency = ensure_adjacency(store)
    owner = np.full(store.num_nodes, -1, dtype=np.int32)
    sizes = np.zeros(p, dtype=np.int64)
    counts = np.zeros(p, dtype=np.int64)
    stats: dict[str, Any] = {"stream_passes": stream_passes}
    for t in range(1, stream_passes + 1):
        moves = 0
        for block in adjacency.blocks(order, seed):  # the same order in every pass
            moves += _assign_block(
                *block.rows,
                owner,
                sizes,
                capacity,
                counts,
                score_kind,
                alpha,
                gamma,
            )
        block = None  # drop the last window before the next pass maps its first
        if t > 1:
            stats[f"restream_moves_{t}"] = int(moves)
    stats |= {
        "passes": adjacency.passes + adjacency.build_passes,
        "adjacency_build_passes": adjacency.build_passes,
        "adjacency_windows": adjacency.windows,
        "order": order,
        "capacity_factor": factor,
        "capacity": capacity,
        "max_partition_nodes": int(sizes.max()) if p else 0,
    }
    return PartitionResult(owner, stats)


@register_partitioner(
    "ldg",
    vertex_balance_bound=lambda p, n, *, capacity_factor, **_: capacity_bound(
        capacity_factor, n, p
    ),
)
def ldg(
    store: GraphStore, p: int, seed: int, *, capacity_factor: float, order: str, passes: int
) -> PartitionResult:
    """LDG over the node stream; deterministic (the seed only matters for `order: random`)."""
    return node_stream_partition(
        store, p, seed, capacity_factor=capacity_factor, order=order, passes=passes,
        score_kind=SCORE_LDG,
    )  # fmt: skip


def capacity_bound(capacity_factor: float, num_nodes: int, p: int) -> float:
    """Stated vertex_balance bound: no part passes C + 1 nodes, C = capacity_factor * |V| / p."""
    _, capacity = capacity_of(capacity_factor, num_nodes, p)
    return (capacity + 1) / (num_nodes / p)
