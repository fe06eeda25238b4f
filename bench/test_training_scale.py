"""Training at 10 M edges with features (issue 27): throughput and the worker's resident peak.

Slow. A contextual SBM of 500 k nodes and 10 M edges with 128 float32 features (256 MB), SPRING
p=8, trained by one model_avg worker (8 partitions in turn, one resident at a time): GraphSAGE
2x64, fanouts 10 and 5, batches of 1024, one epoch and its evaluation. Two ratios are gated (more
than SPEED_MAX_FACTOR x the committed ratio in bench/baselines/speed.json fails):

- `reference_passes_per_train_node`: seconds per trained node over one reference pass over the
  same edges (bench.gates.reference_pass, a numpy sort of each chunk, sharing no code with training) (the inverse of training nodes per second, in the machine's own unit);
- `peak_over_largest_partition`: `train_peak_rss_mb` over the largest partition's files, the
  bound one resident partition gives (plus the interpreter's fixed allowance).

`extra_info` records training nodes per second, both peaks, load and evaluation time.

    pytest bench/test_training_scale.py -m slow -s
"""

from __future__ import annotations

import os

import pytest

from gnnbench.partition.spec import PartitionSpec
from gnnbench.partition.stage.runner import run_partition_stage
from gnnbench.process.atomic import disk_bytes
from gnnbench.train.runner import run_training
from gnnbench.train.spec import spec_from_conf

from .ab_kernels import power_law_config
from .conftest import reference_pass_seconds

EDGES = 10_000_000
NODES = 500_000
P = 8
TRAIN = {"mode": "model_avg", "epochs": 1, "fanouts": [10, 5], "batch_size": 1024}
MODEL = {"name": "sage", "layers": 2, "hidden": 64}


def feature_store():
    from gnnbench.data.datasets import prepare_dataset

    config = power_law_config(EDGES, NODES, feature_dim=128, name=f"features-{EDGES}")
    return prepare_dataset(config)


@pytest.mark.slow
def test_training_throughput_and_peak_at_10m_edges(benchmark, speed_gates):
    store = feature_store()
    assert store.num_edges >= 0.95 * EDGES
    book, _ = run_partition_stage(store, partitioner=PartitionSpec.defaults("spring"), p=P, seed=0)
    os.sync()  # the book's dirty pages would otherwise be written back mid-timing
    spec = spec_from_conf(TRAIN, MODEL, num_gpus=1, seed=0)
    result = benchmark.pedantic(
        run_training,
        kwargs={"store_path": store.path, "book_path": book.path, "spec": spec},
        rounds=1,
        iterations=1,
    )
    reference_seconds = reference_pass_seconds(store)
    largest_mb = max(disk_bytes(book.path / f"part-{i}") for i in range(P)) / 2**20
    # the batches' compute and preparation, without partition loads and syncs: what model_avg's
    # epoch_time_s covered when speed.json's ratio was recorded (before the wall-clock epoch)
    nodes_per_s = result.train_nodes_per_epoch / (result.compute_time_s + result.batch_wait_s)
    figures = {
        "reference_passes_per_train_node": 1 / nodes_per_s / reference_seconds,
        "peak_over_largest_partition": result.train_peak_rss_mb / largest_mb,
    }
    benchmark.extra_info.update(
        edges=store.num_edges,
        train_nodes_per_s=nodes_per_s,
        train_peak_rss_mb=result.train_peak_rss_mb,
        eval_peak_rss_mb=result.eval_peak_rss_mb,
        load_time_s=result.load_time_s,
        eval_time_s=result.eval_time_s,
        largest_partition_mb=largest_mb,
        reference_pass_s=reference_seconds,
        **figures,
    )
    print(
        f"\n{nodes_per_s:.0f} training nodes/s, train peak {result.train_peak_rss_mb:.0f} MB "
        f"(largest partition {largest_mb:.0f} MB), eval peak {result.eval_peak_rss_mb:.0f} MB, "
        f"load {result.load_time_s:.1f} s/epoch, eval {result.eval_time_s:.1f} s"
    )
    speed_gates.check(
        {f"train/features-10M/p{P}/{name}": value for name, value in figures.items()}, "speed"
    )
