"""Stage 3 entry point: check a TrainSpec against the data, then train in the spec's mode."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import torch

from gnnbench.data.store import GraphStore
from gnnbench.errors import ConfigError, DataError
from gnnbench.partition.stage.book import PartitionBook
from gnnbench.process.torchrun import training_ranks, under_torchrun
from gnnbench.train import launch
from gnnbench.train.coordinator import trains_on_partitions
from gnnbench.train.models import build_model
from gnnbench.train.modes import TRAINING_MODES
from gnnbench.train.result import TrainResult
from gnnbench.train.sampler import warm_up
from gnnbench.train.spec import Job, TrainSpec


def _check_dataset(store: GraphStore) -> None:
    if not store.has_features:
        raise DataError(
            f"{store.path}: no node features to train on (set dataset.features=degree, onehot, random or embedding; or train=none)"
        )
    if store.num_classes < 1:
        raise DataError(f"{store.path}: no labels to train on (use train=none)")


def with_input_table(spec: TrainSpec, store: GraphStore) -> TrainSpec:
    """The spec, its model given a learnable input table of the graph's nodes where the store's
    features are node ids (dataset.features=embedding, gnnbench/data/input_features.py)."""
    if store.meta.get("input_features") != "embedding":
        return spec
    model = dataclasses.replace(spec.model, input_nodes=store.num_nodes)
    return dataclasses.replace(spec, model=model)


def _check_model(spec: TrainSpec, in_dim: int, out_dim: int) -> None:
    """Build the model on the meta device (no memory) so a bad model config fails here, once."""
    with torch.device("meta"):
        model = build_model(in_dim, out_dim, spec.model.as_config())
    if model.uses_graph and model.num_layers != len(spec.fanouts):
        raise ConfigError(
            f"train.fanouts: expected one fanout per layer (model.layers={model.num_layers}), "
            f"got {list(spec.fanouts)}"
        )


def _check_workers(num_gpus: int, p: int | None) -> None:
    from gnnbench.train.modes import check_workers

    check_workers(num_gpus, p)


def check_training_config(*, spec: TrainSpec, p: int | None) -> None:
    """Check the spec against the model and p (None: p=auto) without any data, so a sweep fails
    before partitioning."""
    _check_model(spec, 1, 1)
    TRAINING_MODES.get(spec.mode).check(spec, p)


def _distributed(job: Job) -> dict:
    """Run the ranks (model or gradient averaging); rank 0's summary."""
    p = PartitionBook(job.book_path).p
    num_gpus = training_ranks(job.spec.num_gpus)
    _check_workers(num_gpus, p)
    if under_torchrun():
        return launch.run_torchrun(job)
    launch.check_cuda_workers(job.spec, num_gpus)
    return launch.spawn_workers(job, num_gpus)


def run_training(*, store_path: Path, book_path: Path | None, spec: TrainSpec) -> TrainResult:
    """Train per `spec` on the store (centralized) or the book (partitioned modes).

    Partitioned modes spawn spec.num_gpus ranks (or join torchrun's); centralized trains the
    whole graph in this process. Scripts that call this must guard their entry point
    (`if __name__ == "__main__"`), since spawned workers re-import the main module.
    """
    store = GraphStore(Path(store_path))
    _check_dataset(store)
    spec = with_input_table(spec, store)
    _check_model(spec, store.feature_dim, store.num_classes)
    partitioned = trains_on_partitions(spec.mode)
    if partitioned and book_path is None:
        raise ConfigError(f"train.mode={spec.mode}: needs a partition book (book_path is None)")
    job = Job(
        spec=spec,
        store_path=Path(store_path),
        book_path=Path(book_path) if partitioned else None,
        num_features=store.feature_dim,
        num_classes=store.num_classes,
        multilabel=store.multilabel,
        ogb_name=store.meta.get("ogb_name"),
    )
    outside = TRAINING_MODES.get(spec.mode).train_outside(job)  # a baseline's own training
    if outside is not None:
        return TrainResult.from_summary(outside, mode=spec.mode)
    warm_up()  # compile the sampler here (once, cached): workers load it, epoch times exclude it
    summary = _distributed(job) if partitioned else launch.run_single(job)
    return TrainResult.from_summary(summary, mode=spec.mode)
