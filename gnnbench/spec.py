"""JobSpec: one job's composed config, parsed once into frozen parts before any stage runs.

Every key is known: an unknown top-level, dataset, partitioner or tracking key is a one-line
ConfigError naming it and the valid keys. The keys, their types and defaults are declared in
gnnbench/schema.py; a group file's own keys in the group's files.
`python -m gnnbench` parses it once per job (gnnbench/__main__.py) and hands it, keyword-only, to
`gnnbench.run.run`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gnnbench.data.spec import DataSpec
from gnnbench.errors import ConfigError
from gnnbench.partition.num_parts import MemoryBudget
from gnnbench.partition.spec import PartitionSpec
from gnnbench.schema import JobKeys, keys
from gnnbench.spec_keys import check_keys, num_parts, plain, whole_axis
from gnnbench.tracking_spec import TrackingSpec
from gnnbench.train.modes import TRAINING_MODES
from gnnbench.train.spec import TrainSpec


@dataclass(frozen=True)
class JobSpec:
    """dataset x partitioner x p x num_gpus, plus train, seed, resume and tracking. `train` is
    None for train=none (the job partitions only); the axes and groups only training reads
    (sync_interval, model) are parsed and checked once, into the TrainSpec."""

    data: DataSpec
    partition: PartitionSpec
    train: TrainSpec | None
    p: int | str  # a number of partitions, or "auto" (chosen from the memory budget)
    memory_budget: MemoryBudget | None  # p=auto's (train.worker_mem_gb, ...); None for a fixed p
    num_gpus: int
    seed: int
    resume: bool
    tracking: TrackingSpec

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> JobSpec:
        """The composed job config (Hydra's, resolved) checked key by key."""
        config = plain(config)
        top_level = keys(JobKeys)  # the five sweep axes, the groups, resume, tracking
        check_keys("", config, top_level, "the job", required=top_level)
        return cls(
            data=DataSpec.from_config(_section(config, "dataset")),
            partition=PartitionSpec.from_config(_section(config, "partitioner")),
            train=_train(config),
            p=num_parts(config["p"], auto=True),
            memory_budget=_memory_budget(config),
            num_gpus=whole_axis("num_gpus", config["num_gpus"], 1, "worker"),
            seed=whole_axis("seed", config["seed"]),
            resume=_flag(config, "resume"),
            tracking=TrackingSpec.from_config(_section(config, "tracking")),
        )


def _train(config: Mapping[str, Any]) -> TrainSpec | None:
    """The TrainSpec (train and model groups with the axes training reads); None for train=none."""
    if _section(config, "train").get("mode") == "none":
        return None
    return TrainSpec.from_job_config(config, check_mode=TRAINING_MODES.get)


def _memory_budget(config: Mapping[str, Any]) -> MemoryBudget | None:
    """p=auto's memory budget from the train group (train=none's too: it has no TrainSpec)."""
    if config["p"] != "auto":
        return None
    return MemoryBudget.from_config(_section(config, "train"))


def _section(config: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = config[key]
    if not isinstance(value, Mapping):
        raise ConfigError(f"{key}: expected a config group, got {value!r}")
    return dict(value)


def _flag(config: Mapping[str, Any], key: str) -> bool:
    value = config[key]
    if not isinstance(value, bool):
        raise ConfigError(f"{key}: expected true or false, got {value!r}")
    return value
