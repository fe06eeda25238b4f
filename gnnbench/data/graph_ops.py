"""Compiled kernels over edge arrays shared by the data, partition and train stages."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def accumulate_degree(edges: np.ndarray, degree: np.ndarray) -> None:
    """Add one chunk of undirected edges to a degree array (random access per endpoint)."""
    for k in range(edges.shape[0]):
        degree[edges[k, 0]] += 1
        degree[edges[k, 1]] += 1


def streaming_degree(stream, num_nodes: int) -> np.ndarray:
    """Degrees from one pass over an EdgeStream, in O(|V|) memory."""
    degree = np.zeros(num_nodes, dtype=np.int64)
    for chunk in stream:
        accumulate_degree(chunk, degree)
    return degree


@numba.njit(cache=True, nogil=True)
def fill_csr(edges, indptr, indices, cursor) -> None:
    """Write each undirected edge into both endpoints' rows, in edge order (`cursor`: n scratch
    entries, any integer width that holds the offsets)."""
    for position in range(indptr.shape[0] - 1):
        cursor[position] = indptr[position]
    for k in range(edges.shape[0]):
        u = edges[k, 0]
        v = edges[k, 1]
        indices[cursor[u]] = v
        cursor[u] += 1
        indices[cursor[v]] = u
        cursor[v] += 1


def csr_from_edges(
    edges: np.ndarray, num_nodes: int, dtype: np.dtype = np.int64
) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric CSR of undirected edges given once each; neighbours kept in edge order.

    `dtype` is the integer width of both arrays: the in-memory baselines ask for the smallest
    their package accepts (int32 where |V| and 2|E| fit), since memory is what they are
    compared on; edges already that narrow are read without a widened copy."""
    dtype = np.dtype(dtype)
    if max(num_nodes, 2 * len(edges)) > np.iinfo(dtype).max:
        raise ValueError(f"a CSR of {num_nodes} nodes and {len(edges)} edges overflows {dtype}")
    edges = np.ascontiguousarray(edges, dtype=np.result_type(edges.dtype, dtype))
    degree = np.zeros(num_nodes, dtype=dtype)
    accumulate_degree(edges, degree)  # np.bincount would copy 32-bit ids to 64-bit first
    indptr = np.zeros(num_nodes + 1, dtype=dtype)
    np.cumsum(degree, out=indptr[1:])
    indices = np.empty(int(indptr[-1]), dtype=dtype)
    fill_csr(edges, indptr, indices, degree)  # degree is n scratch entries of the right width
    return indptr, indices


@numba.njit(cache=True)
def bfs_from(indptr, indices, start, visited, order, filled):
    """Append the unvisited nodes reachable from `start` to `order` in BFS order."""
    visited[start] = True
    order[filled] = start
    head = filled
    filled += 1
    while head < filled:
        x = order[head]
        head += 1
        for e in range(indptr[x], indptr[x + 1]):
            y = indices[e]
            if not visited[y]:
                visited[y] = True
                order[filled] = y
                filled += 1
    return filled
