"""GREM (Armada): chunked streaming greedy with refinement, recursive bisection for p > 2.

Bisection of one group of nodes into side 0 (floor(k/2) of its k parts) and side 1 (ceil(k/2)),
with capacities cap_s = ceil(n_group * k_s / k) (proportional shares for uneven splits):

1. The edge file is read in chunks of ceil(chunk_fraction * |E|) edges (one mapped window each).
   Only edges with both endpoints in the same group count; a chunk's edges of one group form its
   chunk subgraph (a CSR over the chunk's nodes, O(chunk) memory).
2. Seed: the first chunk holding edges of a group is partitioned alone by an in-memory
   partitioner: METIS through pymetis (recursive bisection, target weights k_0/k and k_1/k, seeded
   with the run's seed) when it is importable, else `bfs`: breadth-first growth from a
   pseudo-peripheral node (the last node reached by a BFS from the lowest id) until side 0 holds
   round(n_chunk * k_0 / k) nodes, the rest to side 1. A side over its capacity gives its
   highest ids to the other side.
3. Every later chunk, two phases over its nodes:
   a. Placement of unassigned nodes, breadth first from the assigned ones: the chunk nodes that
      have an assigned chunk-neighbour are queued in ascending id order, then each queued node's
      unassigned chunk-neighbours; a node taken from the queue goes to the side where more of its
      chunk-neighbours are assigned (ties: the lighter side relative to its share, then side 0),
      or to the other side when that one is full. Chunk components without any assigned node are
      then grown the same way from their lowest id.
   b. Estimates and refinement, in ascending id order: each chunk node counts its
      chunk-neighbours on each side. A node placed in this chunk (or seeded in it) stores these
      counts. A node assigned before averages them with its stored estimate,
      stored = (stored + new) / 2, and moves to the side with the strictly larger estimate if
      that side has room: a refinement move. `chunk_refinement: false` keeps the estimates but
      never moves a node (placement only), to measure what refinement buys (claim 7, Armada).
4. Nodes of the group that no chunk edge touched (isolated in the group's induced subgraph) go
   to the lighter side after the pass.

p > 2 (any p, not only powers of two): the level's groups are bisected together in one pass over
the edge file, each seeded by its own first chunk; the next level splits each side (k_s parts) of
every group with k_s > 1 again, over the edges of its induced subgraph. So passes =
ceil(log2 p). Objective: minimum edge cut under the capacities.

State is O(|V|): group id (int32), side (int8), two float32 neighbour-count estimates and a
chunk-local index map (int32) per node; plus O(chunk) for the chunk window and its subgraph.
Deterministic for a given seed (the seed only reaches METIS).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from gnnbench.data.store import GraphStore
from gnnbench.errors import ConfigError
from gnnbench.partition.base import PartitionResult, register_partitioner
from gnnbench.partition.streaming.chunk_graph import (
    chunk_csr,
    reset_local,
    resolve_seed_method,
    seed_membership,
    subgraph,
)

# Bump when this module's output changes: part of every partition book's cache key.
VERSION = "1"


@numba.njit(cache=True)
def _apply_seed(nodes, rows, membership, side, load, caps, g):
    """Sides of a group's seed chunk; a side over capacity hands its highest ids over."""
    for i in range(rows.shape[0]):
        s = membership[i]
        side[nodes[rows[i]]] = s
        load[g, s] += 1
    for s in range(2):
        i = rows.shape[0] - 1
        while load[g, s] > caps[g, s] and i >= 0:
            v = nodes[rows[i]]
            if side[v] == s:
                side[v] = 1 - s
                load[g, s] -= 1
                load[g, 1 - s] += 1
            i -= 1


@numba.njit(cache=True, inline="always")
def _lighter(load, shares0, shares1, g):
    """Side with the smaller load relative to its share of parts; ties to side 0."""
    return 0 if load[g, 0] * shares1[g] <= load[g, 1] * shares0[g] else 1


@numba.njit(cache=True)
def _place(row, nodes, indptr, indices, group, side, load, caps, shares0, shares1):
    c0 = 0
    c1 = 0
    for e in range(indptr[row], indptr[row + 1]):
        s = side[nodes[indices[e]]]
        if s == 0:
            c0 += 1
        elif s == 1:
            c1 += 1
    v = nodes[row]
    g = group[v]
    if c0 > c1:
        best = 0
    elif c1 > c0:
        best = 1
    else:
        best = _lighter(load, shares0, shares1, g)
    if load[g, best] >= caps[g, best]:
        best = 1 - best
    side[v] = best
    load[g, best] += 1


@numba.njit(cache=True)
def _drain(
    queue, head, tail, queued, fresh, nodes, indptr, indices, group, side, load, caps, shares0,
    shares1,
):  # fmt: skip
    """Place queued nodes first in first out, queueing their unassigned chunk-neighbours."""
    while head < tail:
        x = queue[head]
        head += 1
        _place(x, nodes, indptr, indices, group, side, load, caps, shares0, shares1)
        fresh[x] = True
        for e in range(indptr[x], indptr[x + 1]):
            y = indices[e]
            if not queued[y] and side[nodes[y]] < 0:
                queued[y] = True
                queue[tail] = y
                tail += 1
    return head


