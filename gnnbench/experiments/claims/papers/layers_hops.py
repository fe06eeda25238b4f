"""Claim 16 (CATGNN Fig. 12): with 2- and 3-layer models, a halo of one hop suffices: deeper
halos (2, 3 hops) gain little, none (0 hops) loses accuracy. Claim 5 is its 2-layer core on
three graphs; this one adds the 3-layer model and a 3-hop halo."""

from __future__ import annotations

import pandas as pd

from gnnbench.experiments.claims.claim import CPU, Claim, register
from gnnbench.experiments.claims.papers.hops import hop_verdict
from gnnbench.experiments.claims.tables import has_columns, mean_std_table

CASE = ["dataset.name", "model.layers"]


def judge_layers_hops(frame: pd.DataFrame):
    """Claim 5's two halves over every (graph, layers): no halo loses more than 0.01 micro-F1,
    and the better of 2 or 3 hops gains at most 0.01 over one hop."""
    if not has_columns(frame, "partitioner.hops", "model.layers", "test_f1_micro"):
        return None
    return hop_verdict(frame, CASE, "graph x depth", ("hops=2-3", "2-3 hops"))


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
