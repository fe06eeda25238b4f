"""Refinement post-pass for any vertex partition: size-constrained label propagation, streamed.

`partitioner.refine_passes: r` (shared by every partitioner, default 0) runs r passes over the
store's on-disk CSR (gnnbench.data.adjacency, what LDG and Fennel stream; shared with them inside
`PartitionSpec.run_refined`, built here otherwise) after the partitioner returns, inside the
measured step. Each pass visits the nodes in id order; node v in
block o counts its neighbours per block at their current blocks and moves to the block t != o
holding most of them (ties: the smaller block, then the lower index) when

    size(t) + 1 <= bound         bound = max(largest block on entry, ceil(1.03 * |V| / p)), and
    count(t) > count(o)          the move strictly reduces the edge cut (by count(t) - count(o)),
    or count(t) == count(o) and size(t) + 1 < size(o)
                                 same cut, better balance (lets later moves leave a plateau)

so the cut never grows and the largest block never exceeds max(the partitioner's own largest
block, 3% over the mean): a partitioner's balance is kept, and a tight one may use up to 3%.
Every move lowers (cut, sum of squared block sizes) lexicographically, so the passes end.
Self loops count for no block. Passes stop early when one moves nothing (later ones would not).

State: the owner array (modified in place), p block sizes and p neighbour counts; the CSR is read
one bounded window at a time. The stats hold the cut on entry (`refine_cut_0`, counted in the
first pass from the rows' later neighbours, which nothing has moved yet) and, per pass i, the
moves (`refine_moves_<i>`) and the cut after it (`refine_cut_<i>`, exact: each move's gain is
known), in edges.

`partitioner.refine_objective: replication` (default `edge_cut`, the rule above) runs the same
passes against the replication factor instead: RF = 1 + H / |V|, where the halo count H sums,
over the nodes v, the blocks other than v's own that hold a neighbour of v (DESIGN.md's
sum_i |O_i ∪ N(O_i)| = |V| + H). METIS and the cut rule minimise cut edges, a proxy; this
minimises what a GNN partition stores and exchanges. Moving v from block a to block t changes H by

    [v has a neighbour in a] - [v has a neighbour in t]                  (v's own halo entries)
    + sum over neighbours u of v:  [t != owner(u) and u has no neighbour in t yet]
                                 - [a != owner(u) and v is u's only neighbour in a]

so each node keeps its neighbour count per block: a |V| x p matrix of uint8 (|V| * p bytes, 16 MB
for a million nodes at p = 16, taken out of the CSR window's budget so the peak stays about a
node stream's; built by one more stream over the CSR, updated at every move; a count that reaches
255 stays there, exact below). v may move to a block t holding one of its
neighbours and with room under the same bound, the one with the lowest (ΔH, Δcut, size(t), t),
when that lowers (H, cut, sum of squared block sizes) lexicographically: H never grows, and the
passes end. The stats add `refine_halo_0` and `refine_halo_<i>` (H on entry and after pass i) and
`refine_saturated_counts` (matrix entries at 255 at the end). A saturated count of u's neighbours
in block b can no longer tell when the last of them leaves, so a later move may add b to u's
halo unseen: while no count saturates, H is tracked exactly and never grows; the cut and v's own
term are always exact (counted from v's row).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numba
import numpy as np

from gnnbench.data.adjacency import DEFAULT_MAX_ENTRIES, ensure_adjacency
from gnnbench.data.store import GraphStore
from gnnbench.partition.base import PartitionResult, check_refine_objective

# Bump when refinement's output changes: part of the cache key of every refined book.
REFINE_VERSION = "2"
REFINE_SLACK = 1.03  # a refined block may hold up to 3% over the mean (or the entry maximum)


def slack_balance_bound(p: int, num_nodes: int) -> float:
    """max |O_i| / (|V|/p) a block within REFINE_SLACK may reach: ceil(1.03 |V| / p) over the mean
    (the refinement's bound, and quotient's node FM's)."""
    return math.ceil(REFINE_SLACK * num_nodes / p) / (num_nodes / p)


COUNT_CAP = 255  # a uint8 neighbour count saturates here (and is then never decremented)


@numba.njit(cache=True)
def _refine_block(nodes, starts, stops, indices, owner, sizes, bound, counts, count_cut):
    """One pass's moves over one block of rows; return (moves, cut gain, entry cut of rows)."""
    p = sizes.shape[0]
    moves = 0
    gain = 0
    entry_cut = 0
    for i in range(nodes.shape[0]):
        v = nodes[i]
        home = owner[v]
        counts[:] = 0
        for e in range(starts[i], stops[i]):
            u = indices[e]
            if u == v:
                continue
            block = owner[u]
            counts[block] += 1
            if count_cut and u > v and block != home:
                entry_cut += 1  # both ends still as on entry: v not yet visited, u after v
        best = home
        for j in range(p):
            if j == home or sizes[j] + 1 > bound:
                continue
            if counts[j] > counts[best] or (counts[j] == counts[best] and sizes[j] < sizes[best]):
                best = j
        if best != home and (
            counts[best] > counts[home]
            or (counts[best] == counts[home] and sizes[best] + 1 < sizes[home])
        ):
            gain += counts[best] - counts[home]
            owner[v] = best
            sizes[home] -= 1
            sizes[best] += 1
            moves += 1
    return moves, gain, entry_cut


@numba.njit(cache=True)
def _count_block(nodes, starts, stops, indices, owner, counts):
    """Fill the rows' neighbour counts per block; return (cut edges counted twice, halo)."""
    p = counts.shape[1]
    cut_ends = 0
    halo = 0
    for i in range(nodes.shape[0]):
        v = nodes[i]
        for e in range(starts[i], stops[i]):
            u = indices[e]
            if u == v:
                continue
            block = owner[u]
            if counts[v, block] < COUNT_CAP:
                counts[v, block] += 1
            if block != owner[v]:
                cut_ends += 1
        for j in range(p):
            if j != owner[v] and counts[v, j] > 0:
                halo += 1
    return cut_ends, halo


@numba.njit(cache=True)
def _replication_block(
    nodes, starts, stops, indices, owner, sizes, bound, counts, targets, halo_deltas, row_counts
):
    """One pass's replication moves over one block of rows; return (moves, halo gain, cut gain)."""
    p = sizes.shape[0]
    moves = 0
    halo_gain = 0
    cut_gain = 0
    for i in range(nodes.shape[0]):
        v = nodes[i]
        home = owner[v]
        row_counts[:] = 0  # v's neighbours per block, exact (the matrix row may be saturated)
        for e in range(starts[i], stops[i]):
            if indices[e] != v:
                row_counts[owner[indices[e]]] += 1
        k = 0
        for j in range(p):  # candidate blocks: a neighbour there, and room under the bound
            if j != home and row_counts[j] > 0 and sizes[j] + 1 <= bound:
                targets[k] = j
                halo_deltas[k] = 0
                k += 1
        if k == 0:
            continue
        leaves = 0  # neighbours u for which v is the last neighbour in home (u outside home)
        for e in range(starts[i], stops[i]):
            u = indices[e]
            if u == v:
                continue
            block = owner[u]
            if block != home and counts[u, home] == 1:
                leaves += 1
            for c in range(k):
                if block != targets[c] and counts[u, targets[c]] == 0:
                    halo_deltas[c] += 1  # u would gain targets[c] as a halo block
        own_home = 1 if row_counts[home] > 0 else 0
        best = -1
        best_halo = 0
        best_cut = 0
        for c in range(k):
            t = targets[c]
            halo_delta = own_home - 1 - leaves + halo_deltas[c]
            cut_delta = row_counts[home] - row_counts[t]
            if best == -1 or (halo_delta, cut_delta, sizes[t]) < (best_halo, best_cut, sizes[best]):
                best, best_halo, best_cut = t, halo_delta, cut_delta
        if not (
            best_halo < 0
            or (best_halo == 0 and best_cut < 0)
            or (best_halo == 0 and best_cut == 0 and sizes[best] + 1 < sizes[home])
        ):
            continue
        owner[v] = best
        sizes[home] -= 1
        sizes[best] += 1
        moves += 1
        halo_gain -= best_halo
        cut_gain -= best_cut
        for e in range(starts[i], stops[i]):
            u = indices[e]
            if u == v:
                continue
            if counts[u, home] < COUNT_CAP:
                counts[u, home] -= 1
            if counts[u, best] < COUNT_CAP:
                counts[u, best] += 1
    return moves, halo_gain, cut_gain


def refine_bound(sizes: np.ndarray, num_nodes: int, p: int, slack: float = REFINE_SLACK) -> int:
    """Largest block size a move may produce: the entry maximum or `slack` times the mean."""
    return max(int(sizes.max()), math.ceil(slack * num_nodes / p))


def refine(
    store: GraphStore,
    owner: np.ndarray,
    p: int,
    passes: int,
    objective: str = "edge_cut",
    slack: float = REFINE_SLACK,
) -> dict[str, Any]:
    """Refine `owner` (int32, modified in place) by up to `passes` passes, blocks up to `slack`
    times the mean (or the entry maximum); return the stats."""
    check_refine_objective(objective)
    adjacency = ensure_adjacency(store)
    sizes = np.bincount(owner, minlength=p).astype(np.int64)
    bound = refine_bound(sizes, store.num_nodes, p, slack)
    stats: dict[str, Any] = {"refine_passes": passes, "refine_bound": bound}
    if objective == "edge_cut":
        _cut_passes(adjacency, owner, sizes, bound, passes, stats)
    else:
        _replication_passes(adjacency, owner, sizes, bound, passes, stats)
    stats["refine_stream_passes"] = adjacency.passes
    return stats


def _cut_passes(adjacency, owner, sizes, bound, passes, stats) -> None:
    counts = np.zeros(len(sizes), dtype=np.int64)
    cut = 0
    for i in range(1, passes + 1):
        moves = gain = 0
        for block in adjacency.blocks("id"):
            block_moves, block_gain, block_cut = _refine_block(
                *block.rows,
                owner,
                sizes,
                bound,
                counts,
                i == 1,
            )
            moves += block_moves
            gain += block_gain
            cut += block_cut
        block = None  # drop the last window before the next pass maps its first
        if i == 1:
            stats["refine_cut_0"] = int(cut)
        cut -= gain
        stats[f"refine_moves_{i}"] = int(moves)
        stats[f"refine_cut_{i}"] = int(cut)
        if moves == 0:
            break


def _replication_passes(adjacency, owner, sizes, bound, passes, stats) -> None:
    p = len(sizes)
    counts = np.zeros((len(owner), p), dtype=np.uint8)
    # Windows a quarter of a node stream's, less the counts: the counts, the windows and their
    # per-node arrays (24 bytes a node) then stay under what the node-stream partitioner before
    # it held (10 M edges, p=16: 138 MB with full windows, LDG's own 123). Windows are mapped,
    # not copied, so more of them cost little time. Never under 1 Mi entries.
    itemsize = adjacency.indices_layout.dtype.itemsize
    entries = max(1 << 20, (DEFAULT_MAX_ENTRIES - counts.nbytes // itemsize) // 4)
    cut_ends = halo = 0
    for block in adjacency.blocks("id", max_entries=entries):  # one stream fills the counts
        block_cut_ends, block_halo = _count_block(*block.rows, owner, counts)
        cut_ends += block_cut_ends
        halo += block_halo
    block = None
    cut = cut_ends // 2
    stats["refine_cut_0"], stats["refine_halo_0"] = int(cut), int(halo)
    targets = np.zeros(p, dtype=np.int64)
    halo_deltas = np.zeros(p, dtype=np.int64)
    row_counts = np.zeros(p, dtype=np.int64)
    for i in range(1, passes + 1):
        moves = 0
        for block in adjacency.blocks("id", max_entries=entries):
            block_moves, halo_gain, cut_gain = _replication_block(
                *block.rows,
                owner,
                sizes,
                bound,
                counts,
                targets,
                halo_deltas,
                row_counts,
            )
            moves += block_moves
            halo -= halo_gain
            cut -= cut_gain
        block = None
        stats[f"refine_moves_{i}"] = int(moves)
        stats[f"refine_cut_{i}"] = int(cut)
        stats[f"refine_halo_{i}"] = int(halo)
        if moves == 0:
            break
    stats["refine_saturated_counts"] = int(np.count_nonzero(counts == COUNT_CAP))


def refine_result(
    store: GraphStore, result: PartitionResult, p: int, passes: int, objective: str = "edge_cut"
) -> PartitionResult:
    """The stage's hook: refine a partitioner's owners when passes > 0, adding the passes made."""
    if passes <= 0:
        return result
    owner = np.asarray(result.owner)
    if owner.shape != (store.num_nodes,) or (len(owner) and (owner.min() < 0 or owner.max() >= p)):
        return result  # the stage's owner check names the partitioner that returned this
    owner = owner.astype(np.int32)  # a copy: the partitioner's array may be read-only or shared
    stats = refine(store, owner, p, passes, objective)
    result.stats["passes"] = int(result.stats.get("passes", 0)) + stats["refine_stream_passes"]
    result.stats.update(stats)
    result.owner = owner
    return result


def warm_up() -> None:
    """Compile the kernels for both id widths, read-only (mapped windows) or not, on a path."""
    for dtype, writeable in itertools.product((np.int32, np.int64), (True, False)):
        indices = np.array([1, 0, 2, 1], dtype=dtype)
        indices.setflags(write=writeable)
        rows = (
            np.arange(3, dtype=np.int64),
            np.array([0, 1, 3], dtype=np.int64),
            np.array([1, 3, 4], dtype=np.int64),
            indices,
        )
        owner = np.array([0, 1, 1], dtype=np.int32)
        sizes = np.array([1, 2], dtype=np.int64)
        _refine_block(*rows, owner, sizes, 3, np.zeros(2, dtype=np.int64), True)
        counts = np.zeros((3, 2), dtype=np.uint8)
        _count_block(*rows, owner, counts)
        scratch = [np.zeros(2, dtype=np.int64) for _ in range(3)]
        _replication_block(*rows, owner, sizes, 3, counts, *scratch)
