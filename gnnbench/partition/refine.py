"""Refinement post-pass for any vertex partition: size-constrained label propagation, streamed.

`partitioner.refine_passes: r` (shared by every partitioner, default 0) runs r passes over the
store's on-disk CSR (gnnbench.data.adjacency, the file LDG and Fennel stream) after the
partitioner returns, inside the measured step. Each pass visits the nodes in id order; node v in
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
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numba
import numpy as np

from gnnbench.data.adjacency import ensure_adjacency
from gnnbench.data.store import GraphStore
from gnnbench.partition.base import PartitionResult

# Bump when refinement's output changes: part of the cache key of every refined book.
REFINE_VERSION = "2"
REFINE_SLACK = 1.03  # a refined block may hold up to 3% over the mean (or the entry maximum)


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


def refine_bound(sizes: np.ndarray, num_nodes: int, p: int) -> int:
    """Largest block size a move may produce: the entry maximum or 3% over the mean."""
    return max(int(sizes.max()), math.ceil(REFINE_SLACK * num_nodes / p))


def refine(store: GraphStore, owner: np.ndarray, p: int, passes: int) -> dict[str, Any]:
    """Refine `owner` (int32, modified in place) by up to `passes` passes; return the stats."""
    adjacency = ensure_adjacency(store)
    sizes = np.bincount(owner, minlength=p).astype(np.int64)
    bound = refine_bound(sizes, store.num_nodes, p)
    counts = np.zeros(p, dtype=np.int64)
    stats: dict[str, Any] = {"refine_passes": passes, "refine_bound": bound}
    cut = 0
    for i in range(1, passes + 1):
        moves = gain = 0
        for block in adjacency.blocks("id"):
            block_moves, block_gain, block_cut = _refine_block(
                block.nodes,
                block.starts,
                block.stops,
                block.indices,
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
    stats["refine_stream_passes"] = adjacency.passes
    return stats


def refine_result(
    store: GraphStore, result: PartitionResult, p: int, passes: int
) -> PartitionResult:
    """The stage's hook: refine a partitioner's owners when passes > 0, adding the passes made."""
    if passes <= 0:
        return result
    owner = np.asarray(result.owner)
    if owner.shape != (store.num_nodes,) or (len(owner) and (owner.min() < 0 or owner.max() >= p)):
        return result  # the stage's owner check names the partitioner that returned this
    owner = owner.astype(np.int32)  # a copy: the partitioner's array may be read-only or shared
    stats = refine(store, owner, p, passes)
    result.stats["passes"] = int(result.stats.get("passes", 0)) + stats["refine_stream_passes"]
    result.stats.update(stats)
    result.owner = owner
    return result


def prepare_refine(store: GraphStore) -> None:
    """Before measuring: the store's cached CSR (as LDG's prepare_store) and the compiled kernel."""
    ensure_adjacency(store)
    _warm_up()


def _warm_up() -> None:
    """Compile the kernel for both id widths, read-only (mapped windows) or not, on a path."""
    for dtype, writeable in itertools.product((np.int32, np.int64), (True, False)):
        indices = np.array([1, 0, 2, 1], dtype=dtype)
        indices.setflags(write=writeable)
        owner = np.array([0, 1, 1], dtype=np.int32)
        _refine_block(
            np.arange(3, dtype=np.int64),
            np.array([0, 1, 3], dtype=np.int64),
            np.array([1, 3, 4], dtype=np.int64),
            indices,
            owner,
            np.array([1, 2], dtype=np.int64),
            3,
            np.zeros(2, dtype=np.int64),
            True,
        )
