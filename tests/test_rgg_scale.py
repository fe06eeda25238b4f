"""docs/rgg_scale.md's report (gnnbench/experiments/rgg_scale.py) on a real, small
experiment=rgg_scale sweep: every configuration labelled, the in-memory baselines compared, the
target's verdict stated, a failed job shown with its error."""

from __future__ import annotations

import pandas as pd
from helpers.cli import gnnbench

from gnnbench.experiments import rgg_scale


def test_labels_name_presets_and_baseline_modes():
    best = {f"partitioner.{key}": str(value) for key, value in rgg_scale._presets()[
        "quotient_best"][1].items()}  # fmt: skip
    assert rgg_scale.label({"partitioner.name": "quotient", **best}) == "quotient_best"
    assert rgg_scale.label({"partitioner.name": "quotient"}) == "quotient"
    terapart = {"partitioner.name": "kaminpar", "partitioner.context": "terapart"}
    assert rgg_scale.label(terapart) == "kaminpar terapart"
    assert rgg_scale.label({"partitioner.name": "kahip", "partitioner.mode": "eco"}) == "kahip eco"


def test_small_sweep_to_doc(tmp_path, gnnbench_home, monkeypatch):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    size = ["experiment=rgg_scale", "dataset.num_nodes=3000", f"tracking.uri={uri}"]
    done = gnnbench(tmp_path, "-m", *size, "partitioner=metis,kaminpar,quotient_multilevel,ldg")
    assert done.returncode == 0, done.stderr[-2000:]
    # partition-only and capped: every book is logged, then removed (never reused, 10-25 GB at 1 B)
    assert not list((gnnbench_home / "partitions").glob("*-capped"))
    # a cap no process fits under: FAILED with its one line, and the table still builds
    capped = gnnbench(tmp_path, *size, "partitioner=hash", "partitioner.memory_limit_gb=0.01")
    assert capped.returncode != 0
    monkeypatch.setattr(rgg_scale, "DOC", tmp_path / "rgg_scale.md")
    rgg_scale.write_doc(uri, {100_000_000: "needs hours"})
    frame = pd.read_csv(tmp_path / "rgg_scale.csv")
    assert set(frame.config) == {"metis", "kaminpar default", rgg_scale.TARGET, "ldg", "hash"}
    finished = frame[frame.status == "FINISHED"].set_index("config")
    assert set(finished.index) == {"metis", "kaminpar default", rgg_scale.TARGET, "ldg"}
    assert (finished.partition_peak_mb > 0).all() and (finished.edge_cut > 0).all()
    assert frame.set_index("config").loc["hash", "error"].strip() != ""
    text = (tmp_path / "rgg_scale.md").read_text()
    assert "## 3,000 nodes" in text and "## 100,000,000 nodes: not run" in text
    assert "Not run at this size: kahip, spring, fennel, quotient, quotient_best." in text
    best = finished.loc[["metis", "kaminpar default"], "edge_cut"].min()
    ratio = finished.loc[rgg_scale.TARGET, "edge_cut"] / best
    assert f"`{rgg_scale.TARGET}`: cut {ratio:.3f}x" in text


def test_store_runs_replace_the_committed_rows_of_their_job():
    """The doc is the committed CSV with the store's runs on top, one row per (size, config, p)."""
    committed = pd.DataFrame(
        {"nodes": [10, 10, 20], "config": ["metis", "ldg", "metis"], "p": [16] * 3,
         "edge_cut": [0.1, 0.5, 0.2]}
    )  # fmt: skip
    fresh = pd.DataFrame({"nodes": [10, 10], "config": ["ldg", "quotient_multilevel"],
                          "p": [16, 16], "edge_cut": [0.4, 0.09]})  # fmt: skip
    frame = rgg_scale.merged_runs(committed, fresh).set_index(["nodes", "config"])
    assert frame.edge_cut.to_dict() == {
        (10, "metis"): 0.1,
        (20, "metis"): 0.2,
        (10, "ldg"): 0.4,
        (10, "quotient_multilevel"): 0.09,
    }
    assert rgg_scale.merged_runs(committed, pd.DataFrame()).equals(committed)


def test_a_run_without_figures_is_a_row_of_dashes():
    """A killed run logs no metrics (None from MLflow): its row shows dashes and its error, and
    the finished rows their ratios, whether or not an in-memory run finished at that size."""
    frame = pd.DataFrame(
        {
            "config": ["quotient_multilevel", "spring"],
            "status": ["KILLED", "FINISHED"],
            "partition_peak_mb": [None, 50.0],
            "partition_rss_mb": [None, 70.0],
            "partition_time_s": [None, 1.5],
            "edge_cut": [None, 0.08],
            "replication_factor": [None, 1.3],
            "vertex_balance": [None, 1.0],
            "error": ["interrupted by SIGTERM", ""],
        },
        dtype=object,
    )  # fmt: skip  (as MLflow's rows make it: None kept as None)
    finished, killed = rgg_scale.size_table(frame)[2:]
    assert killed.startswith("| quotient_multilevel | KILLED | — | — | — |")
    assert killed.endswith("| interrupted by SIGTERM |")
    assert "| 0.0800 | 1.300 | 1.000 | — | — |" in finished
