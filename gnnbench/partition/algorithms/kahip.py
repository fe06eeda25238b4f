"""KaHIP's KaFFPa (Sanders and Schulz; `kahip` on PyPI) on the whole graph in memory.

The multilevel partitioner of the Karlsruhe group, in its six modes: fast, eco and strong, and
their `social` variants (size-constrained label propagation for coarsening, meant for social and
web graphs). The measured step builds the in-memory CSR from the GraphStore with the helper METIS
uses, at 32-bit width, the only one the bindings take (their C interface is `int`): graphs with
2|E| >= 2^31 are beyond KaHIP here. The bindings copy the CSR into vectors of their own and
return the partition as a Python list; both are inside the measurement. Unit node and edge
weights are passed as lazy iterators, not arrays. KaFFPa is deterministic for a seed, and gets
the run's seed.
"""

from __future__ import annotations

import itertools

import numpy as np

from gnnbench.data.store import GraphStore
from gnnbench.errors import ConfigError
from gnnbench.partition.base import PartitionResult, check_choice, register_partitioner
from gnnbench.partition.baselines.in_memory import (
    check_imbalance,
    imbalance_bound,
    require_package,
)

# Bump when this module's output changes: part of every partition book's cache key.
VERSION = "1"

MODES = ("fast", "eco", "strong", "fastsocial", "ecosocial", "strongsocial")
_INT_MAX = 2**31 - 1


@register_partitioner(
    "kahip",
    in_memory_baseline=True,
    vertex_balance_bound=lambda p, n, imbalance, **_: imbalance_bound(p, n, imbalance),
)
def kahip(store: GraphStore, p: int, seed: int, *, mode: str, imbalance: float) -> PartitionResult:
    """Owner per node from `kahip.kaffpa(..., p, imbalance, seed, mode)`."""
    mode = check_choice("mode", mode, MODES)
    imbalance = check_imbalance("kahip", imbalance)
    package = require_package("kahip", "kahip")
    if p == 1:
        return PartitionResult(np.zeros(store.num_nodes, dtype=np.int32), {"passes": 1})
    if 2 * store.num_edges > _INT_MAX:
        raise ConfigError(
            f"partitioner=kahip: {store.name} has 2|E| = {2 * store.num_edges} adjacency entries, "
            "more than KaHIP's 32-bit interface holds"
        )
    indptr, indices = store.csr(np.int32)
    ones = itertools.repeat  # unit weights without an array each
    edge_cut, blocks = package.kaffpa(
        ones(1, store.num_nodes),
        memoryview(indptr),
        ones(1, len(indices)),
        memoryview(indices),
        p,
        imbalance,
        True,  # suppress KaHIP's output
        int(seed),
        getattr(package, mode.upper()),
    )
    del indptr, indices
    owner = np.fromiter(blocks, dtype=np.int32, count=store.num_nodes)
    return PartitionResult(owner, {"passes": 1, "kahip_edge_cut": int(edge_cut)})
