"""OGB's official metric, read from ogb's metadata and computed by its Evaluator, on small
fixtures in OGB's raw layout named like the real datasets (the graphs themselves are random)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from gnnbench.data.datasets import prepare_dataset
from gnnbench.train.ogb_metric import OgbMetric
from gnnbench.train.runner import run_training
from gnnbench.train.spec import spec_from_conf

pytest.importorskip("ogb")

TRAIN = {"mode": "centralized", "epochs": 2, "batch_size": 64, "fanouts": [5, 5]}
MODEL = {"name": "sage", "layers": 2, "hidden": 16, "dropout": 0.0}


def _csv(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as handle:
        handle.write("".join(",".join(map(str, row)) + "\n" for row in rows))


def write_ogb_fixture(root: Path, ogb_name: str, labels: np.ndarray, seed: int = 0) -> dict:
    """A 300-node random graph with features, `labels` and a split (150 / 80 / 70 nodes: sizes
    that tell the splits apart), in OGB's CSV raw layout."""
    rng = np.random.default_rng(seed)
    n = len(labels)
    raw = root / ogb_name.replace("-", "_") / "raw"
    _csv(raw / "edge.csv.gz", rng.integers(0, n, size=(4 * n, 2)))
    _csv(raw / "num-node-list.csv.gz", [[n]])
    _csv(raw / "node-feat.csv.gz", np.round(rng.random((n, 6)), 3))
    _csv(raw / "node-label.csv.gz", labels.reshape(n, -1))
    order = rng.permutation(n)
    split = root / ogb_name.replace("-", "_") / "split" / "fixture"
    for part, ids in (("train", order[:150]), ("valid", order[150:230]), ("test", order[230:])):
        _csv(split / f"{part}.csv.gz", ids.reshape(-1, 1))
    return {"name": ogb_name, "source": "ogb", "path": str(root), "ogb_name": ogb_name}


def test_metric_comes_from_ogb_metadata():
    assert OgbMetric("ogbn-arxiv").metric == "acc"
    assert OgbMetric("ogbn-proteins").metric == "rocauc"
    assert OgbMetric.for_dataset("ogbn-not-a-dataset") is None
    assert OgbMetric.for_dataset(None) is None


def test_accuracy_for_ogbn_arxiv(tmp_path, gnnbench_home):
    """ogbn-arxiv's metric is accuracy: for one label per node it equals micro-F1."""
    labels = np.random.default_rng(1).integers(0, 5, size=300)
    store = prepare_dataset(write_ogb_fixture(tmp_path, "ogbn-arxiv", labels))
    assert store.meta["ogb_name"] == "ogbn-arxiv"
    result = run_training(
        store_path=store.path,
        book_path=None,
        spec=spec_from_conf(TRAIN, MODEL, num_gpus=1, sync_interval=1, seed=0),
    )
    assert result.ogb["test_ogb_acc"] == pytest.approx(result.test_f1_micro)
    assert "val_ogb_acc" in result.ogb


def sklearn_rocauc(y_true: np.ndarray, y_score: np.ndarray) -> float:
    """sklearn's ROC-AUC per task, averaged over the tasks holding both a positive and a
    negative label (the others have none)."""
    from sklearn.metrics import roc_auc_score

    tasks = [t for t in range(y_true.shape[1]) if 0 < y_true[:, t].sum() < len(y_true)]
    return float(np.mean([roc_auc_score(y_true[:, t], y_score[:, t]) for t in tasks]))


def test_rocauc_is_sklearns_mean_over_tasks():
    """Scores from chance (task 0) to well apart (task 111); task 5 without a positive and task
    9 without a negative are left out of the mean."""
    rng = np.random.default_rng(4)
    y_true = (rng.random((300, 112)) < 0.3).astype(int)
    y_true[:, 5], y_true[:, 9] = 0, 1
    y_score = rng.normal(size=(300, 112)) + y_true * np.linspace(0, 3, 112)
    expected = sklearn_rocauc(y_true, y_score)
    assert OgbMetric("ogbn-proteins").score(y_true, y_score) == pytest.approx(expected, abs=1e-12)
    assert 0.6 < expected < 0.95  # neither chance nor perfect: a wrong mean would show


def test_rocauc_for_ogbn_proteins(tmp_path, gnnbench_home, monkeypatch):
    """ogbn-proteins' metric is ROC-AUC averaged over its 112 binary tasks: the val and test
    figures a trained model reports are sklearn's on the truth and scores the evaluation
    gathered at the best epoch, and that truth is the split's labels."""
    labels = (np.random.default_rng(2).random((300, 112)) < 0.3).astype(int)
    store = prepare_dataset(write_ogb_fixture(tmp_path, "ogbn-proteins", labels))
    assert store.multilabel and store.num_classes == 112
    split = {len(ids): key for key, ids in store.split().items() if key != "train"}
    scored: dict[str, list] = {"val": [], "test": []}
    score = OgbMetric.score

    def scoring(metric, y_true, y_pred):
        scored[split[len(y_true)]].append((y_true, y_pred))
        return score(metric, y_true, y_pred)

    monkeypatch.setattr(OgbMetric, "score", scoring)
    result = run_training(
        store_path=store.path,
        book_path=None,
        spec=spec_from_conf(TRAIN, MODEL, num_gpus=1, sync_interval=1, seed=0),
    )
    assert len(scored["val"]) == len(scored["test"]) == TRAIN["epochs"]  # one per evaluation
    for key in ("val", "test"):
        y_true, y_pred = scored[key][result.best_epoch - 1]
        assert y_pred.shape == (len(y_true), 112) and len(np.unique(y_pred)) > 2  # scores
        truth = store.labels()[store.split()[key]]
        assert sorted(map(tuple, y_true)) == sorted(map(tuple, truth))
        expected = sklearn_rocauc(y_true, y_pred)
        assert result.ogb[f"{key}_ogb_rocauc"] == pytest.approx(expected, abs=1e-12)


@pytest.mark.distributed
def test_ogb_metric_logged_by_a_distributed_run(tmp_path, gnnbench_home):
    """Two ranks gather their rows; the run logs test_ogb_acc next to the F1s."""
    from helpers.cli import gnnbench
    from helpers.runs import runs

    labels = np.random.default_rng(3).integers(0, 4, size=300)
    write_ogb_fixture(tmp_path / "raw", "ogbn-arxiv", labels)
    completed = gnnbench(
        tmp_path, "dataset=ogb", f"dataset.path={tmp_path / 'raw'}", "dataset.ogb_name=ogbn-arxiv",
        "train=model_avg", "train.epochs=1", "p=2", "train.fanouts=[5,5]",
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-2000:]
    _, found = runs(tmp_path)
    metrics = found[0].data.metrics
    assert metrics["test_ogb_acc"] == pytest.approx(metrics["test_f1_micro"])
