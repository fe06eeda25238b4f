"""Stage 3 entry point: validate the config, then train by model averaging or centrally."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import torch

from gnnbench.data.store import GraphStore
from gnnbench.errors import ConfigError, DataError
from gnnbench.partition.book import PartitionBook
from gnnbench.torchrun import under_torchrun
from gnnbench.train import launch
from gnnbench.train.models import build_model
from gnnbench.train.sampler import warm_up
from gnnbench.train.settings import PARTITIONED_MODES, Job, TrainSettings

RESULT_KEYS = (
    "epoch_time_s", "sync_time_s", "val_f1_micro", "test_f1_micro", "test_f1_macro",
    "num_epochs", "num_workers", "world_size", "device", "mode", "best_epoch", "history",
    "sync_count", "sync_wait_s", "train_nodes_per_epoch", "computation_cost", "batch_wait_s", "gpu_peak_mb",
)  # fmt: skip


def _check_dataset(store: GraphStore) -> None:
    if not store.has_features:
        raise DataError(f"{store.path}: no node features to train on (use train=none)")
    if store.num_classes < 1:
        raise DataError(f"{store.path}: no labels to train on (use train=none)")


def _check_model(settings: TrainSettings, in_dim: int, out_dim: int) -> None:
    """Build the model on the meta device (no memory) so a bad model config fails here, once."""
    with torch.device("meta"):
        model = build_model(in_dim, out_dim, settings.model)
    if model.uses_graph and model.num_layers != len(settings.fanouts):
        raise ConfigError(
            f"train.fanouts: expected one fanout per layer (model.layers={model.num_layers}), "
            f"got {list(settings.fanouts)}"
        )


def _check_workers(num_workers: int, p: int | None) -> None:
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
        raise ConfigError(f"num_gpus: expected a whole number >= 1, got {num_workers!r}")
    if p is not None and num_workers > p:
        raise ConfigError(f"num_gpus={num_workers} is larger than p={p}")


def check_training_config(
    train: Mapping, model: Mapping, num_workers: int, p: int, sync_interval: int, seed: int
) -> None:
    """Validate the train and model groups without any data, so a sweep fails before partitioning."""
    settings = TrainSettings.from_config(train, model, sync_interval, seed)
    _check_model(settings, 1, 1)
    _check_workers(num_workers, p if settings.mode in PARTITIONED_MODES else None)


def _distributed(job: Job, num_workers: int) -> tuple[dict, int]:
    """Run the ranks (model or gradient averaging); returns the summary and how many trained."""
    p = PartitionBook(job.book_path).p
    world_size = int(os.environ["WORLD_SIZE"]) if under_torchrun() else num_workers
    _check_workers(world_size, p)
    if under_torchrun():
        return launch.run_torchrun(job), world_size
    launch.check_cuda_workers(job.settings, world_size)
    return launch.spawn_workers(job, world_size), world_size


def run_training(
    store_path: Path,
    book_path: Path | None,
    train: Mapping,
    model: Mapping,
    num_workers: int,
    sync_interval: int,
    seed: int,
) -> dict:
    """Train per the `train` and `model` config groups; returns F1, times and per-epoch history.

    model_avg and grad_avg spawn num_workers ranks (or join torchrun's); centralized trains the whole graph in
    this process. Scripts that call this must guard their entry point (`if __name__ == "__main__"`),
    since spawned workers re-import the main module.
    """
    settings = TrainSettings.from_config(train, model, sync_interval, seed)
    store = GraphStore(Path(store_path))
    _check_dataset(store)
    _check_model(settings, store.feature_dim, store.num_classes)
    _check_workers(num_workers, None)
    if settings.mode in PARTITIONED_MODES and book_path is None:
        raise ConfigError(f"train.mode={settings.mode}: needs a partition book (book_path is None)")
    job = Job(
        settings=settings,
        store_path=Path(store_path),
        book_path=Path(book_path) if settings.mode in PARTITIONED_MODES else None,
        num_features=store.feature_dim,
        num_classes=store.num_classes,
        multilabel=store.multilabel,
        ogb_name=store.meta.get("ogb_name"),
    )
    warm_up()  # compile the sampler here (once, cached): workers load it, epoch times exclude it
    if settings.mode == "centralized":
        result, workers = launch.run_single(job), 1
    else:
        result, workers = _distributed(job, num_workers)
    result.update(num_workers=workers, mode=settings.mode)
    ogb = {key: value for key, value in result.items() if "_ogb_" in key}  # OGB's own metric
    return {**{key: result[key] for key in RESULT_KEYS}, **ogb}
