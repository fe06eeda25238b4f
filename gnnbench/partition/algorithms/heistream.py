"""HeiStream-style buffered streaming (after Faraj & Schulz, ACM JEA 2022), with pymetis.

The node stream (id order, the store's on-disk CSR as for LDG) is cut into buffers of
`buffer_nodes` consecutive nodes (a buffer also ends where a read window of the CSR ends). Each
buffer becomes a model graph:

    one node per buffer node (weight 1), edges between buffer nodes (weight = multiplicity);
    one node per block i (weight = |P_i|, the nodes assigned so far), with an edge to each buffer
    node that has assigned neighbours in P_i (weight = how many);

neighbours neither in the buffer nor assigned yet (later in the stream) count for nothing. The
model graph is partitioned into p parts by METIS k-way (pymetis, seeded with the run's seed),
whose balance constraint on the weighted model graph is what keeps the blocks balanced (the
paper uses a Fennel objective inside its own multilevel scheme; this uses METIS's). Parts are then
matched to blocks greedily by affinity: a block node inside a part binds it (its weight, which
dominates once blocks fill), otherwise the edge weight between the part's buffer nodes and the
block. A buffer node goes to its part's block unless that block is full (|P_i| >= C, C =
capacity_factor * |V| / p, as for LDG and Fennel); then to the open block with the best Fennel
score |N(v) ∩ P_i| - alpha * gamma * |P_i|^(gamma - 1) (alpha = sqrt(p) |E| / |V|^1.5, gamma 1.5).

Differences from the paper (stated so figures are read as "HeiStream-style", not HeiStream): no
own multilevel scheme, no restreaming, and buffers follow node ids rather than the paper's
priority buffer. State: the owner array and a buffer-local index (both O(|V|)), p block sizes,
and the model graph of one buffer (O(buffer + its edges)).
"""

from __future__ import annotations

import numba
import numpy as np

from gnnbench.data.adjacency import ensure_adjacency
from gnnbench.data.store import GraphStore
from gnnbench.partition.algorithms.fennel import fennel_alpha
from gnnbench.partition.algorithms.ldg import (
    SCORE_FENNEL,
    best_open_block,
    capacity_of,
    count_owners,
)
from gnnbench.partition.base import PartitionResult, register_partitioner
from gnnbench.spec_keys import whole_at_least

# Bump when this module's output changes: part of every partition book's cache key.
VERSION = "1"


@numba.njit(cache=True)
def _model_graph(nodes, starts, stops, indices, owner, local, sizes):
    """CSR (xadj, adjncy, eweights, vweights) of one buffer's model graph; rows k.. are blocks."""
    k = nodes.shape[0]
    p = sizes.shape[0]
    for i in range(k):
        local[nodes[i]] = i
    total = 0
    for i in range(k):
        total += stops[i] - starts[i]
    adjncy = np.empty(2 * total, dtype=np.int64)
    weights = np.empty(2 * total, dtype=np.int64)
    xadj = np.zeros(k + p + 1, dtype=np.int64)
    node_mark = np.full(k, -1, dtype=np.int64)
    node_slot = np.zeros(k, dtype=np.int64)
    block_mark = np.full(p, -1, dtype=np.int64)
    block_slot = np.zeros(p, dtype=np.int64)
    pair_node = np.empty(total, dtype=np.int64)  # (buffer node, block, weight) of block edges
    pair_block = np.empty(total, dtype=np.int64)
    pair_weight = np.empty(total, dtype=np.int64)
    pairs = 0
    cursor = 0
    for i in range(k):
        row_pairs = pairs
        for e in range(starts[i], stops[i]):
            u = indices[e]
            j = local[u]
            if j >= 0:
                if j == i:
                    continue  # self loop
                if node_mark[j] != i:
                    node_mark[j] = i
                    node_slot[j] = cursor
                    adjncy[cursor] = j
                    weights[cursor] = 0
                    cursor += 1
                weights[node_slot[j]] += 1
            elif owner[u] >= 0:
                b = owner[u]
                if block_mark[b] != i:
                    block_mark[b] = i
                    block_slot[b] = pairs
                    pair_node[pairs] = i
                    pair_block[pairs] = b
                    pair_weight[pairs] = 0
                    pairs += 1
                pair_weight[block_slot[b]] += 1
        for q in range(row_pairs, pairs):
            adjncy[cursor] = k + pair_block[q]
            weights[cursor] = pair_weight[q]
            cursor += 1
        xadj[i + 1] = cursor
    counts = np.zeros(p, dtype=np.int64)
    for q in range(pairs):
        counts[pair_block[q]] += 1
    for b in range(p):
        xadj[k + b + 1] = xadj[k + b] + counts[b]
    fill = xadj[k : k + p].copy()
    for q in range(pairs):  # block rows list their buffer nodes in buffer order
        b = pair_block[q]
        adjncy[fill[b]] = pair_node[q]
        weights[fill[b]] = pair_weight[q]
        fill[b] += 1
    vweights = np.ones(k + p, dtype=np.int64)
    vweights[k:] = sizes
    for i in range(k):
        local[nodes[i]] = -1
    return xadj, adjncy[: xadj[-1]], weights[: xadj[-1]], vweights


