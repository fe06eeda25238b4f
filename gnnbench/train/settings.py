"""The train and model config groups, validated once in the parent before any worker starts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gnnbench.errors import ConfigError
from gnnbench.train.batching import BATCHINGS, STRATEGIES

MODES = ("model_avg", "grad_avg", "centralized")
PARTITIONED_MODES = ("model_avg", "grad_avg")  # train on a PartitionBook, one rank per worker
DEFAULTS: dict[str, Any] = {
    "epochs": 20,
    "batch_size": 512,
    "fanouts": [25, 10],
    "lr": 0.01,
    "weight_decay": 0.0,
    "eval_every": 1,
    "eval_batch_size": 2048,
    "backend": "auto",
    "device": "auto",
    "timeout_s": 300,
    "strategy": "minibatch",
    "batching": "random",
    "batches_per_epoch": 0,
    "num_clusters": 16,
    "clusters_per_batch": 2,
    "sampler_workers": 0,
}


def _whole(train: Mapping[str, Any], key: str, minimum: int) -> int:
    value = train.get(key, DEFAULTS[key])
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"train.{key}: expected a whole number >= {minimum}, got {value!r}")
    return value


def _number(train: Mapping[str, Any], key: str, positive: bool) -> float:
    value = train.get(key, DEFAULTS[key])
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or value < 0
        or (positive and value == 0)
    ):
        raise ConfigError(
            f"train.{key}: expected a number {'> 0' if positive else '>= 0'}, got {value!r}"
        )
    return float(value)


def _choice(train: Mapping[str, Any], key: str, choices: tuple[str, ...]) -> str:
    value = str(train.get(key, DEFAULTS.get(key)))
    if value not in choices:
        raise ConfigError(f"train.{key}: expected one of {', '.join(choices)}, got {value!r}")
    return value


def _fanouts(train: Mapping[str, Any]) -> tuple[int, ...]:
    value = train.get("fanouts", DEFAULTS["fanouts"])
    if (
        isinstance(value, str)
        or not isinstance(value, Sequence)
        or not value
        or not all(
            isinstance(f, int) and not isinstance(f, bool) and (f >= 1 or f == -1) for f in value
        )
    ):
        raise ConfigError(
            f"train.fanouts: expected a list of neighbour counts >= 1 (or -1 = all), got {value!r}"
        )
    return tuple(value)


@dataclass(frozen=True)
class TrainSettings:
    """Everything a worker needs to know about the run, picklable for spawned processes."""

    mode: str
    epochs: int
    batch_size: int
    fanouts: tuple[int, ...]
    lr: float
    weight_decay: float
    eval_every: int
    eval_batch_size: int
    backend: str
    device: str
    timeout_s: float
    strategy: str
    batching: str
    batches_per_epoch: int  # 0: batch_size decides; else each partition's batches per epoch
    num_clusters: int  # cluster strategy: clusters per partition
    clusters_per_batch: int
    sampler_workers: int  # Armada: CPU processes preparing each trainer's batches (0: itself)
    sync_interval: int
    seed: int
    model: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_config(
        cls, train: Mapping[str, Any], model: Mapping[str, Any], sync_interval: int, seed: int
    ) -> TrainSettings:
        settings = cls(
            mode=_choice(train, "mode", MODES),
            epochs=_whole(train, "epochs", 1),
            batch_size=_whole(train, "batch_size", 1),
            fanouts=_fanouts(train),
            lr=_number(train, "lr", positive=True),
            weight_decay=_number(train, "weight_decay", positive=False),
            eval_every=_whole(train, "eval_every", 1),
            eval_batch_size=_whole(train, "eval_batch_size", 1),
            backend=_choice(train, "backend", ("auto", "gloo", "nccl")),
            device=_choice(train, "device", ("auto", "cpu", "cuda")),
            timeout_s=_number(train, "timeout_s", positive=True),
            strategy=_choice(train, "strategy", STRATEGIES),
            batching=_choice(train, "batching", BATCHINGS),
            batches_per_epoch=_whole(train, "batches_per_epoch", 0),
            num_clusters=_whole(train, "num_clusters", 1),
            clusters_per_batch=_whole(train, "clusters_per_batch", 1),
            sampler_workers=_whole(train, "sampler_workers", 0),
            sync_interval=int(sync_interval),
            seed=int(seed),
            model=dict(model),
        )
        if sync_interval < 1:
            raise ConfigError(f"sync_interval: expected >= 1 epoch, got {sync_interval}")
        return settings


@dataclass(frozen=True)
class Job:
    """One training job: settings plus where the data lies and what it holds."""

    settings: TrainSettings
    store_path: Path
    book_path: Path | None
    num_features: int
    num_classes: int
    multilabel: bool
    ogb_name: str | None = None  # an ogbn dataset: its official metric is logged too
