"""What a training run returns: F1 at the best validation point, times, and per-epoch history.

The field names are the MLflow metric names (dashboards and scripts read them); `as_dict()` is
the flat record the tracker logs and training.json holds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TrainResult:
    """One training run's figures: rank 0's summary and the training mode."""

    epoch_time_s: float  # the slowest rank's wall clock per epoch (loads, waits, syncs in)
    compute_time_s: float  # the slowest rank's compute per epoch
    sync_time_s: float  # all-reduces alone, the slowest rank's total
    sync_wait_s: float  # waiting for the slowest rank before a sync, the longest total
    sync_count: float  # all-reduces of the model or gradients per epoch
    train_nodes_per_epoch: float
    computation_cost: float  # (node, layer) pairs per epoch, all ranks
    batch_wait_s: float  # per epoch, the slowest-waiting rank's
    gpu_peak_mb: float | None  # None on the CPU
    train_peak_rss_mb: float  # largest resident peak of a training rank or sampler process
    train_rss_sum_mb: float  # every training process's peak (a baseline's servers too), summed
    eval_peak_rss_mb: float  # largest rank's resident peak while evaluating
    load_time_s: float  # per epoch, the slowest rank's loading of partitions to train
    # the same without each rank's first load (before its first batch): what its turns repeat,
    # and all that prefetching can hide
    turn_load_time_s: float | None
    eval_time_s: float  # per evaluation, the slowest rank's (its loads included)
    val_f1_micro: float
    test_f1_micro: float
    test_f1_macro: float
    best_epoch: int
    num_epochs: int
    # the ranks that trained: num_gpus, or torchrun's WORLD_SIZE where it launched them (named
    # apart from the num_gpus parameter, which a metric of the same name would shadow where
    # runs are read as one row of params and metrics)
    training_ranks: int
    device: str
    mode: str
    history: list[
        dict[str, Any]
    ]  # per epoch: epoch, train_loss, val_f1_micro (None: not evaluated)
    ogb: dict[
        str, float
    ]  # an ogbn dataset's own metric: {"val_ogb_<metric>": ..., "test_...": ...}
    prepare_time_s: float | None = (
        None  # a baseline's own preparation of the book (DistDGL's format)
    )
    bytes_read_mb: float | None = None  # storage reads per epoch, every rank and sampler
    eval_bytes_read_mb: float | None = None  # storage reads per evaluation, every rank
    largest_batch_nodes: float | None = None  # seeds of an epoch's largest batch (a baseline: None)
    computation_cost_s: float | None = None  # C(B) per epoch under CM-GCN's measured cost model
    # the cost model's constants: {"cost_model_forward_node_us_l1": ..., ...}
    cost_model: dict[str, float] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_summary(cls, summary: Mapping[str, Any], *, mode: str) -> TrainResult:
        """From a rank's summary dict (it crosses the process boundary as JSON)."""
        fields = [
            f for f in dataclasses.fields(cls)
            if f.name not in ("ogb", "cost_model", "mode")
        ]  # fmt: skip
        ogb = {key: value for key, value in summary.items() if "_ogb_" in key}
        cost_model = {key: v for key, v in summary.items() if key.startswith("cost_model_")}
        return cls(
            **{
                f.name: summary[f.name]
                for f in fields
                if f.name in summary or f.default is dataclasses.MISSING
            },  # fmt: skip
            mode=mode,
            ogb=ogb,
            cost_model=cost_model,
        )

    def as_dict(self) -> dict[str, Any]:
        """The flat record: every field, the OGB metric's and the cost model's keys in place of
        `ogb` and `cost_model`."""
        record = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                  if f.name not in ("ogb", "cost_model")}  # fmt: skip
        return {**record, **self.ogb, **self.cost_model}
