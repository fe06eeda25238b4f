"""On-disk symmetric CSR of a GraphStore, and the node stream that node-order partitioners read.

Node-stream partitioners (LDG, Fennel, HeiStream, quotient) and the refinement post-pass need each
node's full neighbour list when the node arrives. `ensure_adjacency(store)` builds it as two files:

    adj_indptr.npy    int64 (N + 1,): row offsets, from degree.npy by a prefix sum
    adj_indices.npy   the store's id dtype (2E,): neighbours of every node, each row in edge
                      stream order (an undirected edge appears in both endpoints' rows)

Where, and for how long. The one meter (docs/design.md, "Metrics") counts everything an algorithm
reads beyond the GraphStore inside its measured step, so the CSR is never cached in the store: it
is written to a scratch directory beside the store (`.<store>.adjacency-<n>.tmp-<host>-<pid>`,
swept by `remove_stale_temporaries` after a crash) and deleted when it is no longer used. Inside
an `adjacency_scope()` (what `PartitionSpec.run_refined` opens: the partitioner and its
refinement) the first call builds it and later calls reuse it until the scope ends; outside a
scope each call builds its own, deleted with the returned stream.

What it costs. Building reads the edge stream once per *bucket*: nodes are cut into id ranges
whose rows hold at most `max_entries` adjacency entries together (16 Mi entries by default, never
less than the largest degree), one pass over the edge stream fills one bucket's rows in memory,
and the bucket is appended to the file. Peak memory is O(|V|) for indptr plus one bucket and one
edge chunk, never O(|E|); its edge passes are reported by the partitioners
(`adjacency_build_passes`). Disk: 8 (N + 1) + 2E x the id width bytes while it lives.

Reading. `AdjacencyStream.blocks()` yields nodes in stream order with their rows, reading one
bounded window of adj_indices.npy at a time (indptr, O(|V|), is held in memory). Stream order is
node id order, or a seeded random permutation: a random block's rows are gathered from windows
over the file in offset order, so it still holds one bounded window at a time.
"""

from __future__ import annotations

import functools
import itertools
import shutil
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np

from gnnbench.data.npy_file import NpyLayout
from gnnbench.data.store import DEFAULT_CHUNK_EDGES, GraphStore
from gnnbench.errors import ConfigError, DataError
from gnnbench.process.atomic import temporary_name

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
    """Windowed reader of a CSR in `directory`; `build_passes` is 0 when the scope reused it."""

    def __init__(self, directory: Path, build_passes: int = 0, indptr: np.ndarray | None = None):
        self.directory = directory
        self.build_passes = build_passes
        self.indices_layout = NpyLayout.read(directory / INDICES_FILE)
        if indptr is None:  # a scope's streams share one (|V| int64s), read-only
            indptr = np.load(directory / INDPTR_FILE)
            indptr.flags.writeable = False
        self.indptr = indptr
        self.passes = 0  # node-stream passes handed out (each edge read twice per pass)
        self.windows = 0  # windows of adj_indices.npy mapped so far

    @property
    def num_nodes(self) -> int:
        return len(self.indptr) - 1

    @functools.cached_property
    def max_degree(self) -> int:
        """The longest row (computed once: the degree array is |V| int64s)."""
        return int(np.diff(self.indptr).max()) if self.num_nodes else 0

    def _window(self, start: int, stop: int) -> np.ndarray:
        if stop <= start:
            return np.empty(0, dtype=self.indices_layout.dtype)
        self.windows += 1
        return self.indices_layout.window(start, stop)

    def blocks(
        self, order: str = "id", seed: int = 0, max_entries: int = DEFAULT_MAX_ENTRIES,
        first_entries: int | None = None,
    ) -> Iterator[NodeBlock]:  # fmt: skip
        """One pass over all nodes: `order` is 'id' (ascending ids) or 'random' (seeded); in id
        order the first window may hold fewer entries (`first_entries`), which shifts where
        every later window starts."""
        if order not in ("id", "random"):
            raise ConfigError(f"partitioner.order: expected 'id' or 'random', got {order!r}")
        self.passes += 1
        if self.num_nodes == 0:
            return
        budget = max(int(max_entries), self.max_degree, 1)
        if order == "id":
            yield from self._id_blocks(budget, max(1, min(first_entries or budget, budget)))
        else:
            perm = np.random.default_rng(seed).permutation(self.num_nodes)
            yield from self._random_blocks(perm, np.diff(self.indptr), budget)

    def _id_blocks(self, budget: int, first: int) -> Iterator[NodeBlock]:
        indptr = self.indptr
        lo = 0
        while lo < self.num_nodes:
            hi = _range_end(indptr, lo, first if lo == 0 else budget)
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


def build_adjacency(
    store: GraphStore,
    directory: Path,
    max_entries: int = DEFAULT_MAX_ENTRIES,
    chunk_edges: int = DEFAULT_CHUNK_EDGES,
) -> int:
    """Write adj_indptr.npy / adj_indices.npy into `directory` with bounded memory; return the
    edge passes used."""
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
    with open(directory / INDICES_FILE, "wb") as handle:
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
                    del chunk  # unmapped before the stream maps the next chunk, not after
                if not np.array_equal(cursor, indptr[lo + 1 : hi + 1] - base):
                    raise DataError(f"{store.path / 'edges.bin'}: edges disagree with degree.npy")
                buffer.tofile(handle)
            del buffer, cursor
            lo = hi
    np.save(directory / INDPTR_FILE, indptr)
    return stream.passes


# The CSRs built in the current adjacency_scope, by store directory: their scratch directory and
# row offsets (None: no scope is open).
_SCOPE: ContextVar[dict[Path, tuple[Path, np.ndarray]] | None] = ContextVar(
    "adjacency_scope", default=None
)
_SERIAL = itertools.count()  # two scratch directories of one process never share a name


@contextmanager
def adjacency_scope() -> Iterator[None]:
    """Within the block, a store's CSR is built by the first `ensure_adjacency` and reused by the
    later ones; when the block ends it is deleted (never cached across measured steps). A scope
    opened inside another is the outer one."""
    if _SCOPE.get() is not None:
        yield
        return
    built: dict[Path, tuple[Path, np.ndarray]] = {}
    token = _SCOPE.set(built)
    try:
        yield
    finally:
        _SCOPE.reset(token)
        for directory, _ in built.values():
            shutil.rmtree(directory, ignore_errors=True)


def _scratch_directory(store: GraphStore) -> Path:
    directory = temporary_name(store.path.parent / f"{store.path.name}.adjacency-{next(_SERIAL)}")
    try:
        directory.mkdir()
    except OSError as exc:
        raise DataError(f"{directory}: cannot write the adjacency files ({exc})") from None
    return directory


def ensure_adjacency(store: GraphStore, max_entries: int = DEFAULT_MAX_ENTRIES) -> AdjacencyStream:
    """The store's CSR as a node stream: the open scope's if it built one, else built now (bounded
    memory) into a scratch directory that lives as long as the scope, or as the returned stream."""
    built = _SCOPE.get()
    if built is not None and store.path in built:
        directory, indptr = built[store.path]
        return AdjacencyStream(directory, indptr=indptr)
    directory = _scratch_directory(store)
    try:
        passes = build_adjacency(store, directory, max_entries)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    stream = AdjacencyStream(directory, passes)
    if built is not None:
        built[store.path] = (directory, stream.indptr)
    else:
        weakref.finalize(stream, shutil.rmtree, directory, True)
    return stream
