"""The centralized reference: one process trains the whole graph (the only "partition") with the
same model, sampler and hyperparameters; there is nothing to synchronise, so an epoch is a round
(sync_interval and num_gpus do not apply)."""

from __future__ import annotations

from gnnbench.train.modes import TRAINING_MODES
from gnnbench.train.modes.model_avg import ModelAverage
from gnnbench.train.record import EpochRecord
from gnnbench.train.spec import TrainSpec


@TRAINING_MODES.register("centralized")
class Centralized(ModelAverage):
    partitioned = False
    ignored_axes = ("partitioner", "p", "num_gpus", "sync_interval")  # no partitions, no averaging

    @staticmethod
    def round_length(spec: TrainSpec) -> int:
        return 1

    def train_round(self, start: int, length: int, record: EpochRecord) -> None:
        states, _ = self.train_parts(start, length, record)
        state = self.context.state
        state.global_state = states[0] if states else state.global_state
        state.model.load_state_dict(state.global_state)
        record.train_nodes_per_epoch[start : start + length] = self.context.total_train
