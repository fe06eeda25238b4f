"""F1 from per-class confusion counts: counts add up across ranks, so an all-reduce of them gives
the exact global F1 (every evaluated node is owned by exactly one partition)."""

from __future__ import annotations

import torch


def confusion_counts(
    prediction: torch.Tensor, target: torch.Tensor, num_classes: int
) -> torch.Tensor:
    """(3, C) int64 counts of true positives, false positives and false negatives per class.

    Single-label: class ids (n,). Multi-label: 0/1 indicator matrices (n, C), one decision per label.
    """
    if target.dim() == 2:
        predicted, actual = prediction.bool(), target.bool()
        true_pos = (predicted & actual).sum(0)
        false_pos = (predicted & ~actual).sum(0)
        false_neg = (~predicted & actual).sum(0)
    else:
        true_pos = torch.bincount(target[prediction == target], minlength=num_classes)
        false_pos = torch.bincount(prediction, minlength=num_classes) - true_pos
        false_neg = torch.bincount(target, minlength=num_classes) - true_pos
    return torch.stack((true_pos, false_pos, false_neg)).to(torch.int64)


def f1_scores(counts: torch.Tensor) -> tuple[float, float]:
    """(micro, macro) F1 of (3, C) counts; 0.0 when nothing was evaluated.

    Macro-F1 averages the classes that occur in the truth or the predictions (sklearn's labels for
    single-label data); micro-F1 pools every decision (accuracy for single-label data).
    """
    true_pos, false_pos, false_neg = counts.double()
    denominator = 2 * true_pos + false_pos + false_neg
    total = float(denominator.sum())
    micro = float(2 * true_pos.sum()) / total if total > 0 else 0.0
    present = denominator > 0
    macro = float((2 * true_pos[present] / denominator[present]).mean()) if present.any() else 0.0
    return micro, macro