@numba.njit(cache=True)
def _match_parts(part, xadj, adjncy, weights, vweights, k, p):
    """Block for each METIS part: greedy by affinity (block node inside, then edge weight)."""
    affinity = np.zeros((p, p), dtype=np.float64)
    big = float(vweights.sum() + weights.sum() + 1)
    for b in range(p):
        affinity[part[k + b], b] += big * (1.0 + vweights[k + b])
        for e in range(xadj[k + b], xadj[k + b + 1]):
            affinity[part[adjncy[e]], b] += weights[e]
    block_of = np.full(p, -1, dtype=np.int64)
    taken = np.zeros(p, dtype=np.bool_)
    for _ in range(p):
        best_part, best_block, best = -1, -1, -1.0
        for j in range(p):
            if block_of[j] >= 0:
                continue
            for b in range(p):
                if not taken[b] and affinity[j, b] > best:
                    best_part, best_block, best = j, b, affinity[j, b]
        block_of[best_part] = best_block
        taken[best_block] = True
    return block_of


@numba.njit(cache=True)
def _place_buffer(nodes, starts, stops, indices, owner, sizes, target, capacity, alpha, gamma):
    """Each buffer node to its target block, or, when that is full, the best open Fennel block."""
    p = sizes.shape[0]
    counts = np.zeros(p, dtype=np.int64)
    overflow = 0
    for i in range(nodes.shape[0]):
        t = target[i]
        if t < 0 or sizes[t] >= capacity:
            overflow += t >= 0
            count_owners(starts[i], stops[i], indices, owner, counts)
            t = best_open_block(counts, sizes, capacity, SCORE_FENNEL, alpha, gamma)
        owner[nodes[i]] = t
        sizes[t] += 1
    return overflow


def _partition_buffer(block, lo, hi, owner, local, sizes, seed, capacity, alpha, gamma) -> int:
    """Model graph of rows [lo, hi) of a CSR block, METIS on it, placement; return overflow."""
    import pymetis

    nodes = block.nodes[lo:hi]
    starts, stops = block.starts[lo:hi], block.stops[lo:hi]
    xadj, adjncy, weights, vweights = _model_graph(
        nodes, starts, stops, block.indices, owner, local, sizes
    )
    p = len(sizes)
    k = len(nodes)
    target = np.full(k, -1, dtype=np.int64)  # -1: Fennel decides
    if len(adjncy) and p > 1:  # an edgeless model graph has nothing for METIS to cut
        _, membership = pymetis.part_graph(
            p,
            pymetis.CSRAdjacency(xadj, adjncy),  # xadj= / adjncy= are deprecated in pymetis
            vweights=vweights,
            eweights=weights,
            options=pymetis.Options(seed=int(seed)),
        )
        part = np.asarray(membership, dtype=np.int64)
        target = _match_parts(part, xadj, adjncy, weights, vweights, k, p)[part[:k]]
    return _place_buffer(
        nodes, starts, stops, block.indices, owner, sizes, target, capacity, alpha, gamma
    )


def buffer_nodes_of(size: int) -> int:
    """`buffer_nodes`: nodes per model graph, a whole number >= 1."""
    return whole_at_least("partitioner.buffer_nodes", size, 1)


@register_partitioner("heistream")
def heistream(
    store: GraphStore, p: int, seed: int, *, buffer_nodes: int, capacity_factor: float
) -> PartitionResult:
    """Buffered streaming over the node stream: METIS on each buffer's model graph."""
    buffer_nodes = buffer_nodes_of(buffer_nodes)
    factor, capacity = capacity_of(capacity_factor, store.num_nodes, p)
    alpha = fennel_alpha(store.num_edges, store.num_nodes, p)
    gamma = 1.5
    adjacency = ensure_adjacency(store)
    owner = np.full(store.num_nodes, -1, dtype=np.int32)
    local = np.full(store.num_nodes, -1, dtype=np.int32)
    sizes = np.zeros(p, dtype=np.int64)
    buffers = overflow = 0
    for block in adjacency.blocks("id"):
        for lo in range(0, len(block.nodes), buffer_nodes):
            hi = min(lo + buffer_nodes, len(block.nodes))
            overflow += _partition_buffer(
                block, lo, hi, owner, local, sizes, seed, capacity, alpha, gamma
            )
            buffers += 1
    stats = {
        "passes": adjacency.passes + adjacency.build_passes,
        "adjacency_build_passes": adjacency.build_passes,
        "adjacency_windows": adjacency.windows,
        "buffer_nodes": buffer_nodes,
        "buffers": buffers,
        "capacity_factor": factor,
        "capacity": capacity,
        "overflow_placements": int(overflow),
        "max_partition_nodes": int(sizes.max()),
    }
    return PartitionResult(owner, stats)
