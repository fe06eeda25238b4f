"""The graph a chunk of the edge stream induces on groups of nodes, and a BFS bisection of it.

GREM (gnnbench.partition.algorithms.grem) reads the edge file in large chunks; the edges of one
chunk whose endpoints share a group form that chunk's subgraph, a CSR over the chunk's nodes in
O(chunk) memory. Its first chunk per group is bisected in memory (METIS, or `bfs_bisect`).
"""

from __future__ import annotations

import numba
import numpy as np

from gnnbench.data.graph_ops import bfs_from
from gnnbench.errors import ConfigError

SEED_METHODS = ("auto", "pymetis", "bfs")


@numba.njit(cache=True)
def chunk_csr(edges, group, parts, local):
    """CSR of a chunk's within-group edges over its nodes (sorted ids); `local` maps id -> row."""
    m = edges.shape[0]
    n = group.shape[0]
    inside = np.zeros(m, dtype=np.bool_)
    touched = np.empty(min(2 * m, n), dtype=np.int64)
    count = 0
    internal = 0
    for k in range(m):
        u = edges[k, 0]
        v = edges[k, 1]
        g = group[u]
        if group[v] != g or parts[g] < 2:
            continue
        inside[k] = True
        internal += 1
        if local[u] < 0:
            local[u] = 0
            touched[count] = u
            count += 1
        if local[v] < 0:
            local[v] = 0
            touched[count] = v
            count += 1
    if count * 16 > n:  # scanning the marks is cheaper than sorting
        nodes = np.empty(count, dtype=np.int64)
        i = 0
        for v in range(n):
            if local[v] == 0:
                nodes[i] = v
                i += 1
    else:
        nodes = np.sort(touched[:count])
    for i in range(count):
        local[nodes[i]] = i
    indptr = np.zeros(count + 1, dtype=np.int64)
    for k in range(m):
        if inside[k]:
            indptr[local[edges[k, 0]] + 1] += 1
            indptr[local[edges[k, 1]] + 1] += 1
    for i in range(count):
        indptr[i + 1] += indptr[i]
    cursor = indptr[:-1].copy()
    indices = np.empty(2 * internal, dtype=np.int32)
    for k in range(m):
        if inside[k]:
            lu = local[edges[k, 0]]
            lv = local[edges[k, 1]]
            indices[cursor[lu]] = lv
            cursor[lu] += 1
            indices[cursor[lv]] = lu
            cursor[lv] += 1
    return nodes, indptr, indices


@numba.njit(cache=True)
def reset_local(local, nodes):
    for i in range(nodes.shape[0]):
        local[nodes[i]] = -1


@numba.njit(cache=True)
def subgraph(indptr, indices, rows):
    """The CSR induced by the sorted local rows `rows` (their edges stay among them)."""
    relabel = np.full(indptr.shape[0] - 1, -1, dtype=np.int64)
    for i in range(rows.shape[0]):
        relabel[rows[i]] = i
    sub_indptr = np.zeros(rows.shape[0] + 1, dtype=np.int64)
    for i in range(rows.shape[0]):
        r = rows[i]
        sub_indptr[i + 1] = sub_indptr[i] + indptr[r + 1] - indptr[r]
    sub_indices = np.empty(sub_indptr[-1], dtype=np.int32)
    for i in range(rows.shape[0]):
        r = rows[i]
        base = sub_indptr[i] - indptr[r]
        for e in range(indptr[r], indptr[r + 1]):
            sub_indices[base + e] = relabel[indices[e]]
    return sub_indptr, sub_indices


@numba.njit(cache=True)
def bfs_bisect(indptr, indices, target0):
    """Side 0 = the first `target0` nodes of a BFS from a pseudo-peripheral node, then onwards."""
    n = indptr.shape[0] - 1
    visited = np.zeros(n, dtype=np.bool_)
    order = np.empty(n, dtype=np.int64)
    end = bfs_from(indptr, indices, 0, visited, order, 0)
    start = order[end - 1]
    visited[:] = False
    filled = bfs_from(indptr, indices, start, visited, order, 0)
    next_unvisited = 0
    while filled < n:
        while visited[next_unvisited]:
            next_unvisited += 1
        filled = bfs_from(indptr, indices, next_unvisited, visited, order, filled)
    membership = np.ones(n, dtype=np.int8)
    for i in range(min(target0, n)):
        membership[order[i]] = 0
    return membership


def resolve_seed_method(name: str) -> str:
    if name not in SEED_METHODS:
        raise ConfigError(
            f"partitioner.seed_method: expected one of {', '.join(SEED_METHODS)}, got {name!r}"
        )
    if name == "bfs":
        return "bfs"
    try:
        from pymetis import CSRAdjacency  # noqa: F401  (pymetis >= 2025.2)
    except ImportError:
        if name == "pymetis":
            raise ConfigError(
                "partitioner.seed_method: 'pymetis' (>= 2025.2) is not installed "
                "(pip install pymetis), or use 'bfs' / 'auto'"
            ) from None
        return "bfs"
    return "pymetis"


def seed_membership(
    method: str, indptr: np.ndarray, indices: np.ndarray, k0: int, k: int, seed: int
) -> np.ndarray:
    """Bisect one group's seed chunk: side per node (int8), side 0 taking k0/k of the nodes."""
    n = len(indptr) - 1
    if method == "pymetis":
        import pymetis

        share0 = k0 / k
        _, membership = pymetis.part_graph(
            2,
            pymetis.CSRAdjacency(indptr, indices),
            tpwgts=[share0, 1.0 - share0],
            recursive=True,
            options=pymetis.Options(seed=int(seed)),
        )
        return np.asarray(membership, dtype=np.int8)
    return bfs_bisect(indptr, indices, (2 * n * k0 + k) // (2 * k))
