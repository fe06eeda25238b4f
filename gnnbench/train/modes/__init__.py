"""Training modes, registered by name like models: one module per mode (model_avg, grad_avg,
centralized, none), each a `TrainingMode` class that trains one round of epochs through the
TrainingContext its Worker hands it (gnnbench/train/context.py).

A mode registered from elsewhere (a plugin, a test) is found by `train.mode` the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from gnnbench.registry import Registry

if TYPE_CHECKING:
    from gnnbench.train.context import TrainingContext
    from gnnbench.train.record import EpochRecord
    from gnnbench.train.spec import Job, TrainSpec


class TrainingMode:
    """How the ranks train and synchronise: `train_round` trains `length` epochs from `start`,
    every rank calling it in step. It reads its context, changes only `context.state` (the
    model's weights, the optimizers, the global model) and fills this rank's EpochRecord."""

    partitioned: ClassVar[bool] = True  # trains a PartitionBook, one rank per worker
    shares_optimizer: ClassVar[bool] = False  # one Adam state for every partition of a rank
    # Config keys that cannot change what this mode computes, top-level (`p`) or one level down
    # (`partitioner.feature_rows`): left out of its jobs' run keys (gnnbench.identity; num_gpus
    # and train count again while p=auto reads them)
    ignored_axes: ClassVar[tuple[str, ...]] = ()

    def __init__(self, context: TrainingContext):
        self.context = context

    @classmethod
    def check(cls, spec: TrainSpec, p: int | None) -> None:
        """Refuse, in one line, a config this mode cannot train (before any data is prepared;
        p is None while p=auto has not chosen): one worker per partition at most."""
        if cls.partitioned:
            check_workers(spec.num_gpus, p)

    @classmethod
    def train_outside(cls, job: Job) -> dict | None:
        """A baseline system that trains in its own processes (train=distdgl) returns the run's
        summary (TrainResult's fields) here; gnnbench's own modes return None and are trained
        by gnnbench's workers, one `train_round` at a time."""
        return None

    @staticmethod
    def round_length(spec: TrainSpec) -> int:
        """Epochs between synchronisations (evaluation follows a round)."""
        return 1

    def train_round(self, start: int, length: int, record: EpochRecord) -> None:
        raise NotImplementedError


def check_workers(num_gpus: int, p: int | None) -> None:
    """gnnbench's workers each train whole partitions: never more workers than partitions."""
    from gnnbench.errors import ConfigError

    if p is not None and num_gpus > p:
        raise ConfigError(f"num_gpus={num_gpus} is larger than p={p}")


TRAINING_MODES: Registry[type[TrainingMode]] = Registry(
    "training mode", "gnnbench.train.modes", "train.mode", by_module=True
)
