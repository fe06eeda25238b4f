"""train=none, partition only: the data and partition stages run, nothing trains. The job has no
TrainSpec (gnnbench.spec), so this mode is never instantiated; it is registered so that, like every
mode, it declares the axes its jobs ignore."""

from __future__ import annotations

from gnnbench.train.modes import TRAINING_MODES, TrainingMode


@TRAINING_MODES.register("none")
class PartitionOnly(TrainingMode):
    partitioned = False  # trains no book (train.coordinator.trains_on_partitions)
    # its books are structure-only: no feature rows to copy into the partitions or share
    ignored_axes = ("model", "sync_interval", "num_gpus", "train", "partitioner.feature_rows")
