"""CM-GCN's measured cost model (gnnbench/train/cost_model.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gnnbench.train.cost_model import FIELDS, LayerCosts, calibrate
from gnnbench.train.group import RankGroup
from gnnbench.train.models import build_model
from gnnbench.train.sampler import Block

SAGE = {"name": "sage", "hidden": 16, "layers": 2, "dropout": 0.5}


def test_calibration_measures_every_layer_and_leaves_the_random_stream_alone():
    torch.manual_seed(0)
    model = build_model(32, 4, SAGE)
    before = torch.random.get_rng_state()
    costs = calibrate(model, 32, RankGroup(0, 1, torch.device("cpu")))
    assert torch.equal(torch.random.get_rng_state(), before)  # training draws as without it
    assert costs.seconds.shape == (2, len(FIELDS)) and (costs.seconds >= 0).all()
    assert costs.seconds[:, [0, 2]].sum() > 0  # a layer's transforms take time
    assert all(p.grad is None for p in model.parameters())
    metrics = costs.as_metrics()
    assert len(metrics) == 8 and "cost_model_backward_edge_us_l2" in metrics


def test_a_model_without_blocks_has_no_cost_model():
    model = build_model(32, 4, {**SAGE, "name": "mlp"})
    assert calibrate(model, 32, RankGroup(0, 1, torch.device("cpu"))) is None


def test_batch_seconds_sums_node_and_edge_costs_per_layer():
    costs = LayerCosts(np.array([[1.0, 0.1, 2.0, 0.2], [10.0, 1.0, 20.0, 2.0]]))
    blocks = [Block(np.zeros((2, 7)), 9, 4), Block(np.zeros((2, 3)), 4, 2)]
    # layer 1: 4 targets x (1 + 2) + 7 edges x (0.1 + 0.2); layer 2: 2 x 30 + 3 x 3
    assert costs.batch_seconds(blocks) == 4 * 3 + 7 * 0.3 + 2 * 30 + 3 * 3


@pytest.mark.parametrize("extra", [{"name": "gat", "heads": 2}, {"name": "gcn"},
                                   {"input_nodes": 100}])  # fmt: skip
def test_every_block_model_is_calibrated(extra):
    """GAT's heads, GCN, and a model behind a learnable input table (its layers measured on
    inputs as wide as the table's rows, not on node ids)."""
    model = build_model(32, 4, {**SAGE, **extra})
    costs = calibrate(model, 32, RankGroup(0, 1, torch.device("cpu")))
    assert costs.seconds.shape == (2, len(FIELDS))
