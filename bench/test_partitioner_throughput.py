"""Partition throughput of every streaming partitioner on a power-law graph of >= 5 M edges.

Each result carries `reference_passes`: its time over the time of one reference pass (numpy sorting
each chunk of edges.bin, bench.gates.reference_pass), the two timed alternately in this run,
in CPU seconds of this process (wall time on a shared 2-core machine measures the neighbours).
That ratio is the speed gate (GateRecorder.paired_speed): more than SPEED_MAX_FACTOR x the
committed ratio in bench/baselines/speed.json is timed A/B against the commit that wrote the
baseline, and fails if it is credibly that much slower there too. The refinement post-pass is
gated the same way, one pass per objective. The work timed is bench/ab_kernels.py's, the same
that the A/B times on the other side.
"""

from __future__ import annotations

import contextlib
import os

import pytest

from gnnbench.partition.base import REFINE_OBJECTIVES, streaming_partitioners

from .ab_kernels import REFINE_PREFIX, P, partitioner_kernel, refine_kernel
from .conftest import make_power_law_store, reference_pass_seconds

THROUGHPUT_EDGES = 5_000_000


@pytest.fixture(scope="module")
def large_store():
    store = make_power_law_store(THROUGHPUT_EDGES)
    assert store.num_edges >= THROUGHPUT_EDGES
    os.sync()  # a just-generated store's dirty pages would otherwise be written back mid-timing
    return store


@pytest.fixture(scope="module")
def reference_seconds(large_store) -> float:
    return reference_pass_seconds(large_store)


@pytest.mark.parametrize("name", streaming_partitioners())
def test_throughput(benchmark, name, large_store, reference_seconds, speed_gates):
    # gnnbench/conf/partitioner/<name>.yaml's keys; every call builds what it reads beyond the
    # store (the node-stream CSR), as in the stage
    partition = partitioner_kernel(large_store, name)
    result = benchmark.pedantic(partition, rounds=3, warmup_rounds=1)
    assert result.owner.shape == (large_store.num_nodes,)
    median = benchmark.stats.stats.median
    benchmark.extra_info.update(
        edges=large_store.num_edges,
        edges_per_s=large_store.num_edges / median,
        reference_pass_s=reference_seconds,
        reference_passes=median / reference_seconds,
    )
    benchmark.extra_info["paired_reference_passes"] = speed_gates.paired_speed(
        f"{name}/powerlaw-5M/p{P}/reference_passes", partition, THROUGHPUT_EDGES
    )


@pytest.mark.parametrize("objective", REFINE_OBJECTIVES)
def test_refinement_throughput(benchmark, objective, large_store, reference_seconds, speed_gates):
    """One refinement pass (partitioner.refine_passes=1) from hash's owners, per objective; the
    replication objective's extra stream fills its neighbour counts first."""
    # the kernel of one pass: the CSR is built by the warm-up call and kept until `cleanup`
    # closes (the stage times its build with the partitioner and refinement, as test_throughput
    # times ldg's)
    with contextlib.ExitStack() as cleanup:
        one_pass = refine_kernel(large_store, objective, cleanup)
        stats = benchmark.pedantic(one_pass, rounds=3, warmup_rounds=1)
        assert stats["refine_moves_1"] > 0
        benchmark.extra_info.update(
            edges=large_store.num_edges,
            reference_passes=benchmark.stats.stats.median / reference_seconds,
        )
        benchmark.extra_info["paired_reference_passes"] = speed_gates.paired_speed(
            f"{REFINE_PREFIX}{objective}/powerlaw-5M/p{P}/reference_passes",
            one_pass,
            THROUGHPUT_EDGES,
        )
