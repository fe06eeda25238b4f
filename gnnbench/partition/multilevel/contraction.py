"""The coarse graph of a clustering (contraction), in memory of the coarse graph's size.

`coarse_graph` sums the edges between clusters into their weighted graph (node weight: summed
member weights; edge weight: summed weights of the edges between two clusters; both directions
kept, as a CSR for METIS) from one pass of rows, which may come from the on-disk CSR:

- each window's crossing pairs are counted, written (key: source cluster * count + target),
  sorted and summed (`_merge`), and appended to one scratch file per range of source clusters
  (`_PairSpill`); the ranges are cut so that their members hold at most RANGE_ENTRIES finer
  entries, an upper bound on a range's pairs;
- each range is then merged alone, twice: once to count its pairs, so that the graph is
  allocated once at its size, and once to fill it.

What is held: one window's pairs, then one range's, and the coarse graph itself (int32 targets
while the clusters fit). A running sorted list merged window after window held about three
times the coarse graph, the multilevel partitioner's peak on the 1 M-node RGG.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np

# quotient alone runs this module: bump its VERSION when this module's output changes.
UNIT = np.zeros(0, dtype=np.int64)  # no weights given: every node and edge weighs 1
PAIR_WINDOW = 1 << 19  # CSR entries per window of label propagation and coarse_graph
# The coarse graph's pairs are spilled by ranges of source clusters whose members hold at most
# this many finer entries (an upper bound on a range's pairs: 2 MB of keys), at most MAX_RANGES.
RANGE_ENTRIES = 1 << 18
MAX_RANGES = 256

Rows = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class CoarseGraph:
    """A weighted graph in memory: node i's neighbours indices[indptr[i]:indptr[i + 1]]."""

    indptr: np.ndarray
    indices: np.ndarray
    edge_weights: np.ndarray
    node_weights: np.ndarray

    @classmethod
    def from_dense(cls, weights: np.ndarray, node_weights: np.ndarray) -> CoarseGraph:
        """The graph of a dense k x k matrix of edge weights (its nonzero entries)."""
        rows, cols = np.nonzero(weights)
        indptr = np.zeros(len(weights) + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=len(weights)), out=indptr[1:])
        return cls(indptr, cols, weights[rows, cols].astype(np.int64), node_weights)

    @property
    def num_nodes(self) -> int:
        return len(self.indptr) - 1

    def cut(self, part: np.ndarray) -> int:
        """Edge weight between parts (each edge is held in both directions)."""
        sources = np.repeat(part, np.diff(self.indptr))
        return int(self.edge_weights[sources != part[self.indices]].sum()) // 2

    def rows(self, max_entries: int = PAIR_WINDOW) -> Iterator[Rows]:
        """One pass over the rows in id order, about `max_entries` entries at a time."""
        lo = 0
        while lo < self.num_nodes:
            hi = int(np.searchsorted(self.indptr, self.indptr[lo] + max_entries, side="right")) - 1
            hi = min(max(hi, lo + 1), self.num_nodes)
            base, stop = int(self.indptr[lo]), int(self.indptr[hi])
            yield (
                np.arange(lo, hi, dtype=np.int64),
                self.indptr[lo:hi] - base,
                self.indptr[lo + 1 : hi + 1] - base,
                self.indices[base:stop],
                self.edge_weights[base:stop],
            )
            lo = hi


