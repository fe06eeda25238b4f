"""Which nodes make up one epoch's batches: train.strategy and train.batching.

- minibatch + random: the usual shuffle of a partition's training nodes, batch_size at a time.
- minibatch + cohesive (CM-GCN): training nodes in the order a BFS over the partition reaches
  them, cut into consecutive batches, so a batch's nodes share neighbours and its K-hop
  computational graph is smaller.
- full (CATGNN): one batch per partition holding all its training nodes, every neighbour kept.
- cluster (GraphTheta / Cluster-GCN): the partition is cut once into clusters
  (gnnbench/train/clusters.py, `train.cluster_method`); a batch is a few clusters, with their
  boundary neighbours when `train.cluster_boundary`, trained on the subgraph that region induces.

`computation_cost` counts CM-GCN's J(P) with unit node cost: the (node, layer) pairs a batch's
blocks hold, input layer included.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from gnnbench.data.graph_ops import bfs_from
from gnnbench.train.sampler import (
    ALL_NEIGHBOURS,
    NeighbourSampler,
    SampledBatch,
    node_scratch,
)


@dataclass(frozen=True)
class BatchPlan:
    """One batch: its seeds (training nodes, local ids) and, for cluster batches, the region
    (local ids, sorted) whose induced subgraph it trains on; None means the whole partition."""

    key: int
    seeds: np.ndarray
    region: np.ndarray | None = None


@numba.njit(cache=True, nogil=True)
def _bfs_order(indptr, indices, roots):
    """Every node once, in BFS order: a traversal from each root in turn that is still unvisited
    (roots is a permutation of all nodes, so disconnected pieces are covered too)."""
    n = indptr.shape[0] - 1
    seen = np.zeros(n, dtype=np.bool_)
    order = np.empty(n, dtype=np.int64)
    filled = 0
    for r in range(roots.shape[0]):
        if not seen[roots[r]]:
            filled = bfs_from(indptr, indices, roots[r], seen, order, filled)
    return order


def bfs_order(indptr: np.ndarray, indices: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """All nodes in BFS order from random roots (a random root per connected piece)."""
    roots = rng.permutation(len(indptr) - 1).astype(np.int64)
    return _bfs_order(np.asarray(indptr, dtype=np.int64), np.asarray(indices), roots)


def train_bfs_order(
    indptr: np.ndarray, indices: np.ndarray, train: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """The training nodes in the order a BFS from random roots reaches them."""
    order = bfs_order(indptr, indices, rng)
    return order[_mask(len(indptr) - 1, train)[order]]


def _mask(num_nodes: int, ids: np.ndarray) -> np.ndarray:
    mask = np.zeros(num_nodes, dtype=bool)
    mask[ids] = True
    return mask


def _cut(ordered: np.ndarray, batch_size: int) -> list[np.ndarray]:
    return [ordered[start : start + batch_size] for start in range(0, len(ordered), batch_size)]


def minibatch_size(num_train: int, batch_size: int, batches_per_epoch: int) -> int:
    """Seeds per mini-batch: batch_size, or (batches_per_epoch > 0) the size that cuts the
    partition's training nodes into that many."""
    return max(1, -(-num_train // batches_per_epoch)) if batches_per_epoch else batch_size


def minibatch_count(num_train: int, batch_size: int, batches_per_epoch: int) -> int:
    """How many mini-batches `minibatch_plans` cuts `num_train` training nodes into (shuffled or
    BFS order alike), known without the graph."""
    return -(-num_train // minibatch_size(num_train, batch_size, batches_per_epoch))


def minibatch_plans(
    indptr: np.ndarray,
    indices: np.ndarray,
    train: np.ndarray,
    batch_size: int,
    cohesive: bool,
    rng: np.random.Generator,
) -> list[BatchPlan]:
    """One epoch's mini-batches of the training nodes, shuffled or BFS-cohesive."""
    if not cohesive:
        batches = _cut(rng.permutation(train), batch_size)
    else:
        batches = _cut(train_bfs_order(indptr, indices, train, rng), batch_size)
        batches = [batches[i] for i in rng.permutation(len(batches))]  # no fixed batch order
    # key = the batch's offset, as the sampling seed of a batch has always been derived from it
    return [BatchPlan(key=i * batch_size, seeds=seeds) for i, seeds in enumerate(batches)]


def with_neighbours(indptr: np.ndarray, indices: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """`nodes` and their 1-hop neighbours, sorted."""
    starts, ends = indptr[nodes], indptr[nodes + 1]
    lengths = ends - starts
    offsets = np.repeat(starts - np.cumsum(lengths) + lengths, lengths)
    neighbours = indices[np.arange(lengths.sum()) + offsets]
    return np.union1d(nodes, neighbours)


def cluster_plans(
    indptr: np.ndarray,
    indices: np.ndarray,
    train: np.ndarray,
    parts: list[np.ndarray],
    per_batch: int,
    rng: np.random.Generator,
    boundary: bool,
) -> list[BatchPlan]:
    """One epoch: clusters shuffled, `per_batch` at a time; seeds are their training nodes, the
    region the clusters alone or (`boundary`) with their 1-hop neighbours as inputs."""
    is_train = _mask(len(indptr) - 1, train)
    shuffled = rng.permutation(len(parts))
    plans = []
    for start in range(0, len(shuffled), per_batch):
        nodes = np.concatenate([parts[c] for c in shuffled[start : start + per_batch]])
        seeds = nodes[is_train[nodes]]
        if len(seeds):  # a batch without training nodes has no loss
            region = with_neighbours(indptr, indices, nodes) if boundary else np.sort(nodes)
            plans.append(BatchPlan(key=len(plans), seeds=seeds, region=region))
    return plans


@numba.njit(cache=True, nogil=True)
def _induced(indptr, indices, region, position):
    """CSR of the subgraph `region` induces, in region-local ids; `position` all -1 on entry/exit."""
    for i in range(region.shape[0]):
        position[region[i]] = i
    sub_indptr = np.zeros(region.shape[0] + 1, dtype=np.int64)
    for i in range(region.shape[0]):
        node = region[i]
        kept = 0
        for k in range(indptr[node], indptr[node + 1]):
            if position[indices[k]] != -1:
                kept += 1
        sub_indptr[i + 1] = sub_indptr[i] + kept
    sub_indices = np.empty(sub_indptr[-1], dtype=np.int64)
    for i in range(region.shape[0]):
        node = region[i]
        at = sub_indptr[i]
        for k in range(indptr[node], indptr[node + 1]):
            local = position[indices[k]]
            if local != -1:
                sub_indices[at] = local
                at += 1
    for i in range(region.shape[0]):
        position[region[i]] = -1
    return sub_indptr, sub_indices


def induced_batch(
    indptr: np.ndarray,
    indices: np.ndarray,
    plan: BatchPlan,
    layers: int,
    position: np.ndarray | None = None,
) -> SampledBatch:
    """Full-neighbour blocks of the plan's seeds within the subgraph its region induces.

    `position`: a reusable all -1 array of one entry per node (left all -1), so that a batch
    costs O(region) rather than O(|V|).
    """
    if position is None:
        position = node_scratch(len(indptr) - 1)
    region = np.asarray(plan.region, dtype=np.int64)
    sub_indptr, sub_indices = _induced(
        np.asarray(indptr, dtype=np.int64), indices, region, position
    )
    sampler = NeighbourSampler(sub_indptr, sub_indices, [ALL_NEIGHBOURS] * layers)
    batch = sampler.sample(np.searchsorted(region, plan.seeds), 0)
    return SampledBatch(n_id=region[batch.n_id], blocks=batch.blocks)


def computation_cost(batch: SampledBatch) -> int:
    """(node, layer) pairs of the batch's computational graph: its inputs plus each layer's
    outputs (for a model without blocks, only the inputs)."""
    return len(batch.n_id) + sum(block.num_dst for block in batch.blocks)
