"""The centralized reference: one process trains the whole graph (the only "partition") with the
same model, sampler and hyperparameters; there is nothing to synchronise, so an epoch is a round
(sync_interval and num_gpus do not apply)."""

from __future__ import annotations

import numpy as np

from gnnbench.train.modes import TRAINING_MODES
from gnnbench.train.modes.model_avg import ModelAverage
from gnnbench.train.spec import TrainSpec


@TRAINING_MODES.register("centralized")
class Centralized(ModelAverage):
    partitioned = False
    ignored_axes = ("partitioner", "p", "num_gpus", "sync_interval")  # no partitions, no averaging

    @staticmethod
    def round_length(spec: TrainSpec) -> int:
        return 1

    def train_round(self, start: int, length: int, record: dict[str, np.ndarray]) -> None:
        states, _ = self.train_parts(start, length, record)
        worker = self.worker
        worker.global_state = states[0] if states else worker.global_state
        worker.model.load_state_dict(worker.global_state)
        record["trained"][start : start + length] = worker.total_train
