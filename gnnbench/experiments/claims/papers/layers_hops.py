"""Claim 16 (CATGNN Fig. 12): with 2- and 3-layer models, a halo of one hop suffices: deeper
halos (2, 3 hops) gain little, none (0 hops) loses accuracy. Claim 5 is its 2-layer core on
three graphs; this one adds the 3-layer model and a 3-hop halo."""

from __future__ import annotations

import pandas as pd

from gnnbench.experiments.claims.claim import (
    CPU,
    F1_TOLERANCE,
    Claim,
    register,
    share_half,
    two_halves,
)
from gnnbench.experiments.claims.tables import has_columns, mean_std_table, seed_means, span

CASE = ["dataset.name", "model.layers"]


def hop_effects(frame: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """(one hop - none, best of 2-3 hops - one hop) per (graph, layers), on seed means."""
    wide = seed_means(frame, CASE, "partitioner.hops", "test_f1_micro")
    if 1 not in wide:
        return pd.Series(dtype=float), pd.Series(dtype=float)
    loss = (wide[1] - wide[0]).dropna() if 0 in wide else pd.Series(dtype=float)
    deeper = [h for h in wide if h >= 2]
    gain = (wide[deeper].max(axis=1) - wide[1]).dropna() if deeper else pd.Series(dtype=float)
    return loss, gain


def judge_layers_hops(frame: pd.DataFrame):
    """Two halves over every (graph, layers): no halo loses more than 0.01 micro-F1, and the
    better of 2 or 3 hops gains at most 0.01 over one hop."""
    if not has_columns(frame, "partitioner.hops", "model.layers", "test_f1_micro"):
        return None
    loss, gain = hop_effects(frame)
    halves = {"the hops=0 half": None, "the deeper-halo half": None}
    if not loss.empty:
        halves["the hops=0 half"] = share_half(
            f"no halo loses {span(loss, '.3f')} against one hop ({loss.size} graph x depth)",
            loss > F1_TOLERANCE / 2, "hops=0 loses more than 0.01 on {share}",
        )  # fmt: skip
    if not gain.empty:
        halves["the deeper-halo half"] = share_half(
            f"2-3 hops - one hop {span(gain, '+.3f')}", gain <= F1_TOLERANCE / 2,
            "2-3 hops gain at most 0.01 on {share}",
        )  # fmt: skip
    return two_halves(halves)


def detail_layers_hops(frame: pd.DataFrame) -> list[str]:
    """Test micro-F1 per graph, depth and hops, mean ± std over seeds."""
    return mean_std_table(frame, CASE, "partitioner.hops", "test_f1_micro")


CLAIM = register(
    Claim(
        16, "CATGNN Fig. 12", "With 2- and 3-layer models one hop of halo suffices: none hurts, "
        "2-3 hops gain little", "one hop is enough at both depths",
        ("claim_16_layers_hops", "claim_16b_three_layers"), CPU + "; 60 epochs",
        judge_layers_hops, detail_layers_hops,
    )
)  # fmt: skip
