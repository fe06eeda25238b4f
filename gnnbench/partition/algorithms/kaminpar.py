"""KaMinPar (Gottesbüren, Heuer, Sanders, Schlag, Seemaier; `kaminpar` on PyPI) on the whole graph.

A modern in-memory multilevel k-way partitioner, the one partitioning papers compare against
today. Its Python bindings (3.7.3) take a graph only from a file, so the measured step builds the
in-memory CSR from the GraphStore (the helper METIS uses, at 32-bit width), writes it as a ParHIP
binary file next to the store (32-bit node ids; removed afterwards), frees it, and lets KaMinPar
read that file: into its CSR, or, for the `terapart` contexts, straight into its compressed graph,
which is what those contexts exist for (memory-efficient partitioning). Everything KaMinPar holds
is inside the measurement; the file itself is on disk.

Under `partitioner.memory_limit_gb`, a failed allocation is a MemoryError (std::bad_alloc) where
KaMinPar uses `new`, but its own arrays abort the process on a failed allocation: the stage then
reports out of memory (killed by SIGABRT under its cap) without the peak reached, and the graph
file, if left, is a stale temporary the next run removes.

Determinism: KaMinPar is reseeded with the run's seed before every call; with `threads: 1` (the
default) the result is the same for a seed on every run. More threads are faster but their
label propagation races, so the partition may differ between runs.
"""

from __future__ import annotations

import os

import numpy as np

from gnnbench.data.store import GraphStore
from gnnbench.partition.base import PartitionResult, check_choice, register_partitioner
from gnnbench.partition.baselines.in_memory import (
    check_imbalance,
    imbalance_bound,
    require_package,
)
from gnnbench.process.atomic import temporary_name
from gnnbench.spec_keys import whole_at_least

# Bump when this module's output changes: part of every partition book's cache key.
VERSION = "1"

# KaMinPar's presets (kaminpar.context_names()) exposed here; `terapart*` read compressed.
CONTEXTS = ("default", "fast", "eco", "strong", "terapart", "terapart-eco")

_HEADER_BYTES = 24  # version, n, 2|E| as uint64
_NODE_ID_BYTES = 4
_OFFSETS_PER_WRITE = 1 << 20
NARROW_OFFSETS_BELOW = 2**32  # file size from which the byte offsets take 64 bits


def parhip_version(wide_offsets: bool) -> int:
    """The ParHIP header's version word: its set bits say what is absent or 32-bit. Here: no
    edge weights (bit 0), no node weights (bit 1), 32-bit node ids (bit 3), and 32-bit edge
    offsets (bit 2) unless the file is too large for them."""
    return 0b1011 | (0 if wide_offsets else 0b100)


def write_parhip(path: os.PathLike, indptr: np.ndarray, indices: np.ndarray) -> None:
    """The symmetric CSR as a ParHIP binary graph: header, n + 1 byte offsets of each node's
    first neighbour, then the neighbours (uint32)."""
    n = len(indptr) - 1
    if n >= 2**32:
        raise ValueError(f"ParHIP with 32-bit node ids holds under 2^32 nodes, not {n}")
    entries = int(indptr[-1])
    narrow_end = _HEADER_BYTES + (n + 1) * 4 + entries * _NODE_ID_BYTES
    wide = narrow_end >= NARROW_OFFSETS_BELOW
    offset_dtype = np.dtype("<u8" if wide else "<u4")
    first_neighbour = _HEADER_BYTES + (n + 1) * offset_dtype.itemsize
    with open(path, "wb") as handle:
        np.array([parhip_version(wide), n, entries], dtype="<u8").tofile(handle)
        for start in range(0, n + 1, _OFFSETS_PER_WRITE):  # bounded scratch for the offsets
            rows = indptr[start : start + _OFFSETS_PER_WRITE].astype(offset_dtype)
            (rows * _NODE_ID_BYTES + first_neighbour).astype(offset_dtype).tofile(handle)
        indices.astype("<u4", copy=False).tofile(handle)


@register_partitioner(
    "kaminpar",
    in_memory_baseline=True,
    vertex_balance_bound=lambda p, n, imbalance, **_: imbalance_bound(p, n, imbalance),
)
def kaminpar(
    store: GraphStore, p: int, seed: int, *, context: str, imbalance: float, threads: int
) -> PartitionResult:
    """Owner per node from `KaMinPar(threads, context).compute_partition(graph, p, imbalance)`."""
    context = check_choice("context", context, CONTEXTS)
    imbalance = check_imbalance("kaminpar", imbalance)
    threads = whole_at_least("partitioner.threads", threads, 1)
    package = require_package("kaminpar", "kaminpar")
    if p == 1:
        return PartitionResult(np.zeros(store.num_nodes, dtype=np.int32), {"passes": 1})
    graph_file = temporary_name(store.path / "kaminpar.parhip")
    try:
        indptr, indices = store.csr(np.int32)
        write_parhip(graph_file, indptr, indices)
        del indptr, indices
        graph = package.load_graph(
            str(graph_file), package.GraphFileFormat.PARHIP, compress=context.startswith("terapart")
        )
    finally:
        graph_file.unlink(missing_ok=True)
    package.reseed(int(seed))
    solver = package.KaMinPar(threads, package.context_by_name(context))
    owner = np.asarray(solver.compute_partition(graph, p, imbalance), dtype=np.int32)
    return PartitionResult(owner, {"passes": 1})
