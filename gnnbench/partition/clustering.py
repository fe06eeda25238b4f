"""Multilevel coarsening by size-constrained label propagation, in O(|V|) bytes beside the CSR.

The coarsening of a multilevel partitioner as KaMinPar's (Gottesbüren et al., ESA 2021), over the
on-disk CSR (gnnbench.data.adjacency) read one bounded window at a time:

- `label_propagation`: every node starts as its own cluster; a pass visits the nodes in id order
  and moves each to the neighbouring cluster it has the most edge weight to, among clusters whose
  weight stays within `max_weight`, when that is more than it has to its own cluster (ties: a
  seeded hash of the cluster, so no id order is favoured). Passes stop early when one moves no
  node; after the first pass only nodes a neighbour of which moved are visited again. State: the
  label and cluster-weight arrays and one connection scratch of |V| entries (reset after each
  node: only the entries it touched), int32 while the weights fit, and two |V| flags.
- `coarse_graph`: the clusters' weighted graph (node weight: summed member weights; edge weight:
  summed weights of the edges between two clusters; both directions kept, as a CSR for METIS).
  Each window's cluster pairs are summed, and merged into a running sorted list once the pending
  ones reach its size: its memory is about twice the coarse graph plus one window's pairs.
- `coarsen`: one level from the on-disk CSR, then more levels from each coarse graph in memory
  while it has more than `coarse_nodes` nodes and a level still shrinks it by a tenth.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numba
import numpy as np

from gnnbench.data.adjacency import AdjacencyStream

# quotient alone runs this module: bump its VERSION when this module's output changes.
UNIT = np.zeros(0, dtype=np.int64)  # no weights given: every node and edge weighs 1
PAIR_WINDOW = 1 << 21  # CSR entries per window while the coarse graph is built (8 bytes a pair)
MIN_SHRINK = 0.9  # a level that keeps more than this fraction of its nodes ends the coarsening

Rows = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class CoarseGraph:
    """A weighted graph in memory: node i's neighbours indices[indptr[i]:indptr[i + 1]]."""

    indptr: np.ndarray
    indices: np.ndarray
    edge_weights: np.ndarray
    node_weights: np.ndarray

    @classmethod
    def from_dense(cls, weights: np.ndarray, node_weights: np.ndarray) -> CoarseGraph:
        """The graph of a dense k x k matrix of edge weights (its nonzero entries)."""
        rows, cols = np.nonzero(weights)
        indptr = np.zeros(len(weights) + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=len(weights)), out=indptr[1:])
        return cls(indptr, cols, weights[rows, cols].astype(np.int64), node_weights)

    @property
    def num_nodes(self) -> int:
        return len(self.indptr) - 1

    def cut(self, part: np.ndarray) -> int:
        """Edge weight between parts (each edge is held in both directions)."""
        sources = np.repeat(part, np.diff(self.indptr))
        return int(self.edge_weights[sources != part[self.indices]].sum()) // 2

    def rows(self, max_entries: int = PAIR_WINDOW) -> Iterator[Rows]:
        """One pass over the rows in id order, about `max_entries` entries at a time."""
        lo = 0
        while lo < self.num_nodes:
            hi = int(np.searchsorted(self.indptr, self.indptr[lo] + max_entries, side="right")) - 1
            hi = min(max(hi, lo + 1), self.num_nodes)
            base, stop = int(self.indptr[lo]), int(self.indptr[hi])
            yield (
                np.arange(lo, hi, dtype=np.int64),
                self.indptr[lo:hi] - base,
                self.indptr[lo + 1 : hi + 1] - base,
                self.indices[base:stop],
                self.edge_weights[base:stop],
            )
            lo = hi


@dataclass(frozen=True)
class Level:
    """One coarsening step: the cluster of every finer node, and the clusters' graph."""

    label: np.ndarray
    graph: CoarseGraph


def disk_rows(adjacency: AdjacencyStream, max_entries: int) -> Callable[[], Iterator[Rows]]:
    """Passes over the on-disk CSR as unweighted rows."""

    def one_pass() -> Iterator[Rows]:
        for block in adjacency.blocks("id", max_entries=max_entries):
            yield (*block.rows, UNIT)

    return one_pass


def coarsen(
    adjacency: AdjacencyStream, max_weight: int, passes: int, coarse_nodes: int, seed: int,
    block: np.ndarray = UNIT,
) -> list[Level]:  # fmt: skip
    """Levels of label-propagation clusters of at most `max_weight` nodes, the first from the
    on-disk CSR, then in memory while the coarsest graph has more than `coarse_nodes` nodes.
    With a `block` per node, clusters stay inside blocks (a V-cycle keeps its partition)."""
    num_nodes = adjacency.num_nodes
    rows = disk_rows(adjacency, PAIR_WINDOW)
    if num_nodes <= coarse_nodes:  # already as small as the coarsest level: its nodes are the level
        label, count = np.arange(num_nodes, dtype=np.int32), num_nodes
    else:
        label, count = label_propagation(
            rows, num_nodes, adjacency.max_degree, max_weight, passes, seed, UNIT, block
        )
    levels = [Level(label, coarse_graph(rows(), label, count))]
    while levels[-1].graph.num_nodes > coarse_nodes:
        graph = levels[-1].graph
        if block.shape[0]:
            block = cluster_values(levels[-1].label, block, graph.num_nodes)
        degree = int(np.diff(graph.indptr).max()) if graph.num_nodes else 0
        label, count = label_propagation(
            graph.rows, graph.num_nodes, degree, max_weight, passes, seed + len(levels),
            graph.node_weights, block,
        )  # fmt: skip
        if count > MIN_SHRINK * graph.num_nodes:
            break
        levels.append(Level(label, coarse_graph(graph.rows(), label, count, graph.node_weights)))
    return levels


