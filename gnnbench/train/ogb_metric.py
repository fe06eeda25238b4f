"""OGB's own metric for ogbn-* datasets, through `ogb.nodeproppred.Evaluator`, next to the F1s.

OGB fixes one metric per dataset in its metadata (master.csv): accuracy for ogbn-arxiv, -products
and -papers100M, ROC-AUC over 112 tasks for ogbn-proteins. ROC-AUC does not decompose into counts
that ranks could add up, so every rank's (target, prediction) rows of a split are gathered first;
for accuracy the prediction is the argmax class, for ROC-AUC the per-task scores.
"""

from __future__ import annotations

import logging
import sys

import numpy as np
import torch

log = logging.getLogger(__name__)


class OgbMetric:
    """The official metric of one ogbn dataset (`name` as in OGB, e.g. ogbn-arxiv)."""

    def __init__(self, name: str):
        # ogb's import starts a (non-daemon) thread asking PyPI whether a newer ogb exists, through
        # the `outdated` package; a run must not reach for the network, nor wait on it at exit.
        sys.modules.setdefault("outdated", None)  # its import then fails and ogb skips the check
        from ogb.nodeproppred import Evaluator

        self.evaluator = Evaluator(name)
        self.name = name
        self.metric = str(self.evaluator.eval_metric)  # "acc" or "rocauc"

    @classmethod
    def for_dataset(cls, name: str | None) -> OgbMetric | None:
        """The metric of an OGB dataset name; None for other datasets or names OGB does not list."""
        if not name:
            return None
        try:
            return cls(name)
        except ValueError:  # a layout-compatible dataset OGB does not know (its own print aside)
            log.info("%s is not in ogb's dataset list: no OGB metric", name)
            return None
        except ImportError:
            log.warning("the ogb package is not installed: no OGB metric for %s", name)
            return None

    def rows(self, logits: torch.Tensor) -> np.ndarray:
        """Per node, what the evaluator compares with the truth: (n, 1) classes or (n, t) scores."""
        if self.metric == "acc":
            return logits.argmax(dim=1, keepdim=True).numpy()
        return logits.float().numpy()

    def truth(self, target: torch.Tensor) -> np.ndarray:
        target = target.numpy()
        return target.reshape(-1, 1) if target.ndim == 1 else target

    def score(self, y_true: np.ndarray, y_pred: np.ndarray) -> float | None:
        """The metric over all gathered rows; None where it is undefined (no rows, one class)."""
        if len(y_true) == 0:
            return None
        try:
            return float(self.evaluator.eval({"y_true": y_true, "y_pred": y_pred})[self.metric])
        except (RuntimeError, ValueError) as exc:  # e.g. ROC-AUC with no positive label anywhere
            log.warning("OGB %s undefined here: %s", self.metric, exc)
            return None
