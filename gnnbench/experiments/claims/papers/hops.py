"""Claim 5 (CATGNN): one-hop neighbourhoods suffice: no halo hurts, two hops gain little."""

from __future__ import annotations

import pandas as pd

from gnnbench.experiments.claims.claim import (
    CPU,
    F1_TOLERANCE,
    Claim,
    Half,
    Verdict,
    register,
    share_half,
    two_halves,
)
from gnnbench.experiments.claims.tables import has_columns, mean_std_table, seed_means, span


def judge_hops(frame: pd.DataFrame) -> Verdict | None:
    """Holds when dropping the halo (hops=0) loses more than 0.01 micro-F1 on every graph and two
    hops gain at most 0.01 on every graph; partly when one of the two is seen (or only one run)."""
    if not has_columns(frame, "partitioner.hops", "test_f1_micro"):
        return None
    wide = seed_means(frame, ["dataset.name"], "partitioner.hops", "test_f1_micro")
    if 1 not in wide or not ({0, 2} & set(wide)):
        return None
    halves: dict[str, Half | None] = {"the hops=0 half": None, "the hops=2 half": None}
    loss = (wide[1] - wide[0]).dropna() if 0 in wide else pd.Series(dtype=float)
    if not loss.empty:
        ours = f"no halo loses {span(loss, '.3f')} micro-F1 against one hop ({loss.size} graphs)"
        why = "hops=0 loses more than 0.01 on {share} graphs"
        halves["the hops=0 half"] = share_half(ours, loss > F1_TOLERANCE / 2, why)
    gain = (wide[2] - wide[1]).dropna() if 2 in wide else pd.Series(dtype=float)
    if not gain.empty:
        ours = f"two hops - one hop {span(gain, '+.3f')} ({gain.size} graphs)"
        why = "hops=2 gains at most 0.01 on {share} graphs"
        halves["the hops=2 half"] = share_half(ours, gain <= F1_TOLERANCE / 2, why)
    return two_halves(halves)


def detail_hops(frame: pd.DataFrame) -> list[str]:
    """Test micro-F1 per graph and hops, mean ± std over seeds."""
    return mean_std_table(frame, ["dataset.name"], "partitioner.hops", "test_f1_micro")


CLAIM = register(
    Claim(
        5, "CATGNN", "One-hop neighbourhoods suffice: none hurts, two hops gain little",
        "hops=0 loses accuracy, hops=2 ~ hops=1", ("claim_5_hops",), CPU, judge_hops,
        detail_hops,
    )
)  # fmt: skip
