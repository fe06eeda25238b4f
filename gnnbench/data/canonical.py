"""Canonical edges from the raw edge file, in memory when it fits the budget, else through disk.

The builder's raw file holds every edge a source handed over, as int64 pairs in stream order. The
canonical edge list keeps each undirected edge once, as (low, high), without self-loops, in order
of its first occurrence; without a fixed node count the ids are first relabelled 0..N-1 in sorted
order of the original ids (saved as original_ids.npy). Both paths below give the same bytes.

The external path bounds memory by `budget` bytes: edges are hashed into bucket files by key,
each bucket is deduplicated alone (keeping each key's first stream index), and the survivors are
redistributed into files by ranges of that index, whose sorted concatenation is the output.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from gnnbench.data.import_checks import check_disk_space
from gnnbench.errors import DataError

# Peak bytes per raw edge of the in-memory path (raw pairs, unique's sort and inverse), without
# and with relabelling; memray measured 47 and 94 at 20 M raw edges.
IN_MEMORY_BYTES_PER_EDGE = {False: 48, True: 96}
# Peak bytes per entry while one bucket is sorted: the (key, index) pairs, unique's flat copy,
# argsort, sorted copy and mask, and the pairs written out (memray: 210 MB at a 256 MB budget).
BUCKET_BYTES_PER_ENTRY = 96
CHUNK_BYTES_PER_EDGE = 256  # raw rows read per step: pairs, endpoints, keys, bucket order
_HASH = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: spreads consecutive keys
MAX_NODES = 3_037_000_499  # largest N whose keys low * N + high fit in int64


def write_canonical_edges(
    tmp: Path, num_nodes: int | None, budget: int
) -> tuple[int, int, np.dtype]:
    """Write `tmp/edges.bin` (and original_ids.npy when relabelling) from `tmp/raw_edges.bin`.

    Returns (num_nodes, num_edges, id_dtype). Memory stays near `budget` bytes plus the
    original ids (8 bytes per node, memory-mapped) when relabelling.
    """
    raw_path = Path(tmp) / "raw_edges.bin"
    num_raw = os.path.getsize(raw_path) // 16
    if num_nodes is not None and num_nodes > MAX_NODES:
        raise DataError(
            f"num_nodes={num_nodes}: at most {MAX_NODES} nodes are supported "
            "(edge keys low * num_nodes + high must fit in 64 bits)"
        )
    if num_raw * IN_MEMORY_BYTES_PER_EDGE[num_nodes is None] <= budget:
        return _in_memory(tmp, raw_path, num_nodes)
    return ExternalCanonicaliser(tmp, raw_path, num_raw, budget).run(num_nodes)


def id_dtype_for(num_nodes: int) -> np.dtype:
    return np.dtype("<i4") if num_nodes < 2**31 else np.dtype("<i8")


def _in_memory(tmp: Path, raw_path: Path, num_nodes: int | None) -> tuple[int, int, np.dtype]:
    raw = np.fromfile(raw_path, dtype="<i8").reshape(-1, 2)
    if num_nodes is None:
        # No fixed node set: ids become 0..N-1 in sorted order of the original ids.
        original_ids, raw = np.unique(raw, return_inverse=True)
        raw = raw.reshape(-1, 2)
        np.save(Path(tmp) / "original_ids.npy", original_ids)
        num_nodes = len(original_ids)
    low = np.minimum(raw[:, 0], raw[:, 1])
    high = np.maximum(raw[:, 0], raw[:, 1])
    del raw
    keep = low != high
    keys = low[keep] * np.int64(num_nodes) + high[keep]
    del low, high, keep
    _, first = np.unique(keys, return_index=True)
    keys = keys[np.sort(first)]  # first-occurrence order = the source's stream order
    id_dtype = id_dtype_for(num_nodes)
    check_disk_space(tmp, len(keys) * 2 * id_dtype.itemsize, "edges.bin")
    decode_keys(keys, num_nodes, id_dtype).tofile(Path(tmp) / "edges.bin")
    return num_nodes, len(keys), id_dtype


def decode_keys(keys: np.ndarray, num_nodes: int, id_dtype: np.dtype) -> np.ndarray:
    """(low, high) pairs of the keys low * num_nodes + high, as `id_dtype`."""
    edges = np.empty((len(keys), 2), dtype=np.int64)
    np.divmod(keys, num_nodes, out=(edges[:, 0], edges[:, 1]))
    return edges.astype(id_dtype, copy=False)


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """Distinct values in increasing order (a sort and a mask: faster than np.unique's hashing)."""
    values = np.sort(values)
    keep = np.empty(len(values), dtype=bool)
    keep[:1] = True
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


def ranks_of(ids: np.ndarray, sorted_ids: np.ndarray) -> np.ndarray:
    """Position of each id in `sorted_ids`; looked up in increasing order, which keeps the binary
    searches in cache (several times faster than random order on millions of ids)."""
    flat = ids.reshape(-1)
    order = np.argsort(flat)
    ranks = np.empty(len(flat), dtype=np.int64)
    ranks[order] = np.searchsorted(sorted_ids, flat[order])
    return ranks.reshape(ids.shape)


class BucketFiles:
    """Append-only binary files, one per bucket, of int64 rows of a fixed width."""

    def __init__(self, directory: Path, prefix: str, count: int, width: int):
        self.paths = [Path(directory) / f"{prefix}-{b:05d}.bin" for b in range(count)]
        self.width = width
        self._handles = [open(path, "wb") for path in self.paths]

    def scatter(self, rows: np.ndarray, bucket: np.ndarray) -> None:
        """Append each row to the file of its bucket, keeping the rows' order within a bucket."""
        order = np.argsort(bucket, kind="stable")
        bounds = np.zeros(len(self.paths) + 1, dtype=np.int64)
        np.cumsum(np.bincount(bucket, minlength=len(self.paths)), out=bounds[1:])
        rows = rows[order]
        for b in np.flatnonzero(np.diff(bounds)):
            rows[bounds[b] : bounds[b + 1]].tofile(self._handles[b])

    def close(self) -> None:
        for handle in self._handles:
            handle.close()

    def drain(self) -> Iterator[np.ndarray]:
        """Each bucket's rows in bucket order; a bucket's file is deleted once read."""
        self.close()
        for path in self.paths:
            rows = np.fromfile(path, dtype="<i8").reshape(-1, self.width)
            path.unlink()
            yield rows


class ExternalCanonicaliser:
    """The bounded-memory path: hash buckets by key, then range buckets by first stream index."""

    def __init__(self, tmp: Path, raw_path: Path, num_raw: int, budget: int):
        self.tmp = Path(tmp)
        self.raw_path = raw_path  # read by explicit reads: a map would count whole in the peak
        self.num_raw = num_raw
        self.budget = max(1, int(budget))
        self.chunk_rows = max(1024, self.budget // CHUNK_BYTES_PER_EDGE)
        self.num_buckets = max(1, math.ceil(num_raw * BUCKET_BYTES_PER_ENTRY / self.budget))

    def run(self, num_nodes: int | None) -> tuple[int, int, np.dtype]:
        # bucket files hold (key, index) pairs twice at most, 16 bytes each, then the output
        check_disk_space(self.tmp, self.num_raw * 16 * 2, "the import's bucket files")
        original_ids = None
        if num_nodes is None:
            original_ids = self._relabel_ids()
            num_nodes = len(original_ids)
        id_dtype = id_dtype_for(num_nodes)
        by_key = self._hash_buckets(num_nodes, original_ids)
        del original_ids
        by_index, num_edges = self._dedup_buckets(by_key)
        check_disk_space(self.tmp, num_edges * 2 * id_dtype.itemsize, "edges.bin")
        with open(self.tmp / "edges.bin", "wb") as out:
            for pairs in by_index.drain():
                order = np.argsort(pairs[:, 0])  # first stream index: the output order
                decode_keys(pairs[order, 1], num_nodes, id_dtype).tofile(out)
        return num_nodes, num_edges, id_dtype

    def _chunks(self) -> Iterator[tuple[int, np.ndarray]]:
        for start in range(0, self.num_raw, self.chunk_rows):
            yield start, self._read(start, min(self.chunk_rows, self.num_raw - start))

    def _read(self, start: int, rows: int) -> np.ndarray:
        """Raw rows [start, start + rows) as an (rows, 2) int64 array."""
        flat = np.fromfile(self.raw_path, dtype="<i8", count=2 * rows, offset=16 * start)
        return flat.reshape(-1, 2)

    def _id_sample(self, blocks: int = 1024, rows_per_block: int = 512) -> np.ndarray:
        """Endpoint ids of `blocks` evenly spaced runs of raw rows, sorted."""
        starts = np.linspace(0, max(0, self.num_raw - rows_per_block), blocks, dtype=np.int64)
        sample = [self._read(int(start), min(rows_per_block, self.num_raw)) for start in starts]
        return np.sort(np.concatenate(sample).reshape(-1))

    def _relabel_ids(self) -> np.ndarray:
        """Sorted distinct endpoint ids, written to original_ids.npy: range buckets of the ids,
        bounded by splitters drawn from a strided sample, each made unique on its own."""
        sample = self._id_sample()
        num_ranges = max(1, math.ceil(2 * self.num_raw * BUCKET_BYTES_PER_ENTRY / 2 / self.budget))
        cuts = sample[np.linspace(0, len(sample), num_ranges + 1, dtype=np.int64)[1:-1]]
        splitters = np.unique(cuts)
        ranges = BucketFiles(self.tmp, "ids", len(splitters) + 1, 1)
        for _, chunk in self._chunks():
            flat = chunk.reshape(-1, 1)
            ranges.scatter(flat, np.searchsorted(splitters, flat[:, 0], side="right"))
        unique_path = self.tmp / "ids-unique.bin"
        with open(unique_path, "wb") as out:
            for values in ranges.drain():
                sorted_unique(values[:, 0]).tofile(out)
        unique = np.memmap(unique_path, dtype="<i8", mode="r")
        original_ids = np.lib.format.open_memmap(
            self.tmp / "original_ids.npy", mode="w+", dtype=np.int64, shape=(len(unique),)
        )
        step = max(1, self.budget // 16)
        for start in range(0, len(unique), step):
            original_ids[start : start + step] = unique[start : start + step]
        original_ids.flush()
        del unique, original_ids
        unique_path.unlink()
        return np.load(self.tmp / "original_ids.npy", mmap_mode="r")

    def _hash_buckets(self, num_nodes: int, original_ids: np.ndarray | None) -> BucketFiles:
        """(key, stream index) of every non-loop edge, in hash buckets of the key."""
        buckets = BucketFiles(self.tmp, "keys", self.num_buckets, 2)
        for start, chunk in self._chunks():
            if original_ids is not None:
                chunk = ranks_of(chunk, original_ids)
            low = np.minimum(chunk[:, 0], chunk[:, 1])
            high = np.maximum(chunk[:, 0], chunk[:, 1])
            keep = np.flatnonzero(low != high)
            keys = low[keep] * np.int64(num_nodes) + high[keep]
            pairs = np.stack([keys, start + keep.astype(np.int64)], axis=1)
            buckets.scatter(pairs, self._bucket_of(keys))
        return buckets

    def _bucket_of(self, keys: np.ndarray) -> np.ndarray:
        hashed = (keys.astype(np.uint64) * _HASH) >> np.uint64(32)
        return (hashed % np.uint64(self.num_buckets)).astype(np.int64)

    def _dedup_buckets(self, by_key: BucketFiles) -> tuple[BucketFiles, int]:
        """Each key once with its first stream index, as (index, key) in ranges of the index."""
        by_index = BucketFiles(self.tmp, "first", self.num_buckets, 2)
        range_width = -(-self.num_raw // self.num_buckets)
        num_edges = 0
        for pairs in by_key.drain():
            # rows of a bucket are in stream order, so unique's first position is the first index
            keys, first = np.unique(pairs[:, 0], return_index=True)
            firsts = pairs[first, 1]
            del pairs
            by_index.scatter(np.stack([firsts, keys], axis=1), firsts // range_width)
            num_edges += len(keys)
        return by_index, num_edges
