"""Other systems' own training, run beside gnnbench's as baselines (train=distdgl, pyg_ddp,
pyg_cluster).

distdgl_train.py runs in the DistDGL environment, not gnnbench's (DGL 2.1.0 needs torch <=
2.2.1): it imports only the standard library, numpy, torch and dgl and is never imported by
gnnbench. pyg.py runs PyG's recipes in gnnbench's own environment. gnnbench's side of each
baseline is its training mode (gnnbench/train/modes/<name>.py); `summary` turns what a baseline's
trainers measured into the run's figures under gnnbench's one meter (docs/design.md, "Metrics").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from gnnbench.train.modes import TrainingMode

if TYPE_CHECKING:
    from gnnbench.train.spec import Job, TrainSpec


def summary(
    per_epoch: Mapping[str, Sequence[Sequence[float]]],
    losses: Sequence[float],
    evaluations: Mapping[int, Mapping[str, Sequence[float]]],
    peaks_mb: Sequence[float],
    eval_times: Sequence[Sequence[float]],
    **figures: Any,
) -> dict[str, Any]:
    """The run's figures (TrainResult's fields) from every trainer's per-epoch times
    (`per_epoch[name][trainer][epoch]`: epoch_time_s, compute_time_s, batch_wait_s), the global
    mean loss per epoch, the evaluations by epoch ({"val": [micro, macro], "test": [...]}), every
    training process's resident peak and each trainer's seconds per evaluation. Times are the
    slowest trainer's, per epoch, then averaged; test F1 is taken at the first best validation
    epoch; `figures` are the baseline's own (sync_count, train_nodes_per_epoch, ...)."""
    best = max(evaluations, key=lambda epoch: (evaluations[epoch]["val"][0], -epoch))
    history = [{"epoch": epoch, "train_loss": float(loss),
                "val_f1_micro": evaluations[epoch]["val"][0] if epoch in evaluations else None}
               for epoch, loss in enumerate(losses, start=1)]  # fmt: skip
    slowest = {name: float(np.max(values, axis=0).mean()) for name, values in per_epoch.items()}
    return {
        **slowest, "sync_time_s": None, "sync_wait_s": None, "computation_cost": None,
        "gpu_peak_mb": None, "eval_peak_rss_mb": None, "load_time_s": None,
        "turn_load_time_s": None,
        "train_peak_rss_mb": max(peaks_mb), "train_rss_sum_mb": float(sum(peaks_mb)),
        "eval_time_s": float(np.max(eval_times, axis=0).mean()),
        "val_f1_micro": evaluations[best]["val"][0], "test_f1_micro": evaluations[best]["test"][0],
        "test_f1_macro": evaluations[best]["test"][1], "best_epoch": best,
        "num_epochs": len(losses), "history": history, **figures,
    }  # fmt: skip


class BaselineMode(TrainingMode):
    """A training mode that is another system's own training (`train_outside`): one host, not
    under torchrun, on the CPU, single-label data, and the configuration its recipe fixes."""

    RECIPE: ClassVar[dict[str, Any]] = {}  # {"model.name": "sage", "train.strategy": ...}

    @classmethod
    def check(cls, spec: TrainSpec, p: int | None) -> None:
        from gnnbench.errors import ConfigError
        from gnnbench.process.torchrun import under_torchrun

        mode = spec.mode
        for key, required in cls.RECIPE.items():
            section, name = key.split(".", 1)
            value = getattr(spec.model if section == "model" else spec, name)
            if value != required:
                raise ConfigError(
                    f"train={mode}: {key} must be {required} (its recipe), got {value!r}"
                )
        if spec.device == "cuda":
            raise ConfigError(f"train={mode}: runs on the CPU here (train.device=cuda given)")
        if under_torchrun():
            raise ConfigError(f"train={mode}: runs on one host; start it without torchrun")

    @classmethod
    def on_cpu(cls, job: Job) -> Job:
        """The job as the baseline trains it: on the CPU over gloo (refusing multi-label data)."""
        import dataclasses

        from gnnbench.errors import ConfigError

        if job.multilabel:
            raise ConfigError(f"train={job.spec.mode}: multi-label datasets are not supported")
        spec = dataclasses.replace(job.spec, device="cpu", backend="gloo")
        return dataclasses.replace(job, spec=spec)
