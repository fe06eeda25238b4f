"""Gain-ranked FM refinement of a k-way partition: one kernel for a small weighted graph in memory
(quotient's graph of sub-partitions) and for bounded windows of the on-disk CSR (its nodes).

One FM pass (Fiduccia & Mattheyses 1982, k-way as in KaHIP's and METIS's refinement) over a set of
movable nodes, under

    bound = ceil(1.03 * total weight / p)      (3% over the mean, as METIS and REFINE_SLACK)

Every movable node with a neighbour in another block, and every node of a block over the bound,
enters a priority queue keyed by: whether its block is over the bound (those first), its best
gain (cut weight removed by moving it to the block with the most weight towards it among blocks
with room under the bound: adjacent blocks, or any block for a node of an overfull block, so a
block whose boundary faces only full blocks still sheds weight; ties: the smaller block, then the
lower index), then a seeded rank. The pass pops the first node, moves
it even at a negative gain (what lets FM leave a local minimum that label propagation stops in),
locks it, updates its movable neighbours' keys and queues them again (stale queue entries are
skipped by a version number), and stops when the queue empties or `patience` moves pass without a
new best prefix. It then rolls back to the best prefix: the lowest (weight over the bound, summed
over the blocks; cut), the shortest among equals. So no pass raises that pair: from a partition
within the bound the cut never rises and the bound holds; from one over it (METIS's split of
coarse nodes may be) the excess shrinks first, cut allowed; no block ever grows past
max(its size on entry, bound); and a pass that finds nothing better leaves the partition as it was.

- `refine_quotient`: the k sub-partitions (node weight: their size; edge weight: the edges
  between them) as one movable set, from the dense k x k matrix quotient already holds.
- `refine_nodes`: the graph's nodes, one CSR window at a time (ascending ids, as
  gnnbench.data.adjacency streams them); a window's nodes move, its rows' other ends stay where
  they are for the window. On a graph whose CSR fits one window (up to GLOBAL_ENTRIES entries)
  the pass is a global FM pass; on a larger one (windows of WINDOW_ENTRIES, every other pass
  shifted by half a window) a node's gain is exact but negative moves can only be recovered
  by neighbours in its own window. State: the owner array (|V| int32), p
  block sizes, and per window a window-nodes x p int32 matrix of connections, the queue (one
  entry per boundary node and per update of a moved node's neighbours) and the move log:
  O(|V| * p) bytes at most, bounded by the window otherwise.

Deterministic for a given seed (the rank breaking ties between equal gains).
"""

from __future__ import annotations

import heapq
import math
from typing import Any

import numba
import numpy as np

from gnnbench.data.adjacency import ensure_adjacency
from gnnbench.data.store import GraphStore
from gnnbench.partition.multilevel.contraction import CoarseGraph
from gnnbench.partition.refine import REFINE_SLACK

# quotient alone runs this module: bump its VERSION when this module's output changes.
# A CSR of at most GLOBAL_ENTRIES entries is refined in one window (a global FM pass); a larger
# one in windows of WINDOW_ENTRIES (the window's connections: its nodes x p int32). 1 Mi entries
# shifted by half a window every other pass cut as 4 Mi unshifted did on the 1 M-node RGG (34,260
# edges against 34,248) in a quarter of the memory: the multilevel partitioner's peak there.
GLOBAL_ENTRIES = 1 << 22
WINDOW_ENTRIES = 1 << 20
UNIT = np.zeros(0, dtype=np.int64)  # no weights given: every edge and node weighs 1


@numba.njit(cache=True)
def _weight(weights, index):
    return 1 if weights.shape[0] == 0 else weights[index]


@numba.njit(cache=True)
def _best_move(conn, i, home, node_weight, sizes, bound):
    """(gain, block) of node i's best move to an adjacent block with room, or to any block with
    room while its own is over the bound; block -1 if none."""
    anywhere = sizes[home] > bound  # an overfull block whose boundary faces only full blocks
    best = -1
    for t in range(sizes.shape[0]):
        if t == home or sizes[t] + node_weight > bound or (conn[i, t] == 0 and not anywhere):
            continue
        if best == -1 or conn[i, t] > conn[i, best]:
            best = t
        elif conn[i, t] == conn[i, best] and sizes[t] < sizes[best]:
            best = t
    if best == -1:
        return 0, -1
    return np.int64(conn[i, best]) - np.int64(conn[i, home]), best


