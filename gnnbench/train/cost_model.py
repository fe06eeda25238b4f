"""CM-GCN's cost model (its Eq. 6-13): computing node v at layer k costs c_f(v, k) forward and
c_b(v, k) backward, and a batch costs C(B), their sum over the (node, layer) pairs of its
computational graph. The constants are measured here, for the run's model on the rank's device:
each layer is timed forward and backward on two synthetic blocks (NODES destination nodes with 1
and with DEGREE_HIGH neighbours each), which splits a layer's time into a cost per destination
node (its linear transforms) and a cost per edge (its aggregation), so that
c(v, k) = node_k + deg_k(v) * edge_k. Rank 0 calibrates while the others wait; every rank uses
its figures (an all-reduce), so C(B) is the same on each.

`computation_cost_s` is C(B) summed over an epoch's batches on every rank: the compute the
model predicts, beside the unit count `computation_cost` and the measured `compute_time_s`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from gnnbench.train.group import RankGroup
from gnnbench.train.sampler import Block

NODES = 128  # destination nodes of a calibration block
DEGREE_LOW, DEGREE_HIGH = 1, 8  # neighbours per destination node of the two blocks
REPEATS = 3  # timings per block and direction; the median is kept (the first warms up)
FIELDS = ("forward_node", "forward_edge", "backward_node", "backward_edge")


@dataclass(frozen=True)
class LayerCosts:
    """Seconds per destination node and per edge of each layer, forward and backward; row k of
    `seconds` is layer k + 1, its columns FIELDS."""

    seconds: np.ndarray  # (layers, 4)

    def batch_seconds(self, blocks: list) -> float:
        """C(B) of a batch from its blocks (block k feeds layer k + 1)."""
        total = 0.0
        for (node_f, edge_f, node_b, edge_b), block in zip(self.seconds, blocks, strict=False):
            edges = block.edge_index.shape[1]
            total += block.num_dst * (node_f + node_b) + edges * (edge_f + edge_b)
        return total

    def as_metrics(self) -> dict[str, float]:
        """cost_model_<field>_us_l<k>: the constants in microseconds, as MLflow logs them."""
        return {
            f"cost_model_{field}_us_l{k + 1}": float(value * 1e6)
            for k, row in enumerate(self.seconds)
            for field, value in zip(FIELDS, row, strict=True)
        }


def _block(degree: int, device: torch.device) -> Block:
    """NODES targets (sources 0..NODES-1, the bipartite convention), each with `degree` other
    sources of its own."""
    targets = torch.arange(NODES, device=device).repeat_interleave(degree)
    sources = NODES + torch.arange(NODES * degree, device=device)
    return Block(torch.stack([sources, targets]), NODES * (1 + degree), NODES)


def _sync(device: torch.device) -> float:
    """The time now, once the device has finished what it was given."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


def _layer_seconds(model: nn.Module, layer: int, width: int, degree: int, device) -> tuple:
    """Median (forward, backward) seconds of one layer on a block of `degree`, and its width."""
    block = _block(degree, device)
    forward, backward = [], []
    for _ in range(REPEATS):
        x = torch.randn(block.num_src, width, device=device, requires_grad=True)
        started = _sync(device)
        out = model.layer(layer, x, block)
        computed = _sync(device)
        out.sum().backward()
        forward.append(computed - started)
        backward.append(_sync(device) - computed)
    return float(np.median(forward)), float(np.median(backward)), out.shape[1]


def measure(model: nn.Module, num_features: int, device: torch.device) -> np.ndarray:
    """The (layers, 4) constants of a BlockStack model; its weights' gradients are cleared."""
    rows, width = [], num_features
    was_training = model.training
    model.train()
    for layer in range(model.num_layers):
        f_low, b_low, _ = _layer_seconds(model, layer, width, DEGREE_LOW, device)
        f_high, b_high, width = _layer_seconds(model, layer, width, DEGREE_HIGH, device)
        per_edge = [max(0.0, (high - low) / (NODES * (DEGREE_HIGH - DEGREE_LOW)))
                    for low, high in ((f_low, f_high), (b_low, b_high))]  # fmt: skip
        per_node = [max(0.0, low / NODES - DEGREE_LOW * edge)
                    for low, edge in zip((f_low, b_low), per_edge, strict=True)]  # fmt: skip
        rows.append([per_node[0], per_edge[0], per_node[1], per_edge[1]])
    model.zero_grad(set_to_none=True)
    model.train(was_training)
    return np.asarray(rows, dtype=np.float64)


def calibrate(model: nn.Module, num_features: int, group: RankGroup) -> LayerCosts | None:
    """Rank 0's measurement, shared with every rank; None for a model without layers over
    blocks (an MLP: C(B) is its inputs alone). A model behind a learnable input table
    (EmbeddingInput) is measured on its layers, their inputs as wide as the table's rows."""
    if hasattr(model, "table") and hasattr(model, "inner"):
        model, num_features = model.inner, model.table.embedding_dim
    if not hasattr(model, "layer") or not getattr(model, "num_layers", 0):
        return None
    if group.rank == 0:
        devices = [group.device] if group.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):  # training's random stream is left as is
            seconds = torch.from_numpy(measure(model, num_features, group.device))
    else:
        seconds = torch.zeros((model.num_layers, len(FIELDS)), dtype=torch.float64)
    return LayerCosts(group.all_reduce(seconds).numpy())
