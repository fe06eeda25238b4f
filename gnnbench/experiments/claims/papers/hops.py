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


def hop_effects(frame: pd.DataFrame, case: list[str]) -> tuple[pd.Series, pd.Series]:
    """(one hop - none, the best deeper halo - one hop) per case, on seed means of test F1."""
    wide = seed_means(frame, case, "partitioner.hops", "test_f1_micro")
    if 1 not in wide:
        return pd.Series(dtype=float), pd.Series(dtype=float)
    loss = (wide[1] - wide[0]).dropna() if 0 in wide else pd.Series(dtype=float)
    deeper = [h for h in wide if h >= 2]
    gain = (wide[deeper].max(axis=1) - wide[1]).dropna() if deeper else pd.Series(dtype=float)
    return loss, gain


def hop_verdict(
    frame: pd.DataFrame, case: list[str], cases: str, deeper: tuple[str, str]
) -> Verdict | None:
    """Two halves over every case (named `cases` in the text): dropping the halo (hops=0) loses
    more than 0.01 micro-F1, and the deeper halos (`deeper`: their key and their words) gain at
    most 0.01; None without the runs to compare."""
    loss, gain = hop_effects(frame, case)
    key, words = deeper
    halves: dict[str, Half | None] = {"the hops=0 half": None, f"the {key} half": None}
    if not loss.empty:
        ours = f"no halo loses {span(loss, '.3f')} micro-F1 against one hop ({loss.size} {cases})"
        why = "hops=0 loses more than 0.01 on {share} " + cases
        halves["the hops=0 half"] = share_half(ours, loss > F1_TOLERANCE / 2, why)
    if not gain.empty:
        ours = f"{words} - one hop {span(gain, '+.3f')} ({gain.size} {cases})"
        why = f"{key} gains at most 0.01 on {{share}} {cases}"
        halves[f"the {key} half"] = share_half(ours, gain <= F1_TOLERANCE / 2, why)
    return two_halves(halves)


def judge_hops(frame: pd.DataFrame) -> Verdict | None:
    """Holds when dropping the halo (hops=0) loses more than 0.01 micro-F1 on every graph and two
    hops gain at most 0.01 on every graph; partly when one of the two is seen (or only one run)."""
    if not has_columns(frame, "partitioner.hops", "test_f1_micro"):
        return None
    return hop_verdict(frame, ["dataset.name"], "graphs", ("hops=2", "two hops"))


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