@numba.njit(cache=True)
def _queue(heap, conn, i, home, node_weight, sizes, bound, rank, stamp):
    """Queue node i at its current key: (out of an overfull block first, best gain, rank)."""
    gain, target = _best_move(conn, i, home, node_weight, sizes, bound)
    if target >= 0:
        overfull = np.int64(1 if sizes[home] > bound else 0)
        heapq.heappush(
            heap, (-overfull, -gain, np.int64(rank[i]), np.int64(i), target, np.int64(stamp))
        )


@numba.njit(cache=True)
def _overfull(sizes, bound):
    """Weight over the bound, summed over the blocks."""
    total = 0
    for t in range(sizes.shape[0]):
        total += max(0, sizes[t] - bound)
    return total


@numba.njit(cache=True)
def fm_pass(
    lo, starts, stops, indices, weights, node_weights, owner, sizes, bound, rank, patience, conn
):  # fmt: skip
    """One FM pass over nodes lo .. lo + len(starts) - 1 (row i: indices[starts[i]:stops[i]],
    edge weights `weights` at the same positions); `owner` and `sizes` are updated in place to
    the best prefix. `conn` is a zeroed n x p scratch wide enough for a node's weight towards
    one block (int32 for unweighted rows: a degree). Return (cut weight removed, overfull
    weight removed, moves kept)."""
    n = starts.shape[0]
    for i in range(n):
        for e in range(starts[i], stops[i]):
            u = indices[e]
            if u != lo + i:
                conn[i, owner[u]] += _weight(weights, e)
    version = np.zeros(n, dtype=np.int32)
    locked = np.zeros(n, dtype=np.bool_)
    heap = [(np.int64(0), np.int64(0), np.int64(0), np.int64(0), np.int64(0), np.int64(0))]
    heap.pop()
    for i in range(n):
        _queue(heap, conn, i, owner[lo + i], _weight(node_weights, i), sizes, bound, rank, 0)
    moved = np.empty(n, dtype=np.int32)
    moved_from = np.empty(n, dtype=np.int32)
    moves = 0
    delta = 0  # cut change so far (negative: lower)
    overfull = _overfull(sizes, bound)
    entry_overfull = overfull
    best = (overfull, delta)
    best_moves = 0
    while len(heap) > 0:
        flag, key, order, i, target, stamp = heapq.heappop(heap)
        if locked[i] or stamp != version[i]:
            continue
        home = owner[lo + i]
        node_weight = _weight(node_weights, i)
        gain, now = _best_move(conn, i, home, node_weight, sizes, bound)
        if now != target or gain != -key or -flag != (1 if sizes[home] > bound else 0):
            version[i] += 1  # a block filled or emptied since: queue it anew
            _queue(heap, conn, i, home, node_weight, sizes, bound, rank, version[i])
            continue
        overfull -= max(0, sizes[home] - bound) - max(0, sizes[home] - node_weight - bound)
        owner[lo + i] = target
        sizes[home] -= node_weight
        sizes[target] += node_weight
        locked[i] = True
        moved[moves] = i
        moved_from[moves] = home
        moves += 1
        delta -= gain
        if (overfull, delta) < best:
            best = (overfull, delta)
            best_moves = moves
        elif moves - best_moves >= patience:
            break
        for e in range(starts[i], stops[i]):
            j = indices[e] - lo
            if j < 0 or j >= n or j == i:
                continue
            w = _weight(weights, e)
            conn[j, home] -= w
            conn[j, target] += w
            if not locked[j]:
                version[j] += 1
                weight_j = _weight(node_weights, j)
                _queue(heap, conn, j, owner[lo + j], weight_j, sizes, bound, rank, version[j])
    for m in range(moves - 1, best_moves - 1, -1):  # roll back past the best prefix
        i = moved[m]
        node_weight = _weight(node_weights, i)
        sizes[owner[lo + i]] -= node_weight
        sizes[moved_from[m]] += node_weight
        owner[lo + i] = moved_from[m]
    return -best[1], entry_overfull - best[0], best_moves


def fm_bound(sizes: np.ndarray, p: int) -> int:
    """Largest block weight a move may produce: 3% over the mean."""
    return math.ceil(REFINE_SLACK * int(sizes.sum()) / p)