@numba.njit(cache=True)
def _greedy_chunk(
    nodes, indptr, indices, group, active, side, stored0, stored1, load, caps, shares0, shares1,
    refine,
):  # fmt: skip
    """Placement (breadth first from assigned nodes) then estimates and, with `refine`,
    refinement; -> moves."""
    nc = nodes.shape[0]
    fresh = np.zeros(nc, dtype=np.bool_)
    queued = np.zeros(nc, dtype=np.bool_)
    queue = np.empty(nc, dtype=np.int64)
    tail = 0
    for row in range(nc):
        v = nodes[row]
        if not active[group[v]]:
            fresh[row] = True  # seeded in this chunk
            continue
        if side[v] >= 0:
            continue
        for e in range(indptr[row], indptr[row + 1]):
            if side[nodes[indices[e]]] >= 0:
                queued[row] = True
                queue[tail] = row
                tail += 1
                break
    head = _drain(
        queue, 0, tail, queued, fresh, nodes, indptr, indices, group, side, load, caps, shares0,
        shares1,
    )  # fmt: skip
    for row in range(nc):  # chunk components without an assigned node: grown from their lowest id
        if queued[row] or side[nodes[row]] >= 0 or not active[group[nodes[row]]]:
            continue
        queued[row] = True
        queue[head] = row
        head = _drain(
            queue, head, head + 1, queued, fresh, nodes, indptr, indices, group, side, load,
            caps, shares0, shares1,
        )  # fmt: skip
    moves = 0
    for row in range(nc):
        v = nodes[row]
        g = group[v]
        c0 = 0
        c1 = 0
        for e in range(indptr[row], indptr[row + 1]):
            if side[nodes[indices[e]]] == 0:
                c0 += 1
            else:
                c1 += 1
        if fresh[row]:
            stored0[v] = c0
            stored1[v] = c1
            continue
        stored0[v] = (stored0[v] + c0) / 2.0
        stored1[v] = (stored1[v] + c1) / 2.0
        current = side[v]
        if stored0[v] > stored1[v]:
            best = 0
        elif stored1[v] > stored0[v]:
            best = 1
        else:
            best = current
        if refine and best != current and load[g, best] < caps[g, best]:
            side[v] = best
            load[g, current] -= 1
            load[g, best] += 1
            moves += 1
    return moves


@numba.njit(cache=True)
def _place_unseen(group, parts, side, load, caps, shares0, shares1):
    """Nodes of split groups that no chunk edge touched: lighter side, ascending id."""
    placed = 0
    for v in range(group.shape[0]):
        g = group[v]
        if parts[g] < 2 or side[v] >= 0:
            continue
        best = _lighter(load, shares0, shares1, g)
        if load[g, best] >= caps[g, best]:
            best = 1 - best
        side[v] = best
        load[g, best] += 1
        placed += 1
    return placed


@numba.njit(cache=True)
def _next_group(group, side, child0, child1):
    for v in range(group.shape[0]):
        g = group[v]
        group[v] = child1[g] if side[v] == 1 else child0[g]


