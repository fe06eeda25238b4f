"""Claim 14 (Armada Fig. 5): GREM reaches METIS's quality with 8-65x less memory and 8-46x less
time. Claim 7 judges the quality half (edge cut); this one the resources.

Judged on the partition documents' committed measurements (partition_docs.py): METIS's heap
peak and time of the partition step over GREM's, per graph and p where both ran; a verdict at
scale needs both on a graph of >= 10 M edges (`python scripts/scale.py --partitioners
grem,metis --sizes 2e7 --rerun`). The small graphs' times are tens of milliseconds, mostly fixed
cost: their time ratios are shown, and judged only where no graph at scale has both.
"""

from __future__ import annotations

import pandas as pd

from gnnbench.experiments.claims import partition_docs as docs
from gnnbench.experiments.claims.claim import Claim, register, share_half, two_halves
from gnnbench.experiments.claims.tables import span

MEMORY_LOW, TIME_LOW = 8.0, 8.0  # the low ends of Armada's ranges


def ratios(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (graph, p): edges, METIS / GREM heap peak and time (means over repeated rows)."""
    rows = frame[frame["partitioner"].isin(["grem", "metis"])]
    wide = rows.pivot_table(index=["graph", "p"], columns="partitioner", aggfunc="mean",
                            values=["partition_peak_mb", "partition_time_s"])  # fmt: skip
    if wide.empty or {"grem", "metis"} - set(wide.columns.get_level_values(1)):
        return pd.DataFrame()
    edges = rows.groupby(["graph", "p"])["edges"].max()
    table = pd.DataFrame({
        "edges": edges,
        "memory": wide[("partition_peak_mb", "metis")] / wide[("partition_peak_mb", "grem")],
        "time": wide[("partition_time_s", "metis")] / wide[("partition_time_s", "grem")],
    })  # fmt: skip
    return table.dropna()


def judge_grem_resources(frame: pd.DataFrame):
    """Two halves, memory and time: each holds where METIS needs >= 8x GREM's; judged on the
    graphs at scale where both ran, else on all (the verdict names the largest)."""
    table = ratios(frame)
    if table.empty:
        return None
    judged = docs.at_scale(table)
    where = "at scale"
    if judged.empty:
        judged, where = table, "small graphs only, none of 10 M edges"
    largest = judged["edges"].idxmax()
    suffix = f" ({where}; largest {largest[0]}, {judged['edges'].max() / 1e6:.2f} M edges)"
    halves = {
        "memory": share_half(f"METIS / GREM heap peak {span(judged['memory'], '.1f')}x",
                             judged["memory"] >= MEMORY_LOW, "8x less memory on only {share} cases"),
        "time": share_half(f"time {span(judged['time'], '.2f')}x" + suffix,
                           judged["time"] >= TIME_LOW, "8x less time on only {share} cases"),
    }  # fmt: skip
    return two_halves(halves)


def detail_grem_resources(frame: pd.DataFrame) -> list[str]:
    """METIS / GREM memory and time per graph and p, largest graphs last."""
    names = {"memory": "METIS / GREM peak", "time": "METIS / GREM time"}
    return docs.by_size_markdown(ratios(frame), names, ".3g")


CLAIM = register(
    Claim(
        14, "Armada Fig. 5", "GREM partitions with far less memory and time than METIS",
        "8-65x less memory, 8-46x less time", (),
        "CPU, 2 cores; memray heap peaks and times of the partition step, p = 4-16 "
        "(docs/partition_quality_kway.csv; docs/scale.csv where METIS ran at scale)",
        judge_grem_resources, detail_grem_resources, runs_from=docs.partition_runs,
        produced_by=(docs.COMMANDS[0], "python scripts/scale.py --partitioners grem,metis"),
    )
)  # fmt: skip
