"""On-disk symmetric CSR of a GraphStore, and the node stream that node-order partitioners read.

Node-stream partitioners (LDG, Fennel) need each node's full neighbour list when the node arrives.
`ensure_adjacency(store)` gives them that as two files inside the store directory:

    adj_indptr.npy    int64 (N + 1,): row offsets, from degree.npy by a prefix sum
    adj_indices.npy   the store's id dtype (2E,): neighbours of every node, each row in edge
                      stream order (an undirected edge appears in both endpoints' rows)

What it costs. The files are built once per store and reused by every later run (the store is
immutable; its fingerprint ignores these derived files). Building reads the edge stream once per
*bucket*: nodes are cut into id ranges whose rows hold at most `max_entries` adjacency entries
together (16 Mi entries by default, never less than the largest degree), one pass over the edge
stream fills one bucket's rows in memory, and the bucket is appended to the file. Peak memory is
O(|V|) for indptr plus one bucket and one edge chunk, never O(|E|), so a build that happens inside
a measured partition step (the first run on a store) is still honest to the memory budget; its
time and edge passes are reported by the partitioners (`adjacency_build_passes`). Both files are
written under temporary names and renamed into place (indices first, indptr last, so a present
indptr means a complete pair).

Reading. `AdjacencyStream.blocks()` yields nodes in stream order with their rows, reading one
bounded window of adj_indices.npy at a time (indptr, O(|V|), is held in memory). Stream order is
node id order, or a seeded random permutation: a random block's rows are gathered from windows
over the file in offset order, so it still holds one bounded window at a time.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np

from gnnbench.atomic import temporary_name
from gnnbench.data.store import DEFAULT_CHUNK_EDGES, GraphStore, NpyLayout
from gnnbench.errors import ConfigError, DataError

INDPTR_FILE = "adj_indptr.npy"
INDICES_FILE = "adj_indices.npy"
DEFAULT_MAX_ENTRIES = 1 << 24  # adjacency entries held at once while building or reading


@dataclass
class NodeBlock:
    """Nodes in stream order; node `nodes[i]` has neighbours `indices[starts[i]:stops[i]]`."""

    nodes: np.ndarray
    starts: np.ndarray
    stops: np.ndarray
    indices: np.ndarray

    @property
    def rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(nodes, starts, stops, indices): the leading arguments of every row kernel."""
        return self.nodes, self.starts, self.stops, self.indices


class AdjacencyStream:
    """Windowed reader of a store's on-disk CSR; `build_passes` is 0 when the files were reused."""

    def __init__(self, store: GraphStore, build_passes: int = 0):
        self.store = store
        self.build_passes = build_passes
        self.indices_layout = NpyLayout.read(store.path / INDICES_FILE)
        self.indptr = np.load(store.path / INDPTR_FILE)
        self.passes = 0  # node-stream passes handed out (each edge read twice per pass)
        self.windows = 0  # windows of adj_indices.npy mapped so far

    @property
    def num_nodes(self) -> int:
        return len(self.indptr) - 1

    def _window(self, start: int, stop: int) -> np.ndarray:
        if stop <= start:
            return np.empty(0, dtype=self.indices_layout.dtype)
        self.windows += 1
        return self.indices_layout.window(start, stop)

    def blocks(
        self, order: str = "id", seed: int = 0, max_entries: int = DEFAULT_MAX_ENTRIES
    ) -> Iterator[NodeBlock]:
        """One pass over all nodes: `order` is 'id' (ascending ids) or 'random' (seeded)."""
        if order not in ("id", "random"):
            raise ConfigError(f"partitioner.order: expected 'id' or 'random', got {order!r}")
        self.passes += 1
        if self.num_nodes == 0:
            return
        degree = np.diff(self.indptr)
        budget = max(int(max_entries), int(degree.max()), 1)
        if order == "id":
            yield from self._id_blocks(budget)
        else:
            perm = np.random.default_rng(seed).permutation(self.num_nodes)
            yield from self._random_blocks(perm, degree, budget)

    def _id_blocks(self, budget: int) -> Iterator[NodeBlock]:
        indptr = self.indptr
        lo = 0
        while lo < self.num_nodes:
            hi = _range_end(indptr, lo, budget)
            base = int(indptr[lo])
            window = self._window(base, int(indptr[hi]))
            yield NodeBlock(
                np.arange(lo, hi, dtype=np.int64),
                indptr[lo:hi] - base,
                indptr[lo + 1 : hi + 1] - base,
                np.asarray(window),
            )
            del window
            lo = hi

    def _random_blocks(
        self, perm: np.ndarray, degree: np.ndarray, budget: int
    ) -> Iterator[NodeBlock]:
        cumulative = np.cumsum(degree[perm])
        position = 0
        while position < len(perm):
            taken = int(cumulative[position - 1]) if position else 0
            end = int(np.searchsorted(cumulative, taken + budget, side="right"))
            end = max(end, position + 1)
            nodes = perm[position:end]
            yield self._gather(nodes, budget)
            position = end

    def _gather(self, nodes: np.ndarray, budget: int) -> NodeBlock:
        """Rows of `nodes` (any order) copied out of windows mapped in file-offset order."""
        indptr = self.indptr
        by_offset = np.sort(nodes)
        lengths = indptr[by_offset + 1] - indptr[by_offset]
        out_start = np.zeros(len(by_offset) + 1, dtype=np.int64)
        np.cumsum(lengths, out=out_start[1:])
        buffer = np.empty(int(out_start[-1]), dtype=self.indices_layout.dtype)
        done = 0
        while done < len(by_offset):
            start = int(indptr[by_offset[done]])
            stop = min(int(indptr[-1]), start + budget)
            window = self._window(start, stop)
            done = _copy_rows(window, start, stop, by_offset, indptr, out_start, buffer, done)
            del window
        where = np.searchsorted(by_offset, nodes)
        return NodeBlock(nodes.astype(np.int64), out_start[where], out_start[where + 1], buffer)


