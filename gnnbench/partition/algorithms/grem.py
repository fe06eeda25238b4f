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
      that side has room: a refinement move.
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
from collections.abc import Mapping
from typing import Any

import numba
import numpy as np

from gnnbench.data.graph_ops import bfs_from
from gnnbench.data.store import GraphStore
from gnnbench.errors import ConfigError
from gnnbench.partition.base import PARTITIONERS, PartitionResult

# Bump when this module's output changes: part of every partition book's cache key.
VERSION = "1"

SEED_METHODS = ("auto", "pymetis", "bfs")


@numba.njit(cache=True)
def _chunk_csr(edges, group, parts, local):
    """CSR of a chunk's within-group edges over its nodes (sorted ids); `local` maps id -> row."""
    m = edges.shape[0]
    n = group.shape[0]
    inside = np.zeros(m, dtype=np.bool_)
    touched = np.empty(min(2 * m, n), dtype=np.int64)
    count = 0
    internal = 0
    for k in range(m):
        u = edges[k, 0]
        v = edges[k, 1]
        g = group[u]
        if group[v] != g or parts[g] < 2:
            continue
        inside[k] = True
        internal += 1
        if local[u] < 0:
            local[u] = 0
            touched[count] = u
            count += 1
        if local[v] < 0:
            local[v] = 0
            touched[count] = v
            count += 1
    if count * 16 > n:  # scanning the marks is cheaper than sorting
        nodes = np.empty(count, dtype=np.int64)
        i = 0
        for v in range(n):
            if local[v] == 0:
                nodes[i] = v
                i += 1
    else:
        nodes = np.sort(touched[:count])
    for i in range(count):
        local[nodes[i]] = i
    indptr = np.zeros(count + 1, dtype=np.int64)
    for k in range(m):
        if inside[k]:
            indptr[local[edges[k, 0]] + 1] += 1
            indptr[local[edges[k, 1]] + 1] += 1
    for i in range(count):
        indptr[i + 1] += indptr[i]
    cursor = indptr[:-1].copy()
    indices = np.empty(2 * internal, dtype=np.int32)
    for k in range(m):
        if inside[k]:
            lu = local[edges[k, 0]]
            lv = local[edges[k, 1]]
            indices[cursor[lu]] = lv
            cursor[lu] += 1
            indices[cursor[lv]] = lu
            cursor[lv] += 1
    return nodes, indptr, indices


@numba.njit(cache=True)
def _reset_local(local, nodes):
    for i in range(nodes.shape[0]):
        local[nodes[i]] = -1


@numba.njit(cache=True)
def _subgraph(indptr, indices, rows):
    """The CSR induced by the sorted local rows `rows` (their edges stay among them)."""
    relabel = np.full(indptr.shape[0] - 1, -1, dtype=np.int64)
    for i in range(rows.shape[0]):
        relabel[rows[i]] = i
    sub_indptr = np.zeros(rows.shape[0] + 1, dtype=np.int64)
    for i in range(rows.shape[0]):
        r = rows[i]
        sub_indptr[i + 1] = sub_indptr[i] + indptr[r + 1] - indptr[r]
    sub_indices = np.empty(sub_indptr[-1], dtype=np.int32)
    for i in range(rows.shape[0]):
        r = rows[i]
        base = sub_indptr[i] - indptr[r]
        for e in range(indptr[r], indptr[r + 1]):
            sub_indices[base + e] = relabel[indices[e]]
    return sub_indptr, sub_indices


@numba.njit(cache=True)
def _bfs_bisect(indptr, indices, target0):
    """Side 0 = the first `target0` nodes of a BFS from a pseudo-peripheral node, then onwards."""
    n = indptr.shape[0] - 1
    visited = np.zeros(n, dtype=np.bool_)
    order = np.empty(n, dtype=np.int64)
    end = bfs_from(indptr, indices, 0, visited, order, 0)
    start = order[end - 1]
    visited[:] = False
    filled = bfs_from(indptr, indices, start, visited, order, 0)
    next_unvisited = 0
    while filled < n:
        while visited[next_unvisited]:
            next_unvisited += 1
        filled = bfs_from(indptr, indices, next_unvisited, visited, order, filled)
    membership = np.ones(n, dtype=np.int8)
    for i in range(min(target0, n)):
        membership[order[i]] = 0
    return membership


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
    nodes, indptr, indices, group, active, side, stored0, stored1, load, caps, shares0, shares1
):
    """Placement (breadth first from assigned nodes) then estimates and refinement; -> moves."""
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
        if best != current and load[g, best] < caps[g, best]:
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


def _resolve_seed_method(name: str) -> str:
    if name not in SEED_METHODS:
        raise ConfigError(
            f"partitioner.seed_method: expected one of {', '.join(SEED_METHODS)}, got {name!r}"
        )
    if name == "bfs":
        return "bfs"
    try:
        from pymetis import CSRAdjacency  # noqa: F401  (pymetis >= 2025.2)
    except ImportError:
        if name == "pymetis":
            raise ConfigError(
                "partitioner.seed_method: 'pymetis' (>= 2025.2) is not installed "
                "(pip install pymetis), or use 'bfs' / 'auto'"
            ) from None
        return "bfs"
    return "pymetis"


