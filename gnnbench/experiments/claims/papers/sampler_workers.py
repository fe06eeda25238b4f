"""Claim 10 (Armada): disaggregated sampler processes cut the trainers' wait for batches."""

from __future__ import annotations

import pandas as pd

from gnnbench.experiments.claims.claim import CPU, Claim, Verdict, register
from gnnbench.experiments.claims.figures import line_figure
from gnnbench.experiments.claims.tables import has_columns, mean_std_table, seed_means, share, span


def judge_samplers(frame: pd.DataFrame) -> Verdict | None:
    """Holds if some sampler count cuts the trainers' batch wait on every graph."""
    if not has_columns(frame, "train.sampler_workers", "batch_wait_s"):
        return None
    wait = seed_means(frame, ["dataset.name"], "train.sampler_workers", "batch_wait_s")
    if 0 not in wait or len(wait.columns) < 2:
        return None
    helpers = [column for column in wait if column > 0]
    ratio = (wait[helpers].min(axis=1) / wait[0]).dropna()
    lower, total = share(ratio < 1)
    ours = f"batch wait with samplers (best count) {span(ratio, '.2f')}x without ({total} graphs)"
    if lower == total:
        return Verdict(ours, "holds", "trainers wait less for batches on every graph")
    if lower:
        return Verdict(ours, "holds partly", f"less waiting on {lower}/{total} graphs")
    return Verdict(ours, "refuted", "sampler processes do not cut the trainers' wait")


def detail_samplers(frame: pd.DataFrame) -> list[str]:
    """Batch wait per graph and sampler count, mean ± std over seeds."""
    return mean_std_table(frame, ["dataset.name"], "train.sampler_workers", "batch_wait_s")


def plot_samplers(frame: pd.DataFrame):
    """Batch wait against sampler processes per trainer, one line per graph."""
    if not has_columns(frame, "train.sampler_workers", "batch_wait_s"):
        return None
    wide = seed_means(frame, ["train.sampler_workers"], "dataset.name", "batch_wait_s")
    return line_figure(wide, "batch wait per epoch, slowest trainer (s)", "claim 10: samplers")


CLAIM = register(
    Claim(
        10, "Armada", "Disaggregated sampling workers raise trainer utilisation",
        "trainers wait less for batches", ("claim_10_sampler_workers",),
        CPU + ": 2 trainers and up to 4 sampler processes share 2 cores", judge_samplers,
        detail_samplers, plot_samplers,
    )
)  # fmt: skip
