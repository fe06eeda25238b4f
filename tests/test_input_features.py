"""Graphs without node features train on degree, one-hot degree, random or embedding inputs
(`dataset.features`, gnnbench/data/input_features.py)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from helpers.cli import gnnbench

from gnnbench.data.datasets import prepare_dataset
from gnnbench.data.input_features import ONEHOT_DEGREES, RANDOM_DIM
from gnnbench.errors import ConfigError


def featureless_blogcatalog(path: Path, num_nodes: int = 60, classes: int = 4) -> Path:
    """BlogCatalog's layout: a sparse `network` and a sparse 0/1 multi-label `group`, no features."""
    rng = np.random.default_rng(0)
    adjacency = sp.random(num_nodes, num_nodes, density=0.08, random_state=1, format="csc")
    adjacency.data[:] = 1
    group = sp.csc_matrix((rng.random((num_nodes, classes)) < 0.3).astype(np.float64))
    scipy.io.savemat(path, {"network": adjacency, "group": group})
    return path


def store_of(path: Path, features: str):
    config = {"name": "blog", "source": "mat", "path": str(path), "labels_key": "group"}
    return prepare_dataset({**config, "features": features})


def test_each_kind_gives_its_inputs(gnnbench_home, tmp_path):
    path = featureless_blogcatalog(tmp_path / "blog.mat")
    bare = store_of(path, "none")
    assert not bare.has_features
    degree = bare.degree()
    expected = {
        "degree": np.log1p(degree.astype(np.float32)).reshape(-1, 1),
        "onehot": np.eye(ONEHOT_DEGREES, dtype=np.float32)[np.minimum(degree, ONEHOT_DEGREES - 1)],
        "embedding": np.arange(bare.num_nodes, dtype=np.float32).reshape(-1, 1),
    }
    fingerprints = {bare.fingerprint}
    for kind in ("degree", "onehot", "random", "embedding"):
        store = store_of(path, kind)
        assert store.path != bare.path and store.meta["input_features"] == kind
        features = np.asarray(store.features())
        if kind == "random":
            assert features.shape == (bare.num_nodes, RANDOM_DIM)
            np.testing.assert_array_equal(features, store_of(path, kind).features())  # seeded
        else:
            np.testing.assert_array_equal(features, expected[kind])
        assert store.feature_dim == features.shape[1]
        fingerprints.add(store.fingerprint)  # books of the featureless store are never reused
    assert len(fingerprints) == 5
    assert not store_of(path, "none").has_features  # untouched by the others


def test_an_unknown_kind_is_one_line(gnnbench_home, tmp_path):
    path = featureless_blogcatalog(tmp_path / "blog.mat")
    with pytest.raises(ConfigError, match=r"^dataset\.features: expected one of none, degree"):
        store_of(path, "pagerank")


def train(cwd: Path, path: Path, *overrides: str) -> subprocess.CompletedProcess:
    return gnnbench(
        cwd, "dataset=mat", f"dataset.path={path}", "dataset.labels_key=group", "p=2",
        "num_gpus=2", "train.epochs=2", *overrides,
    )  # fmt: skip


@pytest.mark.distributed
def test_featureless_mat_trains_on_degree(gnnbench_home, tmp_path):
    """Without dataset.features the run says which key to set; with degree it trains on two
    partitions (model averaging) to a test F1."""
    path = featureless_blogcatalog(tmp_path / "blog.mat")
    refused = train(tmp_path, path, "train=model_avg")
    assert refused.returncode == 2 and "set dataset.features=degree" in refused.stderr
    completed = train(tmp_path, path, "train=model_avg", "dataset.features=degree")
    assert completed.returncode == 0, completed.stderr[-2000:]
    log = completed.stdout + completed.stderr  # Hydra's job log goes to stdout
    assert re.search(r"train: model_avg test micro-F1=\d", log)


def test_the_embedding_table_is_part_of_the_averaged_state():
    """dataset.features=embedding: the model's first step looks node ids up in a learnable table
    whose rows are in state_dict, which model averaging averages (and grad_avg's parameters)."""
    import torch

    from gnnbench.train.models import build_model

    config = {"name": "sage", "layers": 2, "hidden": 8, "dropout": 0.0, "input_nodes": 10}
    models = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        models.append(build_model(1, 3, config))
    assert models[0].state_dict()["table.weight"].shape == (10, 8)
    assert "table.weight" in dict(models[0].named_parameters())
    ids = torch.tensor([[3.0], [7.0]])
    np.testing.assert_array_equal(
        models[0].embed(ids).detach(), models[0].table.weight[[3, 7]].detach()
    )
    averaged = {
        k: (models[0].state_dict()[k] + models[1].state_dict()[k]) / 2
        for k in models[0].state_dict()
    }
    models[0].load_state_dict(averaged)
    assert torch.equal(models[0].table.weight, averaged["table.weight"])


@pytest.mark.slow
@pytest.mark.distributed
def test_featureless_mat_trains_on_a_learnable_embedding(gnnbench_home, tmp_path):
    path = featureless_blogcatalog(tmp_path / "blog.mat")
    completed = train(tmp_path, path, "train=model_avg", "dataset.features=embedding")
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert re.search(r"train: model_avg test micro-F1=\d", completed.stdout + completed.stderr)
