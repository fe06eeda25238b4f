"""What taking turns costs: more partitions than workers must buy memory, not time (issue 46).

With p > num_gpus each model_avg worker trains its partitions in turn, one resident at a time,
and evaluates them in turn. The default synthetic graph (20 k nodes, 64 features), GREM at p = 4
and p = 16, 2 gloo workers, GraphSAGE 2x256, 5 epochs with an evaluation after each: the
training call's wall time at p = 16 over that at p = 4 (one run, back to back) is gated at
TURNS_MAX_RATIO, the issue's target. Before the setup was frozen out of the collector
(gnnbench/process/heap.py), each dropped partition cost a full collection and the ratio was ~4.
"""

from __future__ import annotations

import time

from gnnbench.data.datasets import prepare_dataset
from gnnbench.partition.spec import PartitionSpec
from gnnbench.partition.stage.runner import run_partition_stage
from gnnbench.train.runner import run_training
from gnnbench.train.spec import spec_from_conf

from .conftest import dataset_config

TURNS_MAX_RATIO = 1.5
TRAIN = {"mode": "model_avg", "epochs": 5, "eval_every": 1}
FEW, MANY = 4, 16


def test_many_partitions_cost_no_more_time_than_few(benchmark):
    store = prepare_dataset(dataset_config("synthetic"))
    books = {
        p: run_partition_stage(store, partitioner=PartitionSpec.defaults("grem"), p=p, seed=0)[0]
        for p in (FEW, MANY)
    }
    spec = spec_from_conf(TRAIN, num_gpus=2, seed=0)

    def train(p: int):
        started = time.perf_counter()
        result = run_training(store_path=store.path, book_path=books[p].path, spec=spec)
        return time.perf_counter() - started, result

    few_s, few = benchmark.pedantic(train, args=(FEW,), rounds=1, iterations=1)
    many_s, many = train(MANY)
    ratio = many_s / few_s
    benchmark.extra_info.update(
        few_wall_s=few_s, many_wall_s=many_s, many_over_few=ratio,
        **{f"{name}_{key}": getattr(result, key) for name, result in (("few", few), ("many", many))
           for key in ("epoch_time_s", "compute_time_s", "eval_time_s", "load_time_s",
                       "sync_wait_s")},
    )  # fmt: skip
    print(
        f"\ntraining wall p={MANY} {many_s:.1f} s / p={FEW} {few_s:.1f} s = {ratio:.2f} "
        f"(epoch {many.epoch_time_s:.2f} / {few.epoch_time_s:.2f} s, eval "
        f"{many.eval_time_s:.2f} / {few.eval_time_s:.2f} s)"
    )
    assert ratio <= TURNS_MAX_RATIO, (
        f"p={MANY} trains in {many_s:.1f} s, {ratio:.2f}x p={FEW}'s {few_s:.1f} s "
        f"(target <= {TURNS_MAX_RATIO}x): taking turns costs more than its compute"
    )