def coarse_graph(
    rows: Iterable[Rows], label: np.ndarray, count: int, node_weights: np.ndarray = UNIT, *,
    indptr: np.ndarray, scratch: Path,
) -> CoarseGraph:  # fmt: skip
    """The graph of the `count` clusters `label` names, from one pass of weighted rows (the
    finer graph's `indptr` bounds each cluster's pairs; `scratch`: a directory for the spill)."""
    bounds = _source_ranges(indptr, label, count)
    with _PairSpill(scratch, bounds, count) as spill:
        for nodes, starts, stops, indices, edge_weights in rows:
            # only the crossing entries are materialised (no per-entry int64 temporaries: those
            # were the partitioner's peak, ~60 MB a window, on the 1 M-node RGG)
            indices = _read_only(indices)
            crossing = _count_crossing(nodes, starts, stops, indices, label)
            window_keys = np.empty(crossing, dtype=np.int64)
            pair_weights = np.empty(crossing if edge_weights.shape[0] else 0, dtype=np.int64)
            _crossing_pairs(nodes, starts, stops, indices, edge_weights, label, count,
                            window_keys, pair_weights)  # fmt: skip
            spill.append(*_merge(window_keys, pair_weights))
            del window_keys, pair_weights, nodes, starts, stops, indices, edge_weights
        row_lengths, targets, weights = spill.collect()
    graph_indptr = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(row_lengths, out=graph_indptr[1:])
    if node_weights.shape[0]:
        sizes = np.bincount(label, weights=node_weights, minlength=count)
    else:
        sizes = np.bincount(label, minlength=count)
    return CoarseGraph(graph_indptr, targets, weights, sizes.astype(np.int64))