def _seed_membership(
    method: str, indptr: np.ndarray, indices: np.ndarray, k0: int, k: int, seed: int
) -> np.ndarray:
    """Bisect one group's seed chunk: side per node (int8), side 0 taking k0/k of the nodes."""
    n = len(indptr) - 1
    if method == "pymetis":
        import pymetis

        share0 = k0 / k
        _, membership = pymetis.part_graph(
            2,
            pymetis.CSRAdjacency(indptr, indices),
            tpwgts=[share0, 1.0 - share0],
            recursive=True,
            options=pymetis.Options(seed=int(seed)),
        )
        return np.asarray(membership, dtype=np.int8)
    return _bfs_bisect(indptr, indices, (2 * n * k0 + k) // (2 * k))


@PARTITIONERS.register("grem")
def grem(store: GraphStore, p: int, seed: int, params: Mapping[str, Any]) -> PartitionResult:
    """GREM over the store's edge stream; one pass per level of the recursive bisection."""
    fraction = float(params.get("chunk_fraction", 0.10))
    if not 0.0 < fraction <= 1.0:
        raise ConfigError(
            f"partitioner.chunk_fraction: expected a number in (0, 1], got {fraction}"
        )
    method = _resolve_seed_method(str(params.get("seed_method", "auto")))
    n = store.num_nodes
    chunk_edges = max(1, math.ceil(fraction * store.num_edges))
    if 2 * chunk_edges >= 2**31:
        raise ConfigError(
            f"partitioner.chunk_fraction: chunks of {chunk_edges} edges are too large "
            "(at most 2^30 edges per chunk)"
        )
    stats: dict[str, Any] = {
        "chunk_fraction": fraction,
        "chunk_edges": chunk_edges,
        "seed_method": method,
        "refinement_moves": 0,
        "seeded_groups": 0,
        "unseen_nodes_placed": 0,
        "levels": 0,
    }
    group = np.zeros(n, dtype=np.int32)
    first_part = np.array([0], dtype=np.int64)  # lowest part id of each group
    parts = np.array([p], dtype=np.int64)  # parts each group is split into
    side = np.empty(n, dtype=np.int8)
    stored0 = np.empty(n, dtype=np.float32)
    stored1 = np.empty(n, dtype=np.float32)
    local = np.full(n, -1, dtype=np.int32)
    stream = store.edge_stream(chunk_edges)
    while n and (parts > 1).any():
        shares0 = parts // 2
        shares1 = parts - shares0
        group_nodes = np.bincount(group, minlength=len(parts)).astype(np.int64)
        caps = np.stack([-(-group_nodes * shares0 // parts), -(-group_nodes * shares1 // parts)], 1)
        load = np.zeros((len(parts), 2), dtype=np.int64)
        seeded = np.zeros(len(parts), dtype=np.bool_)
        side[:] = -1
        stored0[:] = 0
        stored1[:] = 0
        for chunk in stream:
            nodes, indptr, indices = _chunk_csr(chunk, group, parts, local)
            if len(nodes) == 0:
                continue
            active = seeded.copy()
            node_group = group[nodes]
            for g in np.unique(node_group[~seeded[node_group]]):
                rows = np.flatnonzero(node_group == g)
                if len(rows) == len(nodes):
                    sub_indptr, sub_indices = indptr, indices
                else:
                    sub_indptr, sub_indices = _subgraph(indptr, indices, rows)
                membership = _seed_membership(
                    method, sub_indptr, sub_indices, int(shares0[g]), int(parts[g]), seed
                )
                _apply_seed(nodes, rows, membership, side, load, caps, g)
                seeded[g] = True
                stats["seeded_groups"] += 1
            del node_group
            moves = _greedy_chunk(
                nodes, indptr, indices, group, active, side, stored0, stored1, load, caps,
                shares0, shares1,
            )  # fmt: skip
            stats["refinement_moves"] += int(moves)
            _reset_local(local, nodes)
            del nodes, indptr, indices
        stats["unseen_nodes_placed"] += int(
            _place_unseen(group, parts, side, load, caps, shares0, shares1)
        )
        # children: side 0 keeps the first floor(k/2) parts, side 1 the rest; leaves carry over
        split = parts > 1
        child0 = np.arange(len(parts)) + np.cumsum(split) - split
        child1 = child0 + split
        next_parts = np.empty(len(parts) + int(split.sum()), dtype=np.int64)
        next_first = np.empty_like(next_parts)
        next_parts[child0] = np.where(split, shares0, 1)
        next_first[child0] = first_part
        next_parts[child1[split]] = shares1[split]
        next_first[child1[split]] = first_part[split] + shares0[split]
        _next_group(group, side, child0.astype(np.int32), child1.astype(np.int32))
        parts, first_part = next_parts, next_first
        stats["levels"] += 1
    owner = first_part[group].astype(np.int32) if n else np.zeros(0, dtype=np.int32)
    stats["passes"] = stream.passes
    return PartitionResult(owner, stats)


# Each bisection level rounds a side's capacity up by at most one node per group.
grem.vertex_balance_bound = lambda params, p, n: 1.0 + p * max(1, math.ceil(math.log2(p))) / n
