"""2D grid vertex-cut (GraphTheta's "vertex-cut", GraphX's EdgePartition2D), one pass.

The p parts form a rows x cols grid, rows the largest divisor of p that is <= sqrt(p) and
cols = p / rows, so every p works (p = 8: 2 x 4, p = 6: 2 x 3, p = 7: 1 x 7, the last a plain
hash of the second endpoint). Edge (u, v), in stream orientation, goes to the cell
(hash(u) mod rows, hash(v) mod cols), i.e. part (hash(u) mod rows) * cols + hash(v) mod cols, with
gnnbench.partition.streaming.hashing's seeded hash: a node's replicas lie in one row (as first endpoint) and
one column (as second), at most rows + cols - 1 parts. State: replica bitsets and p loads only.

`grid_dims: 1` is GraphTheta's 1D edge partitioning instead: a p x 1 grid, edge (u, v) to part
hash(u) mod p (the hash of its source in stream orientation); a node's replicas are its own row
and the rows of its other endpoints, up to p parts (claim 9's memory half compares the two).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from gnnbench.data.store import GraphStore
from gnnbench.errors import ConfigError
from gnnbench.partition.base import PartitionResult, register_partitioner
from gnnbench.partition.streaming.edge_partition import (
    edge_load_stats,
    new_replicas,
    place_edge,
    result_from_replicas,
)
from gnnbench.partition.streaming.hashing import hash_id

# Bump when this module's output changes: part of every partition book's cache key.
VERSION = "1"


def grid_shape(p: int) -> tuple[int, int]:
    """(rows, cols) with rows the largest divisor of p not above sqrt(p)."""
    rows = max(d for d in range(1, math.isqrt(p) + 1) if p % d == 0)
    return rows, p // rows


@numba.njit(cache=True, nogil=True)
def _grid_chunk(edges, rows, cols, replicas, load, seed):
    n_rows = np.uint64(rows)
    n_cols = np.uint64(cols)
    for k in range(edges.shape[0]):
        u = edges[k, 0]
        v = edges[k, 1]
        row = np.int64(hash_id(u, seed) % n_rows)
        col = np.int64(hash_id(v, seed) % n_cols)
        part = row * cols + col
        place_edge(replicas, load, u, v, part)


@register_partitioner("grid")
def grid(
    store: GraphStore, p: int, seed: int, *, chunk_edges: int, grid_dims: int
) -> PartitionResult:
    """2D (or 1D: p x 1) grid hashing over one pass of the store's edge stream."""
    if type(grid_dims) is not int or grid_dims not in (1, 2):  # 2.0 and true are not 2
        raise ConfigError(f"partitioner.grid_dims: expected 1 or 2, got {grid_dims!r}")
    rows, cols = grid_shape(p) if grid_dims == 2 else (p, 1)
    replicas = new_replicas(store.num_nodes, p)
    load = np.zeros(p, dtype=np.int64)
    stream = store.edge_stream(chunk_edges)
    for chunk in stream:
        _grid_chunk(chunk, rows, cols, replicas, load, seed)
    stats = {
        "passes": stream.passes,
        "grid_rows": rows,
        "grid_cols": cols,
        **edge_load_stats(load, store.num_edges),
    }
    return result_from_replicas(replicas, p, seed, stats)
