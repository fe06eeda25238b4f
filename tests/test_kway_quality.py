"""The every-partitioner quality section (gnnbench/experiments/kway_quality.py) from made-up rows:
ratios per cell, the targets' verdicts, and where the section goes in the doc."""

from __future__ import annotations

import pandas as pd
import pytest

from gnnbench.experiments import kway_quality
from gnnbench.partition.base import streaming_partitioners
from gnnbench.partition.spec import PartitionSpec

# (config, cut, RF, balance, time, peak) in every cell; METIS and KaMinPar strong differ per cell
CELLS = [("g1", 4), ("g1", 8), ("g2", 4), ("g2", 8)]
TARGET = kway_quality.TARGET


def _runs(best_cut_scale: list[float]) -> pd.DataFrame:
    rows = []
    for (dataset, p), scale in zip(CELLS, best_cut_scale, strict=True):
        metis_cut = 0.1 * p / 4
        for config, cut, rf, balance in (
            ("metis", metis_cut, 2.0, 1.03),
            ("kaminpar strong", metis_cut * 0.9, 1.9, 1.03),
            (TARGET, metis_cut * scale, 1.9, 1.04),
            ("ldg", metis_cut * 3, 3.0, 1.01),
        ):
            rows.append({
                "dataset": dataset, "config": config, "p": p, "replication_factor": rf,
                "edge_cut": cut, "vertex_balance": balance, "partition_time_s": 1.0,
                "partition_peak_mb": 10.0 if config == "metis" else 1.0,
                "partition_rss_mb": 100.0, "measured_utc": "2026-11-25 06:50", "load_1m": 1.5,
            })  # fmt: skip
    return pd.DataFrame(rows)


def test_summary_ratios_per_cell():
    summary = kway_quality.summary(_runs([1.0, 1.0, 1.1, 1.3]))
    best = summary.loc[TARGET]
    assert best.cells == 4
    assert best.cut_mean == pytest.approx(1.1) and best.cut_max == pytest.approx(1.3)
    assert best.rf_mean == pytest.approx(0.95) and best.peak_mean == pytest.approx(0.1)
    assert best.cut_vs_kaminpar_strong == pytest.approx(1.1 / 0.9)
    assert list(summary.index) == ["kaminpar strong", "metis", TARGET, "ldg"]


@pytest.mark.parametrize(
    "scales, verdicts",
    [
        ([1.0, 1.0, 1.0, 1.1], ["met", "met", "met", "met"]),
        ([1.0, 1.0, 1.0, 1.2], ["met", "missed", "met", "met"]),  # one cell over 1.15
        ([1.1, 1.1, 1.1, 1.1], ["missed", "met", "met", "met"]),  # mean over 1.05
    ],
)
def test_target_verdicts(scales, verdicts):
    last = kway_quality.target_lines(_runs(scales))[-1]
    found = [part.rsplit(": ", 1)[1].rstrip(").") for part in last.split("; ")]
    assert found == verdicts


def test_section_goes_before_the_summary_section_and_is_replaced(tmp_path):
    doc = tmp_path / "partition_quality.md"
    doc.write_text("# Title\n\n## Streaming\n\ntext\n\n## SPRING's replication factor\n\nend\n")
    runs = _runs([1.0] * 4)
    for _ in range(2):  # the second write replaces the first
        kway_quality.write_section(kway_quality.section(runs), doc)
    text = doc.read_text()
    assert text.count(kway_quality.HEADING) == 1
    order = [text.index(h) for h in ("## Streaming", kway_quality.HEADING, "## SPRING's")]
    assert order == sorted(order) and text.endswith("end\n")
    rows = [line for line in text.splitlines() if line.startswith(f"| {TARGET} |")]
    assert rows == [f"| {TARGET} | 4 | 1.000 | 1.000 | 0.950 | 0.950 | 1.040 | 1.00 | 0.10 "
                    "| 1.111 | 1.111 |"]  # fmt: skip


def test_every_streaming_partitioner_and_the_baselines_modes_run():
    labels = set(kway_quality.configs())
    assert set(streaming_partitioners()) <= labels
    assert {"metis", "kaminpar", "kaminpar strong", "kahip eco", "kahip strong"} <= labels
    assert kway_quality.TARGET in labels
    for name, overrides in kway_quality.configs().values():  # each a valid config of its own
        spec = PartitionSpec.defaults(name, **overrides)
        expected = "quotient" if name in kway_quality.PRESETS else name  # a preset runs quotient
        assert spec.name == expected