@dataclass
class _Level:
    """One level of the recursive bisection: each group's side shares, capacities and loads."""

    shares0: np.ndarray  # parts of each group going to side 0 (floor(k/2))
    shares1: np.ndarray
    caps: np.ndarray  # (groups, 2) node capacity of each side
    load: np.ndarray  # (groups, 2) nodes placed on each side so far
    seeded: np.ndarray  # whether each group's seed chunk has been bisected

    @classmethod
    def of(cls, group: np.ndarray, parts: np.ndarray) -> _Level:
        shares0 = parts // 2
        shares1 = parts - shares0
        nodes = np.bincount(group, minlength=len(parts)).astype(np.int64)
        caps = np.stack([-(-nodes * shares0 // parts), -(-nodes * shares1 // parts)], 1)
        empty = np.zeros((len(parts), 2), dtype=np.int64)
        return cls(shares0, shares1, caps, empty, np.zeros(len(parts), dtype=np.bool_))


@dataclass
class _State:
    """Per-node state across levels: O(|V|)."""

    group: np.ndarray  # int32 group of each node
    side: np.ndarray  # int8 side within its group at this level, -1 unassigned
    stored0: np.ndarray  # float32 neighbour-count estimates, averaged over chunks
    stored1: np.ndarray
    local: np.ndarray  # int32 chunk-local index, -1 outside the current chunk

    @classmethod
    def of(cls, n: int) -> _State:
        return cls(
            np.zeros(n, dtype=np.int32),
            np.empty(n, dtype=np.int8),
            np.empty(n, dtype=np.float32),
            np.empty(n, dtype=np.float32),
            np.full(n, -1, dtype=np.int32),
        )


def _chunk_size(chunk_fraction: float, num_edges: int) -> tuple[float, int]:
    """(chunk_fraction, edges per chunk), checked."""
    fraction = float(chunk_fraction)
    if not 0.0 < fraction <= 1.0:
        raise ConfigError(
            f"partitioner.chunk_fraction: expected a number in (0, 1], got {fraction}"
        )
    chunk_edges = max(1, math.ceil(fraction * num_edges))
    if 2 * chunk_edges >= 2**31:
        raise ConfigError(
            f"partitioner.chunk_fraction: chunks of {chunk_edges} edges are too large "
            "(at most 2^30 edges per chunk)"
        )
    return fraction, chunk_edges


def _seed_groups(level, state, parts, nodes, indptr, indices, method, seed, stats) -> np.ndarray:
    """Bisect, alone, each group meeting its first chunk here; returns which were seeded before."""
    active = level.seeded.copy()
    node_group = state.group[nodes]
    for g in np.unique(node_group[~level.seeded[node_group]]):
        rows = np.flatnonzero(node_group == g)
        if len(rows) == len(nodes):
            sub_indptr, sub_indices = indptr, indices
        else:
            sub_indptr, sub_indices = subgraph(indptr, indices, rows)
        membership = seed_membership(
            method, sub_indptr, sub_indices, int(level.shares0[g]), int(parts[g]), seed
        )
        _apply_seed(nodes, rows, membership, state.side, level.load, level.caps, g)
        level.seeded[g] = True
        stats["seeded_groups"] += 1
    return active


def _bisect_level(
    stream, state: _State, parts: np.ndarray, method, seed, refine: bool, stats
) -> _Level:
    """One pass over the edge stream bisecting every group with more than one part."""
    level = _Level.of(state.group, parts)
    state.side[:] = -1
    state.stored0[:] = 0
    state.stored1[:] = 0
    for chunk in stream:
        nodes, indptr, indices = chunk_csr(chunk, state.group, parts, state.local)
        if len(nodes) == 0:
            continue
        active = _seed_groups(level, state, parts, nodes, indptr, indices, method, seed, stats)
        stats["refinement_moves"] += int(
            _greedy_chunk(
                nodes, indptr, indices, state.group, active, state.side, state.stored0,
                state.stored1, level.load, level.caps, level.shares0, level.shares1, refine,
            )
        )  # fmt: skip
        reset_local(state.local, nodes)
        del nodes, indptr, indices
    stats["unseen_nodes_placed"] += int(
        _place_unseen(
            state.group, parts, state.side, level.load, level.caps, level.shares0, level.shares1
        )
    )
    return level


def _split_groups(state: _State, level: _Level, parts, first_part) -> tuple[np.ndarray, ...]:
    """Children: side 0 keeps the first floor(k/2) parts, side 1 the rest; leaves carry over."""
    split = parts > 1
    child0 = np.arange(len(parts)) + np.cumsum(split) - split
    child1 = child0 + split
    next_parts = np.empty(len(parts) + int(split.sum()), dtype=np.int64)
    next_first = np.empty_like(next_parts)
    next_parts[child0] = np.where(split, level.shares0, 1)
    next_first[child0] = first_part
    next_parts[child1[split]] = level.shares1[split]
    next_first[child1[split]] = first_part[split] + level.shares0[split]
    _next_group(state.group, state.side, child0.astype(np.int32), child1.astype(np.int32))
    return next_parts, next_first


# Each bisection level rounds a side's capacity up by at most one node per group.
@register_partitioner(
    "grem", vertex_balance_bound=lambda p, n, **_: 1.0 + p * max(1, math.ceil(math.log2(p))) / n
)
def grem(
    store: GraphStore,
    p: int,
    seed: int,
    *,
    chunk_fraction: float,
    seed_method: str,
    chunk_refinement: bool,
) -> PartitionResult:
    """GREM over the store's edge stream; one pass per level of the recursive bisection."""
    fraction, chunk_edges = _chunk_size(chunk_fraction, store.num_edges)
    if not isinstance(chunk_refinement, bool):  # YAML's `no` is a bool; "no" is not
        raise ConfigError(
            f"partitioner.chunk_refinement: expected true or false, got {chunk_refinement!r}"
        )
    method = resolve_seed_method(str(seed_method))
    n = store.num_nodes
    stats: dict[str, Any] = {
        "chunk_fraction": fraction,
        "chunk_edges": chunk_edges,
        "seed_method": method,
        "chunk_refinement": chunk_refinement,
        "refinement_moves": 0,
        "seeded_groups": 0,
        "unseen_nodes_placed": 0,
        "levels": 0,
    }
    state = _State.of(n)
    first_part = np.array([0], dtype=np.int64)  # lowest part id of each group
    parts = np.array([p], dtype=np.int64)  # parts each group is split into
    stream = store.edge_stream(chunk_edges)
    while n and (parts > 1).any():
        level = _bisect_level(stream, state, parts, method, seed, chunk_refinement, stats)
        parts, first_part = _split_groups(state, level, parts, first_part)
        stats["levels"] += 1
    owner = first_part[state.group].astype(np.int32) if n else np.zeros(0, dtype=np.int32)
    stats["passes"] = stream.passes
    return PartitionResult(owner, stats)
