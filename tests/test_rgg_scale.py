"""docs/rgg_scale.md's report (gnnbench/track/report/rgg_scale.py) on a real, small
experiment=rgg_scale sweep: every configuration labelled, the in-memory baselines compared, the
target's verdict stated, a failed job shown with its error."""

from __future__ import annotations

import pandas as pd

from gnnbench.track.report import rgg_scale
from tests.cli import gnnbench


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
    done = gnnbench(tmp_path, "-m", *size, "partitioner=metis,kaminpar,quotient_best,ldg")
    assert done.returncode == 0, done.stderr[-2000:]
    # a cap no process fits under: FAILED with its one line, and the table still builds
    capped = gnnbench(tmp_path, *size, "partitioner=hash", "partitioner.memory_limit_gb=0.01")
    assert capped.returncode != 0
    monkeypatch.setattr(rgg_scale, "DOC", tmp_path / "rgg_scale.md")
    rgg_scale.write_doc(uri, {100_000_000: "needs hours"})
    frame = pd.read_csv(tmp_path / "rgg_scale.csv")
    assert set(frame.config) == {"metis", "kaminpar default", "quotient_best", "ldg", "hash"}
    finished = frame[frame.status == "FINISHED"].set_index("config")
    assert set(finished.index) == {"metis", "kaminpar default", "quotient_best", "ldg"}
    assert (finished.partition_peak_mb > 0).all() and (finished.edge_cut > 0).all()
    assert frame.set_index("config").loc["hash", "error"].strip() != ""
    text = (tmp_path / "rgg_scale.md").read_text()
    assert "## 3,000 nodes" in text and "## 100,000,000 nodes: not run" in text
    assert "Not run at this size: kahip, spring, fennel, quotient." in text
    best = finished.loc[["metis", "kaminpar default"], "edge_cut"].min()
    ratio = finished.loc["quotient_best", "edge_cut"] / best
    assert f"`quotient_best`: cut {ratio:.3f}x" in text
