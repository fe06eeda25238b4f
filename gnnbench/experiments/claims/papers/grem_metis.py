"""Claim 7 (Armada): GREM's edge cut is within ~1% of edges of METIS's at a 10% chunk, and its
chunk refinement matters at small chunks."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from gnnbench.experiments.claims.claim import (
    SMALL,
    Claim,
    Half,
    Verdict,
    register,
    share_half,
    two_halves,
)
from gnnbench.experiments.claims.figures import case_bars
from gnnbench.experiments.claims.partition_docs import scale_claim_rows, size_note
from gnnbench.experiments.claims.tables import (
    added_key_values,
    has_columns,
    mean_std_table,
    seed_means,
    share,
    span,
)

EDGE_CUT_TOLERANCE = 0.01  # Armada: within about 1% of edges


def chunk_refinement_on(frame: pd.DataFrame) -> pd.Series:
    """Whether each GREM run refined its chunks."""
    return added_key_values(frame, "partitioner.chunk_refinement") == "true"


def grem_metis_gaps(frame: pd.DataFrame) -> pd.Series:
    """GREM's edge cut at a 10% chunk (refined, as Armada's) minus METIS's, per (dataset, p), in
    fraction of edges."""
    chunk = frame.get("partitioner.chunk_fraction", pd.Series(index=frame.index, dtype=float))
    grem = (frame["partitioner.name"] == "grem") & (chunk.round(4) == 0.1)
    ten = frame[(frame["partitioner.name"] == "metis") | (grem & chunk_refinement_on(frame))]
    wide = seed_means(ten, ["dataset.name", "p"], "partitioner.name", "edge_cut")
    if not {"grem", "metis"} <= set(wide):
        return pd.Series(dtype=float)
    return (wide["grem"] - wide["metis"]).dropna()


def refinement_gains(frame: pd.DataFrame) -> pd.DataFrame:
    """GREM's edge cut without its chunk refinement minus with it, in fraction of edges: one row
    per (dataset, p), one column per chunk fraction; empty without both kinds of run."""
    grem = frame[frame["partitioner.name"] == "grem"]
    if "partitioner.chunk_fraction" not in grem:
        return pd.DataFrame()
    on = chunk_refinement_on(grem)
    index, column = ["dataset.name", "p"], "partitioner.chunk_fraction"
    if on.all() or not on.any():
        return pd.DataFrame()
    refined = seed_means(grem[on], index, column, "edge_cut")
    placed = seed_means(grem[~on], index, column, "edge_cut")
    return (placed - refined).dropna(how="all").dropna(axis=1, how="all")


def _cut_half(gap: pd.Series) -> Half | None:
    """GREM's cut within 1 point of METIS's everywhere (10% chunk)."""
    if gap.empty:
        return None
    within, total = share(gap <= EDGE_CUT_TOLERANCE)
    ours = (
        f"GREM's cut - METIS's {span(gap * 100, '+.1f')} points of edges "
        f"(median {gap.median() * 100:+.1f}); within 1 point in {within}/{total}"
    )
    why = "GREM's cut within 1 point of METIS's in {share}"
    return share_half(ours, gap <= EDGE_CUT_TOLERANCE, why)


def _refinement_half(gains: pd.DataFrame) -> Half | None:
    """Refinement matters at small chunks: at the smallest chunk it lowers the cut by 1 point of
    edges or more (median), and by more than at the largest chunk."""
    if gains.empty:
        return None
    small, large = min(gains.columns), max(gains.columns)
    median = gains.median() * 100
    ours = "refinement lowers the cut by " + ", ".join(
        f"{span(gains[chunk] * 100, '+.1f')} points (median {median[chunk]:+.1f}) at a "
        f"{chunk:.0%} chunk"
        for chunk in sorted(gains.columns)
    )
    if median[small] < EDGE_CUT_TOLERANCE * 100:
        return Half(ours, 0.0, f"refinement saves under 1 point at a {small:.0%} chunk")
    if small != large and median[small] <= median[large]:
        why = f"refinement saves as much at a {large:.0%} chunk: it matters at every chunk size"
        return Half(ours, 0.0, why)
    return Half(ours, 1.0)


def judge_grem(frame: pd.DataFrame) -> Verdict | None:
    """Two halves: GREM's cut within 1 point of METIS's at a 10% chunk on every (graph, p), and
    refinement mattering at small chunks (_refinement_half)."""
    if not has_columns(frame, "partitioner.name", "edge_cut"):
        return None
    gaps = grem_metis_gaps(frame)
    halves = {
        "the cut half": _cut_half(gaps),
        "the refinement half": _refinement_half(refinement_gains(frame)),
    }
    verdict = two_halves(halves)
    if verdict is None or gaps.empty:
        return verdict
    graphs = gaps.index.get_level_values(0).unique()
    return replace(verdict, ours=verdict.ours + size_note(frame, graphs))


def detail_grem(frame: pd.DataFrame) -> list[str]:
    """Edge cut of METIS and GREM per chunk fraction (refined or not), GREM's refinement moves."""
    grem = frame[frame["partitioner.name"] == "grem"]
    lines = ["Edge cut, METIS and GREM per chunk fraction:", ""]
    label = grem["partitioner.chunk_fraction"].map(lambda c: f"grem {c:g}") + (
        ~chunk_refinement_on(grem)
    ).map({True: " placement only", False: ""})
    metis = frame[frame["partitioner.name"] == "metis"]
    both = pd.concat([grem.assign(partitioner=label), metis.assign(partitioner="metis")])
    lines += mean_std_table(both, ["dataset.name", "p"], "partitioner", "edge_cut")
    refined = grem[chunk_refinement_on(grem)]
    if "refinement_moves" in refined:
        lines += ["", "GREM's refinement moves per chunk fraction:", ""]
        lines += mean_std_table(
            refined, ["dataset.name", "p"], "partitioner.chunk_fraction", "refinement_moves"
        )
    return lines


def plot_grem(frame: pd.DataFrame):
    """GREM's edge cut minus METIS's per graph and p, against a 1-point band."""
    return case_bars(
        grem_metis_gaps(frame) * 100, "p", "GREM's edge cut - METIS's (points of edges)",
        "claim 7: GREM (10% chunk) vs METIS", band=(-1.0, 1.0),
    )  # fmt: skip


CLAIM = register(
    Claim(
        7, "Armada", "GREM's edge cut is comparable to METIS's; refinement matters at small chunks",
        "within ~1% of edges at a 10% chunk; refinement matters at small chunks",
        ("claim_7_grem_metis", "claim_7b_grem_chunks"),
        SMALL + "; at scale where GREM and METIS both ran on one graph (docs/scale.csv)",
        judge_grem, detail_grem, plot_grem, scale_rows=scale_claim_rows,
    )
)  # fmt: skip