def cluster_values(label: np.ndarray, values: np.ndarray, count: int) -> np.ndarray:
    """The value of each of the `count` clusters `label` names, from its members (who share
    one: their block)."""
    clusters = np.empty(count, dtype=values.dtype)
    clusters[label] = values
    return clusters


@numba.njit(cache=True)
def _tie_rank(cluster, seed):
    """A seeded pseudo-random rank of a cluster (splitmix64's finaliser)."""
    z = np.uint64(cluster) + np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@numba.njit(cache=True)
def _cluster_rows(
    nodes, starts, stops, indices, edge_weights, node_weights,
    label, cluster_weight, max_weight, conn, touched, seed, block, active, next_active,
):  # fmt: skip
    """One label-propagation pass over these rows (labels and weights in place); the moves.
    With a `block` per node (else empty), a node joins only clusters of its own block. Only
    `active` nodes are visited; a move makes the mover's neighbours active for the next pass."""
    moves = 0
    for i in range(nodes.shape[0]):
        v = nodes[i]
        if not active[v]:
            continue
        own = label[v]
        count = 0
        for e in range(starts[i], stops[i]):
            u = indices[e]
            if u == v or (block.shape[0] and block[u] != block[v]):
                continue
            c = label[u]
            if conn[c] == 0:
                touched[count] = c
                count += 1
            conn[c] += 1 if edge_weights.shape[0] == 0 else edge_weights[e]
        weight = 1 if node_weights.shape[0] == 0 else node_weights[v]
        best = own
        best_conn = conn[own]
        best_rank = _tie_rank(own, seed)
        for j in range(count):
            c = touched[j]
            if c == own or cluster_weight[c] + weight > max_weight:
                continue
            rank = _tie_rank(c, seed)
            if conn[c] > best_conn or (conn[c] == best_conn and rank > best_rank):
                best, best_conn, best_rank = c, conn[c], rank
        moved = best != own and best_conn > conn[own]
        for j in range(count):
            conn[touched[j]] = 0
        if moved:
            label[v] = best
            cluster_weight[own] -= weight
            cluster_weight[best] += weight
            moves += 1
            for e in range(starts[i], stops[i]):
                next_active[indices[e]] = True
    return moves


def label_propagation(
    rows: Callable[[], Iterable[Rows]], num_nodes: int, max_degree: int, max_weight: int,
    passes: int, seed: int, node_weights: np.ndarray = UNIT, block: np.ndarray = UNIT,
) -> tuple[np.ndarray, int]:  # fmt: skip
    """Clusters of at most `max_weight` (a node heavier than that stays alone) after `passes`
    passes over `rows()`; (the cluster of every node, 0..c-1 as int32; c)."""
    total = int(node_weights.sum()) if node_weights.shape[0] else num_nodes
    weight_type = np.int32 if total < 2**31 else np.int64
    label = np.arange(num_nodes, dtype=np.int32)
    if node_weights.shape[0]:
        cluster_weight = node_weights.astype(weight_type)
    else:
        cluster_weight = np.ones(num_nodes, dtype=weight_type)
    # a node's connection to one cluster is at most its weighted degree: int32 on the disk level
    conn = np.zeros(num_nodes, dtype=np.int32 if node_weights.shape[0] == 0 else np.int64)
    touched = np.empty(max(max_degree, 1), dtype=np.int32)
    # a node none of whose neighbours moved in the last pass has nothing new to join: skipped
    # (the first pass visits all); on the 10 M-node RGG a pass costs ~75 ns per CSR entry
    active = np.ones(num_nodes, dtype=np.bool_)
    for number in range(passes):
        moves = 0
        next_active = np.zeros(num_nodes, dtype=np.bool_)
        for nodes, starts, stops, indices, edge_weights in rows():
            moves += _cluster_rows(
                nodes, starts, stops, indices, edge_weights, node_weights,
                label, cluster_weight, max_weight, conn, touched, seed * 1000003 + number, block,
                active, next_active,
            )  # fmt: skip
        active = next_active
        if not moves:
            break
    return _compact(label)


def _compact(label: np.ndarray) -> tuple[np.ndarray, int]:
    """Labels renumbered 0..c-1 in the order of their values (in place); c."""
    present = np.zeros(len(label), dtype=bool)
    present[label] = True
    new_id = (np.cumsum(present) - 1).astype(np.int32)
    label[:] = new_id[label]
    return label, int(present.sum())


