"""Claim 2 (SDT-GNN Table II): richest-neighbour merging cuts SPRING's cluster count by 1-3
orders of magnitude."""

from __future__ import annotations

import math

import pandas as pd

from gnnbench.experiments.claims.claim import SMALL, Claim, Verdict, register
from gnnbench.experiments.claims.tables import frame_markdown, has_columns, share, span


def merge_orders(frame: pd.DataFrame) -> pd.Series:
    """log10(clusters before merging / clusters after) per (dataset, p)."""
    ratio = frame["clusters_before_merge"] / frame["clusters_after_merge"]
    index = pd.MultiIndex.from_frame(frame[["dataset.name", "p"]])
    return pd.Series(ratio.map(math.log10).to_numpy(), index=index).groupby(level=[0, 1]).mean()


def judge_merge(frame: pd.DataFrame) -> Verdict | None:
    """Holds if merging cuts the cluster count by >= 1 order of magnitude for every (graph, p);
    partly if it cuts it everywhere and by one order somewhere."""
    if not has_columns(frame, "clusters_before_merge", "clusters_after_merge"):
        return None
    orders = merge_orders(frame)
    reached, total = share(orders >= 1.0)
    ours = f"{span(orders, '.1f')} orders of magnitude over {total} (graph, p)"
    if reached == total:
        return Verdict(ours, "holds", "at least one order of magnitude everywhere")
    if reached and (orders > 0).all():
        graphs = ", ".join(sorted({key[0] for key in orders[orders >= 1.0].index}))
        why = f"fewer clusters everywhere; one order or more only in {reached}/{total} ({graphs})"
        return Verdict(ours, "holds partly", why)
    return Verdict(ours, "refuted", "less than one order of magnitude everywhere")


def detail_merge(frame: pd.DataFrame) -> list[str]:
    """Clusters before and after merging per (graph, p)."""
    table = frame.groupby(["dataset.name", "p"])[
        ["clusters_before_merge", "clusters_after_merge"]
    ].mean()
    table["orders of magnitude"] = merge_orders(frame)
    return frame_markdown(table, ".4g")


CLAIM = register(
    Claim(
        2, "SDT-GNN Table II", "Richest-neighbour merging cuts the cluster count",
        "1-3 orders of magnitude", ("claim_2_spring_merge",), SMALL, judge_merge, detail_merge,
    )
)  # fmt: skip
