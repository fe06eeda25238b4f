"""The GNN-ready step, against the reference pass on the same graph.

Gate (not slow, 2 M edges): build_partitions (structure-only book, p=8) over contiguous blocks of
node ids (bench/ab_kernels.py's gnn_ready kernel: the same owners whatever the partitioners do,
so the A/B against an older commit times the same step) and the reference pass (numpy,
bench.gates.reference_pass) timed alternately in CPU seconds of this process (paired_ratio); over
SPEED_MAX_FACTOR x the committed ratio in bench/baselines/speed.json, the step is timed A/B
against the commit that wrote the baseline (GateRecorder.paired_speed).

Slow (20 M edges): the real partition stage (a fresh process under memray), structure-only and
full book; `extra_info` records whole stage / partition time and GNN-ready / partition time.

    pytest bench/test_gnn_ready.py -m slow -s
"""

from __future__ import annotations

import os
import shutil
import time

import pytest

from gnnbench.partition.spec import PartitionSpec
from gnnbench.partition.stage.book_identity import book_path
from gnnbench.partition.stage.runner import run_partition_stage

from .ab_kernels import P, gnn_ready_kernel
from .conftest import make_power_law_store

GATE_EDGES = 2_000_000
SLOW_EDGES = 20_000_000


def test_gnn_ready_speed(benchmark, speed_gates):
    store = make_power_law_store(GATE_EDGES)
    os.sync()  # a just-generated store's dirty pages would otherwise be written back mid-timing
    build = gnn_ready_kernel(store)
    build()  # compile the GNN-ready kernels outside the timing
    benchmark.pedantic(build, rounds=3, warmup_rounds=0)
    benchmark.extra_info.update(
        edges=store.num_edges,
        reference_passes=speed_gates.paired_speed(
            f"gnn_ready/powerlaw-2M/p{P}/reference_passes", build, GATE_EDGES
        ),
    )


@pytest.mark.slow
@pytest.mark.parametrize("node_data", [False, True], ids=["structure", "full"])
def test_stage_at_20m(benchmark, node_data):
    store = make_power_law_store(SLOW_EDGES)
    os.sync()
    config = PartitionSpec.defaults("spring")
    stage_seconds = []

    def fresh_stage():
        """The whole partition stage as a run sees it, never served from the book cache."""
        for full in (True, False):
            path = book_path(store.name, store.fingerprint, config, P, 0, full)
            shutil.rmtree(path, ignore_errors=True)
        started = time.perf_counter()
        book, cached = run_partition_stage(
            store, partitioner=config, p=P, seed=0, node_data=node_data
        )
        stage_seconds.append(time.perf_counter() - started)
        assert not cached
        return book

    shutil.rmtree(fresh_stage().path)  # page cache and JIT cache warm, as in a sweep
    book = benchmark.pedantic(fresh_stage, rounds=1, warmup_rounds=0)
    metrics = book.meta["metrics"]
    shutil.rmtree(book.path)
    benchmark.extra_info.update(
        edges=store.num_edges,
        partition_time_s=metrics["partition_time_s"],
        gnn_ready_time_s=metrics["gnn_ready_time_s"],
        gnn_ready_peak_mb=metrics["gnn_ready_peak_mb"],
        stage_wall_s=stage_seconds[-1],
        whole_run_over_partition=stage_seconds[-1] / metrics["partition_time_s"],
        gnn_ready_over_partition=metrics["gnn_ready_time_s"] / metrics["partition_time_s"],
    )
    print(f"\n{'full' if node_data else 'structure'} book: {benchmark.extra_info}")
