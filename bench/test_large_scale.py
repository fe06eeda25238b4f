"""SPRING and GREM on a generated graph of >= 100 M edges: time and memray heap peak (slow).

    pytest bench/test_large_scale.py -m slow -s

Not part of the CI run (it generates ~1 GB of edges and takes minutes). The graph is prepared once
under the bench cache root; the partitioners run in this process under memray after a warm-up on
a small graph, so JIT compilation is not measured.
"""

from __future__ import annotations

import time

import memray
import pytest

from gnnbench.partition.base import PARTITIONERS
from gnnbench.partition.spec import PartitionSpec

from .conftest import make_power_law_store, reference_pass_seconds

LARGE_EDGES = 100_000_000
P = 8


@pytest.mark.slow
@pytest.mark.parametrize("name", ["spring", "grem"])
def test_large_graph(name, tmp_path):
    store = make_power_law_store(LARGE_EDGES)
    assert store.num_edges >= LARGE_EDGES
    partition_fn = PARTITIONERS.get(name)
    params = PartitionSpec.defaults(name).kwargs()
    partition_fn(make_power_law_store(100_000), P, 0, **params)  # compile outside the measurement
    reference_seconds = reference_pass_seconds(store, rounds=3)
    tracker_file = tmp_path / f"{name}.memray"
    started = time.perf_counter()
    with memray.Tracker(tracker_file):
        result = partition_fn(store, P, 0, **params)
    seconds = time.perf_counter() - started
    peak_mb = memray.FileReader(tracker_file).metadata.peak_memory / 2**20
    assert result.owner.shape == (store.num_nodes,)
    print(
        f"\n{name}: {store.num_nodes} nodes, {store.num_edges} edges, p={P}: {seconds:.1f} s "
        f"({seconds / reference_seconds:.1f} reference passes of {reference_seconds:.2f} s), heap peak {peak_mb:.0f} MB, "
        f"stats {result.stats}"
    )