def overfull(sizes: np.ndarray, bound: int) -> int:
    """Weight over the bound, summed over the blocks."""
    return int(np.maximum(sizes - bound, 0).sum())


def patience(movable: int) -> int:
    """Moves without a new best prefix before a pass stops: a tenth of the movable nodes, >= 64."""
    return max(64, movable // 10)


def refine_quotient(
    weights: np.ndarray, sizes: np.ndarray, part: np.ndarray, p: int, passes: int, seed: int
) -> dict[str, Any]:
    """Up to `passes` FM passes moving whole sub-partitions (`part`, int64, in place) over the
    dense k x k quotient matrix; return the stats (cut in edges and overfull weight after each)."""
    if not passes:
        return {}
    return refine_graph(CoarseGraph.from_dense(weights, sizes), part, p, passes, seed, "subpart_fm")


def refine_graph(
    graph: CoarseGraph, part: np.ndarray, p: int, passes: int, seed: int, prefix: str
) -> dict[str, Any]:
    """Up to `passes` FM passes moving the nodes of a weighted graph held in memory (`part`,
    int64, in place); return the stats `<prefix>_cut_<i>` (edge weight cut) and
    `<prefix>_overfull_<i>` after each pass i, and `<prefix>_bound`."""
    if not passes:
        return {}
    k = len(part)
    node_weights = graph.node_weights.astype(np.int64)
    loads = np.bincount(part, weights=node_weights, minlength=p).astype(np.int64)
    bound = fm_bound(loads, p)
    rank = np.random.default_rng(seed).permutation(k).astype(np.int64)
    cut = graph.cut(part)
    stats: dict[str, Any] = {f"{prefix}_bound": bound, f"{prefix}_cut_0": cut}
    stats[f"{prefix}_overfull_0"] = overfull(loads, bound)
    for i in range(1, passes + 1):
        gain, _, kept = fm_pass(
            0, graph.indptr[:-1], graph.indptr[1:], graph.indices, graph.edge_weights,
            node_weights, part, loads, bound, rank, patience(k), np.zeros((k, p), dtype=np.int64),
        )  # fmt: skip
        cut -= int(gain)
        stats[f"{prefix}_cut_{i}"] = cut
        stats[f"{prefix}_overfull_{i}"] = overfull(loads, bound)
        if kept == 0:
            break
    return stats


def refine_nodes(
    store: GraphStore, owner: np.ndarray, p: int, passes: int, seed: int
) -> dict[str, Any]:
    """Up to `passes` windowed FM passes over the store's CSR moving single nodes (`owner`,
    int32, in place); return the stats (per pass: cut edges removed, moves kept, overfull
    nodes after)."""
    adjacency = ensure_adjacency(store)
    sizes = np.bincount(owner, minlength=p).astype(np.int64)
    bound = fm_bound(sizes, p)
    stats: dict[str, Any] = {"node_fm_bound": bound, "node_fm_overfull_0": overfull(sizes, bound)}
    streams = adjacency.passes
    entries = int(adjacency.indptr[-1])
    window = entries if entries <= GLOBAL_ENTRIES else WINDOW_ENTRIES
    for i in range(1, passes + 1):
        gain = moves = 0
        # odd passes shift the windows by half of one: a node by a window's edge, which can only
        # move with half its neighbours, is inside a window on the next pass
        first = window // 2 if i % 2 and window < entries else window
        for block in adjacency.blocks("id", max_entries=window, first_entries=first):
            lo = int(block.nodes[0])
            rng = np.random.default_rng((seed, lo))
            n = len(block.nodes)
            window_gain, _, window_moves = fm_pass(
                lo, block.starts, block.stops, block.indices, UNIT, UNIT, owner, sizes, bound,
                rng.permutation(n), patience(n), np.zeros((n, p), dtype=np.int32),
            )  # fmt: skip
            gain += int(window_gain)
            moves += int(window_moves)
            del block  # unmapped before the stream maps the next window, not after
        stats[f"node_fm_gain_{i}"] = gain
        stats[f"node_fm_moves_{i}"] = moves
        stats[f"node_fm_overfull_{i}"] = overfull(sizes, bound)
        if moves == 0:
            break
    stats["node_fm_stream_passes"] = adjacency.passes - streams
    return stats
