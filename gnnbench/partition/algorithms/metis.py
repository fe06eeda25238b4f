"""METIS k-way (pymetis) on the whole graph in memory: the algorithm inside the METIS baselines.

Measured like every partitioner, the step includes building the in-memory symmetric CSR from the
GraphStore's edges, since METIS cannot run without it; that O(|E|) working set is what the
streaming partitioners avoid. METIS is deterministic for a fixed `options.seed` on one machine
(serial METIS, no threads); the run's seed is passed as that seed.
"""

from __future__ import annotations

import numpy as np

from gnnbench.data.store import GraphStore
from gnnbench.partition.base import PartitionResult, register_partitioner
from gnnbench.process.memory_limit import current_memory_limit

# Bump when this module's output changes: part of every partition book's cache key.
VERSION = "1"


# METIS's default load imbalance (ufactor 30: 1.03), plus one node of rounding per part.
@register_partitioner(
    "metis", in_memory_baseline=True, vertex_balance_bound=lambda p, n, **_: 1.03 + p / n
)
def metis(store: GraphStore, p: int, seed: int, *, recursive: bool) -> PartitionResult:
    """Owner per node from `pymetis.part_graph` (k-way, or recursive bisection if configured)."""
    import pymetis

    if p == 1:
        return PartitionResult(np.zeros(store.num_nodes, dtype=np.int32), {"passes": 1})
    indptr, indices = store.csr()
    try:
        edge_cut, membership = pymetis.part_graph(
            p,
            pymetis.CSRAdjacency(indptr, indices),
            recursive=bool(recursive),
            options=pymetis.Options(seed=int(seed)),
        )
    except RuntimeError as exc:
        # pymetis throws METIS's error codes as pointers, which pybind11 reports as "unknown".
        # On a valid CSR that leaves METIS_ERROR_MEMORY; without a cap, say what is known.
        if "unknown exception" in str(exc) and current_memory_limit() is not None:
            raise MemoryError("METIS failed under the memory cap (METIS_ERROR_MEMORY)") from exc
        raise RuntimeError(
            f"pymetis: METIS failed ({exc}; pymetis hides which METIS error)"
        ) from exc
    owner = np.asarray(membership, dtype=np.int32)
    return PartitionResult(owner, {"passes": 1, "metis_edge_cut": int(edge_cut)})
