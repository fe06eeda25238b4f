"""Uniform neighbour sampling over a local CSR into bipartite message-flow blocks (numba).

PyG has no sampler without torch-sparse / pyg-lib, so this is the one every mode uses: sampling
touches only the sampled nodes and edges, and relabelling uses a reusable global->local array
(reset after each batch), so a batch costs O(sampled), never O(|V|).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

ALL_NEIGHBOURS = -1


@dataclass(frozen=True)
class Block:
    """One layer's bipartite graph: edge_index (2, E) source->target in block-local ids.

    The num_dst targets are the first num_dst of the num_src sources, so a layer computes
    conv((h, h[:num_dst]), edge_index).
    """

    edge_index: Any  # np.ndarray from the sampler, torch.Tensor once moved to a device
    num_src: int
    num_dst: int


@dataclass(frozen=True)
class SampledBatch:
    """Node ids whose features a batch needs (seeds first) and its blocks in model order."""

    n_id: np.ndarray
    blocks: list[Block]  # blocks[0] is the input layer (outermost hop), blocks[-1] ends at seeds


@numba.njit(cache=True, nogil=True)
def _grow(array, size):
    """A copy of `array` with room for at least `size` entries (doubling, amortised O(1))."""
    grown = np.empty(max(size, 2 * array.shape[0]), dtype=array.dtype)
    grown[: array.shape[0]] = array
    return grown


@numba.njit(cache=True, nogil=True)
def _choose_without_replacement(degree, fanout, chosen):
    """Floyd's algorithm: `fanout` distinct offsets in [0, degree), uniformly, in O(fanout^2)."""
    count = 0
    for upper in range(degree - fanout, degree):
        pick = np.random.randint(0, upper + 1)
        for k in range(count):
            if chosen[k] == pick:
                pick = upper  # `pick` was taken: `upper` cannot have been (Floyd's invariant)
                break
        chosen[count] = pick
        count += 1


@numba.njit(cache=True, nogil=True)
def _sample_hops(indptr, indices, seeds, fanouts, rng_seed, position):
    """Sample every hop; returns n_id, edge sources, edge targets, per-hop edge offsets and
    node counts (node_counts[h] = targets of hop h). `position` is all -1 on entry and exit."""
    np.random.seed(rng_seed)
    num_nodes = seeds.shape[0]
    n_id = np.empty(max(num_nodes, 16), dtype=np.int64)
    for i in range(num_nodes):
        if position[seeds[i]] != -1:
            for k in range(i):
                position[seeds[k]] = -1
            raise ValueError("seed node ids must be unique")
        position[seeds[i]] = i
        n_id[i] = seeds[i]
    hops = fanouts.shape[0]
    node_counts = np.empty(hops + 1, dtype=np.int64)
    edge_offsets = np.zeros(hops + 1, dtype=np.int64)
    node_counts[0] = num_nodes
    src = np.empty(16, dtype=np.int64)
    dst = np.empty(16, dtype=np.int64)
    largest = 1
    for hop in range(hops):
        largest = max(largest, fanouts[hop])
    chosen = np.empty(largest, dtype=np.int64)
    edges = 0
    for hop in range(hops):
        fanout = fanouts[hop]
        num_targets = num_nodes
        needed = 0
        for t in range(num_targets):
            degree = indptr[n_id[t] + 1] - indptr[n_id[t]]
            needed += degree if fanout < 0 or degree <= fanout else fanout
        if edges + needed > src.shape[0]:
            src = _grow(src, edges + needed)
            dst = _grow(dst, edges + needed)
        if num_nodes + needed > n_id.shape[0]:
            n_id = _grow(n_id, num_nodes + needed)
        for t in range(num_targets):
            start = indptr[n_id[t]]
            degree = indptr[n_id[t] + 1] - start
            take_all = fanout < 0 or degree <= fanout
            count = degree if take_all else fanout
            if not take_all:
                _choose_without_replacement(degree, fanout, chosen)
            for k in range(count):
                neighbour = indices[start + (k if take_all else chosen[k])]
                if position[neighbour] == -1:
                    position[neighbour] = num_nodes
                    n_id[num_nodes] = neighbour
                    num_nodes += 1
                src[edges] = position[neighbour]
                dst[edges] = t
                edges += 1
        edge_offsets[hop + 1] = edges
        node_counts[hop + 1] = num_nodes
    for i in range(num_nodes):
        position[n_id[i]] = -1
    return (
        n_id[:num_nodes].copy(),
        src[:edges].copy(),
        dst[:edges].copy(),
        edge_offsets,
        node_counts,
    )


