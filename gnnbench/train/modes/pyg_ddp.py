"""`train=pyg_ddp`: PyG's multi-GPU recipe as a baseline (gnnbench/train/baselines/pyg.py): the
whole graph, each of num_gpus ranks a NeighborLoader over its share of the training nodes, DDP.
Nothing is partitioned: p, the partitioner and sync_interval do not apply."""

from __future__ import annotations

import time

from gnnbench.train.baselines import BaselineMode
from gnnbench.train.modes import TRAINING_MODES
from gnnbench.train.spec import Job, TrainSpec

NAME = "pyg_ddp"


@TRAINING_MODES.register(NAME)
class PygDdp(BaselineMode):
    partitioned = False
    ignored_axes = ("partitioner", "p", "sync_interval")

    RECIPE = {"model.name": "sage", "train.strategy": "minibatch", "train.batching": "random",
              "train.sampler_workers": 0, "train.batches_per_epoch": 0}  # fmt: skip

    @classmethod
    def check(cls, spec: TrainSpec, p: int | None) -> None:
        from gnnbench.train.baselines.pyg import require_sampler

        super().check(spec, p)
        require_sampler(f"train={NAME}")

    @classmethod
    def train_outside(cls, job: Job) -> dict:
        from gnnbench.train import launch
        from gnnbench.train.baselines.pyg import ddp_rank, load_data

        job = cls.on_cpu(job)
        started = time.perf_counter()
        data = load_data(job.store_path)
        prepared = time.perf_counter() - started
        result = launch.spawn_workers(job, job.spec.num_gpus, ddp_rank, data)
        return {**result, "prepare_time_s": prepared}
