"""Fennel (Tsourakakis, Gkantsidis, Radunovic & Vojnovic, WSDM 2014) over a node stream.

Node v, arriving with its full neighbour list, goes to

    argmax_i |N(v) ∩ P_i| - alpha * gamma * |P_i|^(gamma - 1),
    gamma = 1.5,  alpha = sqrt(p) * |E| / |V|^1.5   (|E| undirected edges),

over the partitions that are not full (|P_i| < C, C = capacity_factor * |V| / p; the paper's
load limit nu * n / k with nu = capacity_factor). Neighbours not yet placed count for nothing.
Ties go to the partition with fewer nodes, then to the lower index.

Stream order, the on-disk CSR it reads and what that costs are as for LDG (see
gnnbench.partition.algorithms.ldg and gnnbench.data.adjacency): one node-stream pass reading
bounded windows, O(|V|) state (owner array, indptr, partition sizes).
"""

from __future__ import annotations

import math

from gnnbench.data.store import GraphStore
from gnnbench.errors import ConfigError
from gnnbench.partition.algorithms.ldg import SCORE_FENNEL, capacity_bound, node_stream_partition
from gnnbench.partition.base import PartitionResult, register_partitioner

# Bump when this module's output changes: part of every partition book's cache key.
VERSION = "1"


def fennel_alpha(num_edges: int, num_nodes: int, p: int) -> float:
    """The paper's alpha = sqrt(k) * m / n^1.5."""
    return math.sqrt(p) * num_edges / num_nodes**1.5 if num_nodes else 0.0


@register_partitioner(
    "fennel",
    vertex_balance_bound=lambda p, n, *, capacity_factor, **_: capacity_bound(
        capacity_factor, n, p
    ),
)
def fennel(
    store: GraphStore,
    p: int,
    seed: int,
    *,
    capacity_factor: float,
    gamma: float,
    alpha: float | None,
    order: str,
    passes: int,
) -> PartitionResult:
    """Fennel over the node stream; deterministic (the seed only matters for `order: random`)."""
    gamma = float(gamma)
    if not gamma >= 1.0:
        raise ConfigError(f"partitioner.gamma: expected a number >= 1, got {gamma}")
    alpha = fennel_alpha(store.num_edges, store.num_nodes, p) if alpha is None else float(alpha)
    if not alpha >= 0.0:
        raise ConfigError(f"partitioner.alpha: expected a number >= 0 or null, got {alpha}")
    result = node_stream_partition(
        store, p, seed, capacity_factor=capacity_factor, order=order, passes=passes,
        score_kind=SCORE_FENNEL, alpha=alpha, gamma=gamma,
    )  # fmt: skip
    result.stats.update(alpha=alpha, gamma=gamma)
    return result