@numba.njit(cache=True, nogil=True)
def _with_neighbours(indptr, indices, nodes):
    """`nodes` (unique), then each neighbour not yet listed, in the order `sample` gives n_id;
    O(nodes + their edges) time and O(graph nodes) memory, no edge arrays."""
    listed = np.zeros(len(indptr) - 1, dtype=np.bool_)
    out = np.empty(len(indptr) - 1, dtype=np.int64)
    count = 0
    for node in nodes:
        listed[node] = True
        out[count] = node
        count += 1
    for node in nodes:
        for edge in range(indptr[node], indptr[node + 1]):
            neighbour = indices[edge]
            if not listed[neighbour]:
                listed[neighbour] = True
                out[count] = neighbour
                count += 1
    return out[:count].copy()


def with_neighbours(indptr: np.ndarray, indices: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """The nodes one hop of full neighbourhoods needs: `nodes`, then their new neighbours."""
    return _with_neighbours(indptr, indices, np.ascontiguousarray(nodes, dtype=np.int64))


def node_scratch(num_nodes: int) -> np.ndarray:
    """The batch kernels' reusable per-node map (all -1 between calls), int32 below 2^31 nodes:
    it holds positions within one batch or region, so the narrow type always fits."""
    return np.full(num_nodes, -1, dtype=np.int32 if num_nodes < 2**31 else np.int64)


class NeighbourSampler:
    """Uniform sampling without replacement over one CSR (local ids); not thread-safe.

    fanouts follow PyG's `num_neighbors` convention: fanouts[0] is the hop nearest the seeds (the
    last layer of the model), fanouts[-1] the outermost hop; -1 takes every neighbour.
    """

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, fanouts: Sequence[int]):
        self.indptr = np.ascontiguousarray(indptr, dtype=np.int64)
        self.indices = np.ascontiguousarray(indices)
        if self.indices.dtype not in (np.int32, np.int64):
            self.indices = self.indices.astype(np.int64)
        self.fanouts = np.asarray(list(fanouts), dtype=np.int64)
        # scratch of sample(): allocated by the first call, as narrow as the node count allows.
        # A partition builds three samplers (training, full neighbourhoods, evaluation's
        # hops) and uses one at a time: at 1 B edges (53 M nodes a partition) three eager
        # int64 arrays held 1.3 GB of a worker's peak
        self._position: np.ndarray | None = None

    def sample(self, seeds: np.ndarray, rng_seed: int) -> SampledBatch:
        """Sample the blocks of `seeds` (unique local ids); same rng_seed, same batch."""
        seeds = np.ascontiguousarray(seeds, dtype=np.int64)
        if self._position is None:
            self._position = node_scratch(len(self.indptr) - 1)
        n_id, src, dst, edge_offsets, node_counts = _sample_hops(
            self.indptr, self.indices, seeds, self.fanouts, np.int64(rng_seed), self._position
        )
        blocks = []
        for hop in range(len(self.fanouts) - 1, -1, -1):  # outermost hop first: model order
            lo, hi = edge_offsets[hop], edge_offsets[hop + 1]
            blocks.append(
                Block(
                    edge_index=np.stack((src[lo:hi], dst[lo:hi])),
                    num_src=int(node_counts[hop + 1]),
                    num_dst=int(node_counts[hop]),
                )
            )
        return SampledBatch(n_id=n_id, blocks=blocks)


def batch_seed(*keys: int) -> int:
    """A 32-bit RNG seed mixed from (run seed, epoch, partition, batch): reproducible batches."""
    entropy = [int(key) % (1 << 63) for key in keys]
    return int(np.random.SeedSequence(entropy).generate_state(1)[0])


def warm_up() -> None:
    """Compile (or load from numba's cache) the kernel for both index dtypes before workers start."""
    indptr = np.array([0, 2, 3, 4], dtype=np.int64)
    for dtype in (np.int32, np.int64):
        indices = np.array([1, 2, 0, 0], dtype=dtype)
        for fanouts in ([1, ALL_NEIGHBOURS], []):
            NeighbourSampler(indptr, indices, fanouts).sample(np.array([0]), 0)
        with_neighbours(indptr, indices, np.array([0]))
