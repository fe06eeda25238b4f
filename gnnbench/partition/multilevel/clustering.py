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
- `coarse_graph` (gnnbench/partition/multilevel/contraction.py): the clusters' weighted graph.
- `coarsen`: one level from the on-disk CSR, then more levels from each coarse graph in memory
  while it has more than `coarse_nodes` nodes and a level still shrinks it by a tenth.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numba
import numpy as np

from gnnbench.data.adjacency import AdjacencyStream
from gnnbench.partition.multilevel.contraction import (
    PAIR_WINDOW,
    UNIT,
    CoarseGraph,
    Rows,
    coarse_graph,
)

# quotient alone runs this module: bump its VERSION when this module's output changes.
MIN_SHRINK = 0.9  # a level that keeps more than this fraction of its nodes ends the coarsening


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
            del block  # a window is unmapped before the stream maps the next one

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
    scratch = adjacency.directory
    first = coarse_graph(rows(), label, count, indptr=adjacency.indptr, scratch=scratch)
    levels = [Level(label, first)]
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
        coarser = coarse_graph(
            graph.rows(), label, count, graph.node_weights, indptr=graph.indptr, scratch=scratch
        )
        levels.append(Level(label, coarser))
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
            del nodes, starts, stops, indices, edge_weights  # before the next window is read
        active = next_active
        if not moves:
            break
    del conn, cluster_weight  # the scratch goes before _compact's own |V| array
    active = next_active = None
    return _compact(label)


def _compact(label: np.ndarray) -> tuple[np.ndarray, int]:
    """Labels renumbered 0..c-1 in the order of their values (in place); c."""
    new_id = np.zeros(len(label), dtype=np.int32)  # (the cumsum of a mask was 2 int64 copies)
    return label, _renumber(label, new_id)


@numba.njit(cache=True)
def _renumber(label, new_id):
    """Each label value present becomes its rank among the present values (`new_id`: zeros of
    one entry per possible value, used as scratch); how many are present."""
    for v in range(label.shape[0]):
        new_id[label[v]] = 1
    count = 0
    for value in range(new_id.shape[0]):
        if new_id[value]:
            new_id[value] = count
            count += 1
    for v in range(label.shape[0]):
        label[v] = new_id[label[v]]
    return count
