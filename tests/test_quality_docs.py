"""The figures the partition quality docs report: best balanced configuration per cell, one
configuration across cells, the Walshaw table (gnnbench/experiments/streaming_quality.py,
walshaw.py)."""

from __future__ import annotations

import pandas as pd
import pytest

from gnnbench.experiments import streaming_quality as quality
from gnnbench.experiments import walshaw


def _runs() -> pd.DataFrame:
    """Two cells; config "a" is best in one and unbalanced in none, "b" is unbalanced once."""
    rows = [
        ("g", 4, "metis", 2.0, 0.10, 1.0),
        ("g", 4, "a", 2.2, 0.12, 1.05),
        ("g", 4, "b", 2.1, 0.20, 1.20),  # lowest RF but over the 1.10 balance bound
        ("g", 8, "metis", 3.0, 0.20, 1.0),
        ("g", 8, "a", 3.3, 0.30, 1.02),
        ("g", 8, "b", 3.15, 0.21, 1.04),
    ]
    columns = ["dataset", "p", "config", "replication_factor", "edge_cut", "vertex_balance"]
    frame = pd.DataFrame(rows, columns=columns)
    return frame.assign(partition_time_s=1.0, partition_peak_mb=1.0, passes=1)


def test_best_streaming_skips_unbalanced_rows():
    best = quality.best_streaming(_runs())
    assert best.loc[("g", 4), "best"] == "a" and best.loc[("g", 4), "rf_ratio"] == pytest.approx(
        1.1
    )
    assert best.loc[("g", 8), "best"] == "b" and best.loc[("g", 8), "rf_ratio"] == pytest.approx(
        1.05
    )
    by_cut = quality.best_streaming(_runs(), by="edge_cut")
    assert by_cut.loc[("g", 8), "cut_ratio"] == pytest.approx(1.05)


def test_one_configuration_must_be_balanced_everywhere():
    lines = quality.single_config_lines(_runs())
    assert "| a | 1.100 | 1.100 |" in lines  # mean and max of 1.1 and 1.1
    assert not any(line.startswith("| b |") for line in lines)  # unbalanced at p=4


def test_walshaw_table_flags_unbalanced_cells_and_keeps_them_out_of_means():
    rows = []
    for graph, best in (("x", 10), ("y", 20)):
        for config in walshaw.CONFIGS:
            rows.append({"graph": graph, "nodes": 100, "best_known": best, "config": config,
                         "cut": 2 * best, "balance": 1.0})  # fmt: skip
    frame = pd.DataFrame(rows)
    frame.loc[(frame.graph == "y") & (frame.config == "hdrf"), ["cut", "balance"]] = (0, 2.0)
    text = walshaw.document(frame)
    assert "| metis | 2.00 | 2.0 | 2 | 1.000 |" in text
    assert "| hdrf | 2.00 | 2.0 | 1 | 2.000 |" in text  # the one-sided cell left out
    assert "0.00*" in text