def coarse_graph(
    rows: Iterable[Rows], label: np.ndarray, count: int, node_weights: np.ndarray = UNIT
) -> CoarseGraph:
    """The graph of the `count` clusters `label` names, from one pass of weighted rows."""
    keys = np.zeros(0, dtype=np.int64)
    weights = np.zeros(0, dtype=np.int64)
    pending: list[tuple[np.ndarray, np.ndarray]] = []  # windows' pairs not merged yet
    for nodes, starts, stops, indices, edge_weights in rows:
        # only the crossing entries are materialised (no per-entry int64 temporaries: those
        # were the partitioner's peak, ~60 MB a window, on the 1 M-node RGG)
        crossing = _count_crossing(nodes, starts, stops, indices, label)
        window_keys = np.empty(crossing, dtype=np.int64)
        pair_weights = np.empty(crossing if edge_weights.shape[0] else 0, dtype=np.int64)
        _crossing_pairs(nodes, starts, stops, indices, edge_weights, label, count, window_keys,
                        pair_weights)  # fmt: skip
        pending.append(_merge(window_keys, pair_weights))
        # the running list is re-sorted once the pending pairs reach its size, not per window
        # (that was quadratic in the windows: 100 re-sorts of millions of pairs at 10 M nodes)
        if sum(len(pair) for pair, _ in pending) >= max(len(keys), PAIR_WINDOW):
            keys, weights = _merge_pending(keys, weights, pending)
            pending = []
    keys, weights = _merge_pending(keys, weights, pending)
    del pending
    indptr = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys // count, minlength=count), out=indptr[1:])
    if node_weights.shape[0]:
        sizes = np.bincount(label, weights=node_weights, minlength=count)
    else:
        sizes = np.bincount(label, minlength=count)
    return CoarseGraph(indptr, keys % count, weights, sizes.astype(np.int64))


@numba.njit(cache=True)
def _count_crossing(nodes, starts, stops, indices, label):
    """How many of these rows' entries join two clusters."""
    crossing = 0
    for i in range(nodes.shape[0]):
        own = label[nodes[i]]
        for e in range(starts[i], stops[i]):
            crossing += label[indices[e]] != own
    return crossing


@numba.njit(cache=True)
def _crossing_pairs(nodes, starts, stops, indices, edge_weights, label, count, keys, weights):
    """The crossing entries in row order: key (cluster a) * count + (cluster b), and their
    weights when the rows are weighted (`weights` is then as long as `keys`)."""
    n = 0
    for i in range(nodes.shape[0]):
        own = np.int64(label[nodes[i]])
        for e in range(starts[i], stops[i]):
            other = label[indices[e]]
            if other != own:
                keys[n] = own * count + other
                if weights.shape[0]:
                    weights[n] = edge_weights[e]
                n += 1


def _merge_pending(
    keys: np.ndarray, weights: np.ndarray, pending: list[tuple[np.ndarray, np.ndarray]]
) -> tuple[np.ndarray, np.ndarray]:
    """The running sorted list merged with the pending windows' pairs: one argsort of the
    pending pairs (runs already sorted per window), then one linear pass in numba (np.unique's
    sort, inverse and bincount over the concatenated list held ~3x the list at the peak)."""
    more_keys = np.concatenate([UNIT, *(k for k, _ in pending)])
    more_weights = np.concatenate([UNIT, *(w for _, w in pending)])
    pending.clear()
    order = np.argsort(more_keys, kind="stable")
    out_keys = np.empty(len(keys) + len(more_keys), dtype=np.int64)
    out_weights = np.empty(len(out_keys), dtype=np.int64)
    n = _merge_sorted(keys, weights, more_keys, more_weights, order, out_keys, out_weights)
    return out_keys[:n], out_weights[:n]


@numba.njit(cache=True)
def _merge_sorted(keys, weights, more_keys, more_weights, order, out_keys, out_weights):
    """Sorted unique (keys, weights) merged with (more_keys, more_weights) read in `order`
    (ascending keys, repeats allowed): the weights of equal keys summed; how many written."""
    i = j = n = 0
    while i < keys.shape[0] or j < order.shape[0]:
        if j == order.shape[0] or (i < keys.shape[0] and keys[i] <= more_keys[order[j]]):
            key, weight = keys[i], weights[i]
            i += 1
        else:
            key, weight = more_keys[order[j]], more_weights[order[j]]
            j += 1
        if n and out_keys[n - 1] == key:
            out_weights[n - 1] += weight
        else:
            out_keys[n], out_weights[n] = key, weight
            n += 1
    return n


def _merge(keys: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique keys with their summed weights (empty `weights`: each key weighs 1)."""
    if not weights.shape[0] and keys.shape[0]:
        merged, counts = np.unique(keys, return_counts=True)
        return merged, counts.astype(np.int64)
    merged, inverse = np.unique(keys, return_inverse=True)
    return merged, np.bincount(inverse, weights=weights, minlength=len(merged)).astype(np.int64)