def _range_end(indptr: np.ndarray, lo: int, budget: int) -> int:
    """Largest hi > lo with rows [lo, hi) holding at most `budget` entries (at least one node)."""
    hi = int(np.searchsorted(indptr, indptr[lo] + budget, side="right")) - 1
    return min(max(hi, lo + 1), len(indptr) - 1)


@numba.njit(cache=True)
def _copy_rows(window, start, stop, nodes, indptr, out_start, buffer, done):
    """Copy the rows of sorted `nodes[done:]` that lie inside [start, stop); return the next."""
    k = done
    while k < nodes.shape[0]:
        row_start = indptr[nodes[k]]
        row_stop = indptr[nodes[k] + 1]
        if row_stop > stop:
            break
        offset = out_start[k]
        for e in range(row_start, row_stop):
            buffer[offset + e - row_start] = window[e - start]
        k += 1
    return k


@numba.njit(cache=True, nogil=True)
def _fill_range(edges, lo, hi, cursor, buffer):
    """Write the neighbours of nodes in [lo, hi) found in one edge chunk into their rows."""
    for k in range(edges.shape[0]):
        u = edges[k, 0]
        v = edges[k, 1]
        if lo <= u < hi:
            buffer[cursor[u - lo]] = v
            cursor[u - lo] += 1
        if lo <= v < hi:
            buffer[cursor[v - lo]] = u
            cursor[v - lo] += 1


def _tmp_name(path: Path) -> Path:
    return temporary_name(path)


def build_adjacency(
    store: GraphStore,
    max_entries: int = DEFAULT_MAX_ENTRIES,
    chunk_edges: int = DEFAULT_CHUNK_EDGES,
) -> int:
    """Write adj_indptr.npy / adj_indices.npy with bounded memory; return the edge passes used."""
    n = store.num_nodes
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(store.degree(), out=indptr[1:])
    if int(indptr[-1]) != 2 * store.num_edges:
        raise DataError(
            f"{store.path / 'degree.npy'}: degrees add up to {int(indptr[-1])}, expected "
            f"{2 * store.num_edges} (twice the edges in meta.json)"
        )
    dtype = store.id_dtype
    budget = max(int(max_entries), int(np.diff(indptr).max()) if n else 0, 1)
    stream = store.edge_stream(chunk_edges)
    indices_path = store.path / INDICES_FILE
    indptr_path = store.path / INDPTR_FILE
    tmp_indices, tmp_indptr = _tmp_name(indices_path), _tmp_name(indptr_path)
    try:
        with open(tmp_indices, "wb") as handle:
            header = {
                "descr": np.lib.format.dtype_to_descr(dtype),
                "fortran_order": False,
                "shape": (int(indptr[-1]),),
            }
            np.lib.format.write_array_header_1_0(handle, header)
            lo = 0
            while lo < n and indptr[-1] > 0:
                hi = _range_end(indptr, lo, budget)
                base = indptr[lo]
                buffer = np.empty(int(indptr[hi] - base), dtype=dtype)
                cursor = indptr[lo:hi] - base
                if len(buffer):
                    for chunk in stream:
                        _fill_range(chunk, lo, hi, cursor, buffer)
                    if not np.array_equal(cursor, indptr[lo + 1 : hi + 1] - base):
                        raise DataError(
                            f"{store.path / 'edges.bin'}: edges disagree with degree.npy"
                        )
                    buffer.tofile(handle)
                del buffer, cursor
                lo = hi
        with open(tmp_indptr, "wb") as handle:
            np.save(handle, indptr)
        os.replace(tmp_indices, indices_path)
        os.replace(tmp_indptr, indptr_path)
    except BaseException:
        for path in (tmp_indices, tmp_indptr):
            path.unlink(missing_ok=True)
        raise
    return stream.passes


def _is_complete(store: GraphStore) -> bool:
    try:
        indptr = NpyLayout.read(store.path / INDPTR_FILE)
        indices = NpyLayout.read(store.path / INDICES_FILE)
    except DataError:
        return False
    return (
        indptr.shape == (store.num_nodes + 1,)
        and indptr.dtype == np.int64
        and indices.shape == (2 * store.num_edges,)
        and indices.dtype == store.id_dtype
    )


def ensure_adjacency(store: GraphStore, max_entries: int = DEFAULT_MAX_ENTRIES) -> AdjacencyStream:
    """The store's on-disk CSR, built first (bounded memory, atomically) if it is missing."""
    passes = 0
    if not _is_complete(store):
        try:
            passes = build_adjacency(store, max_entries)
        except PermissionError as exc:
            raise DataError(f"{store.path}: cannot write the adjacency files ({exc})") from None
    return AdjacencyStream(store, passes)
