"""Claim 8 (CM-GCN Fig. 6): cohesive mini-batches cost 46-56% less computation than random
ones."""

from __future__ import annotations

import pandas as pd

from gnnbench.experiments.claims.claim import SMALL, Claim, Verdict, register
from gnnbench.experiments.claims.figures import case_bars
from gnnbench.experiments.claims.tables import (
    frame_markdown,
    has_columns,
    mean_std_table,
    seed_means,
    share,
    span,
)


def cohesive_savings(frame: pd.DataFrame) -> pd.Series:
    """1 - cost(cohesive) / cost(random) per (graph, batches per epoch), on seed means."""
    wide = seed_means(
        frame, ["dataset.name", "train.batches_per_epoch"], "train.batching", "computation_cost"
    )
    if not {"random", "cohesive"} <= set(wide):
        return pd.Series(dtype=float)
    return (1 - wide["cohesive"] / wide["random"]).dropna()


def judge_cohesive(frame: pd.DataFrame) -> Verdict | None:
    """Holds if cohesive batches save >= 46% at every size; partly if always cheaper."""
    if not has_columns(frame, "train.batching", "computation_cost"):
        return None
    saving = cohesive_savings(frame)
    if saving.empty:
        return None
    in_band, total = share(saving >= 0.46)
    ours = (
        f"cohesive saves {span(saving, '.0%')} (median {saving.median():.0%}); "
        f">= 46% in {in_band}/{total}"
    )
    if in_band == total:
        return Verdict(ours, "holds", "46% or more saved at every size")
    if (saving > 0).all():
        return Verdict(ours, "holds partly", "always cheaper, not always by 46%")
    return Verdict(ours, "refuted", "cohesive batches are not cheaper everywhere")


def detail_cohesive(frame: pd.DataFrame) -> list[str]:
    """Computation cost per batching, mean ± std over seeds, and the saving."""
    lines = mean_std_table(
        frame, ["dataset.name", "train.batches_per_epoch"], "train.batching", "computation_cost"
    )
    saving = cohesive_savings(frame).rename("cohesive saves").to_frame()
    return [*lines, "", *frame_markdown(saving, ".1%")]


def plot_cohesive(frame: pd.DataFrame):
    """The saving per graph and batch count against CM-GCN's 46-56%."""
    return case_bars(
        cohesive_savings(frame), "train.batches_per_epoch", "1 - cost(cohesive) / cost(random)",
        "claim 8: computation saved by cohesive batches", band=(0.46, 0.56),
    )  # fmt: skip


CLAIM = register(
    Claim(
        8, "CM-GCN Fig. 6", "Cohesive mini-batches reduce computation against random ones",
        "46-56% less", ("claim_8_cohesive_batches",), SMALL + "; a count, machine-independent",
        judge_cohesive, detail_cohesive, plot_cohesive,
    )
)  # fmt: skip