def _source_ranges(indptr: np.ndarray, label: np.ndarray, count: int) -> np.ndarray:
    """Cluster ids cutting [0, count) into ranges whose members hold at most about RANGE_ENTRIES
    finer entries each (an upper bound on the range's pairs), at most MAX_RANGES ranges."""
    entries = _cluster_entries(_read_only(indptr), label, count)
    total = int(entries.sum())
    per_range = max(RANGE_ENTRIES, -(-total // MAX_RANGES), 1)
    cumulative = np.cumsum(entries)
    cuts = np.searchsorted(cumulative, np.arange(per_range, total, per_range), side="left") + 1
    return np.unique(np.concatenate([[0], cuts[cuts < count], [count]]))


def _read_only(array: np.ndarray) -> np.ndarray:
    """A read-only view. numba compiles a kernel once per array mutability, and the finer graph
    is a read-only map at the first level but writable memory at the levels below: one type
    keeps every call on what the stage's tiny-graph warm-up compiled, outside the meter (on a
    cold cache, three kernels compiled inside it and the 1 M-node RGG's peak read 12-19% high)."""
    view = array.view()
    view.flags.writeable = False
    return view


@numba.njit(cache=True)
def _cluster_entries(indptr, label, count):
    """Each cluster's members' entries (their summed row lengths)."""
    entries = np.zeros(count, dtype=np.int64)
    for v in range(label.shape[0]):
        entries[label[v]] += indptr[v + 1] - indptr[v]
    return entries


class _PairSpill:
    """Sorted window pairs appended to one scratch file per range of source clusters, then each
    range merged alone: what is held is one window's pairs, one range's, and the coarse graph."""

    def __init__(self, scratch: Path, bounds: np.ndarray, count: int):
        self.directory = Path(tempfile.mkdtemp(prefix="coarse-pairs-", dir=scratch))
        self.key_bounds = bounds * np.int64(count)  # a range's first key: its first cluster's
        self.bounds, self.count = bounds, count
        # named once: a Path per window and range churned the heap's small-object arenas
        self.files = [
            (str(self.directory / f"{index}.keys"), str(self.directory / f"{index}.weights"))
            for index in range(len(bounds) - 1)
        ]

    def __enter__(self) -> _PairSpill:
        return self

    def __exit__(self, *_exc) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)

    def append(self, keys: np.ndarray, weights: np.ndarray) -> None:
        """A window's sorted unique pairs, each range's share appended to its files."""
        cuts = np.searchsorted(keys, self.key_bounds)
        for index in np.flatnonzero(np.diff(cuts)):
            lo, hi = cuts[index], cuts[index + 1]
            keys_file, weights_file = self.files[index]
            with open(keys_file, "ab") as out:
                keys[lo:hi].tofile(out)
            with open(weights_file, "ab") as out:
                weights[lo:hi].tofile(out)

    def _merged(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        """A range's pairs from every window, sorted, equal keys' weights summed."""
        keys_file, weights_file = self.files[index]
        if not os.path.exists(keys_file):
            return UNIT, UNIT
        keys = np.fromfile(keys_file, dtype=np.int64)
        weights = np.fromfile(weights_file, dtype=np.int64)
        order = np.argsort(keys, kind="stable")  # runs already sorted per window
        out_keys, out_weights = np.empty_like(keys), np.empty_like(weights)
        n = _merge_sorted(UNIT, UNIT, keys, weights, order, out_keys, out_weights)
        return out_keys[:n], out_weights[:n]

    def collect(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(row lengths, targets, weights) of the whole graph: a first merge of every range
        counts its pairs, so the graph is allocated once at its size, then filled by a second."""
        sizes = [len(self._merged(index)[0]) for index in range(len(self.bounds) - 1)]
        index_type = np.int32 if self.count < 2**31 else np.int64
        targets = np.empty(sum(sizes), dtype=index_type)
        weights = np.empty(sum(sizes), dtype=np.int64)
        row_lengths = np.zeros(self.count, dtype=np.int64)
        at = 0
        for index, size in enumerate(sizes):
            keys, range_weights = self._merged(index)
            lo, hi = self.bounds[index], self.bounds[index + 1]
            weights[at : at + size] = range_weights
            del range_weights
            np.remainder(keys, self.count, out=targets[at : at + size], casting="unsafe")
            keys //= self.count  # the source cluster, in place
            keys -= lo
            row_lengths[lo:hi] = np.bincount(keys, minlength=hi - lo)
            del keys  # before the next range's merge allocates its own
            at += size
        return row_lengths, targets, weights


@numba.njit(cache=True)
def _count_crossing(nodes, starts, stops, indices, label):
    """How many of these rows' entries join two clusters."""
    crossing = 0
    for i in range(nodes.shape[0]):
        own = label[nodes[i]]
        for e in range(starts[i], stops[i]):
            crossing += label[indices[e]] != own
    return crossing


@numba.njit(cache=True)
def _crossing_pairs(nodes, starts, stops, indices, edge_weights, label, count, keys, weights):
    """The crossing entries in row order: key (cluster a) * count + (cluster b), and their
    weights when the rows are weighted (`weights` is then as long as `keys`)."""
    n = 0
    for i in range(nodes.shape[0]):
        own = np.int64(label[nodes[i]])
        for e in range(starts[i], stops[i]):
            other = label[indices[e]]
            if other != own:
                keys[n] = own * count + other
                if weights.shape[0]:
                    weights[n] = edge_weights[e]
                n += 1


@numba.njit(cache=True)
def _merge_sorted(keys, weights, more_keys, more_weights, order, out_keys, out_weights):
    """Sorted unique (keys, weights) merged with (more_keys, more_weights) read in `order`
    (ascending keys, repeats allowed): the weights of equal keys summed; how many written."""
    i = j = n = 0
    while i < keys.shape[0] or j < order.shape[0]:
        if j == order.shape[0] or (i < keys.shape[0] and keys[i] <= more_keys[order[j]]):
            key, weight = keys[i], weights[i]
            i += 1
        else:
            key, weight = more_keys[order[j]], more_weights[order[j]]
            j += 1
        if n and out_keys[n - 1] == key:
            out_weights[n - 1] += weight
        else:
            out_keys[n], out_weights[n] = key, weight
            n += 1
    return n


def _merge(keys: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique keys with their summed weights (empty `weights`: each key weighs 1)."""
    if not weights.shape[0] and keys.shape[0]:
        merged, counts = np.unique(keys, return_counts=True)
        return merged, counts.astype(np.int64)
    merged, inverse = np.unique(keys, return_inverse=True)
    return merged, np.bincount(inverse, weights=weights, minlength=len(merged)).astype(np.int64)
