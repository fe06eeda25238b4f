"""Model registry: one module per model registers a builder `(in_dim, out_dim, config) -> Module`.

A model's forward is `forward(x, blocks)`: x holds the features of the batch's n_id, blocks are the
sampler's blocks in model order (empty for models with `uses_graph = False`, whose x is the seeds').
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from gnnbench.errors import ConfigError
from gnnbench.process.atomic import scratch_directory
from gnnbench.registry import Registry
from gnnbench.spec_keys import whole_at_least

ModelBuilder = Callable[[int, int, Mapping[str, Any]], nn.Module]
MODELS: Registry[ModelBuilder] = Registry("model", "gnnbench.train.models", "model.name")


def layer_dims(in_dim: int, out_dim: int, config: Mapping[str, Any]) -> list[int]:
    """[in, hidden, ..., hidden, out] for config.layers layers of width config.hidden."""
    layers, hidden = config["layers"], config["hidden"]  # defaults: gnnbench/conf/model/*.yaml
    for key, value in (("layers", layers), ("hidden", hidden)):
        whole_at_least(f"model.{key}", value, 1)
    return [in_dim] + [hidden] * (layers - 1) + [out_dim]


def dropout_rate(config: Mapping[str, Any]) -> float:
    rate = config["dropout"]
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 <= rate < 1:
        raise ConfigError(f"model.dropout: expected a number in [0, 1), got {rate!r}")
    return float(rate)


def relu_dropout(h: torch.Tensor, rate: float, training: bool) -> torch.Tensor:
    """ReLU, then inverted dropout (keep with probability 1 - rate, scale by 1 / (1 - rate)), as
    one mask product. The keep mask comes from uniform draws: torch's CPU bernoulli_, which
    F.dropout uses, took 56 ms against uniform_'s 14 ms on a 5,300 x 256 batch (10% of an epoch)."""
    if not training or rate == 0:
        return F.relu(h)
    keep = (torch.rand_like(h) >= rate).logical_and_(h > 0)
    return h * keep.to(h.dtype).mul_(1.0 / (1.0 - rate))


@contextlib.contextmanager
def generated_code_removed() -> Iterator[None]:
    """PyG's message-passing layers write a generated module per layer class into the temporary
    folder the first time a process builds one, and never delete it (torch_geometric/template.py):
    a file per class per training process, hundreds in /tmp after a day of runs. Layers built in
    this block write into a private folder, removed when it ends (the modules stay imported)."""
    with scratch_directory("pyg-code") as folder:
        previous, tempfile.tempdir = tempfile.tempdir, str(folder)
        try:
            yield
        finally:
            tempfile.tempdir = previous


def build_model(in_dim: int, out_dim: int, config: Mapping[str, Any]) -> nn.Module:
    """The registered model named by config.name; with config.input_nodes, behind a learnable
    input table (EmbeddingInput) whose rows are as wide as its hidden layers."""
    builder = MODELS.get(str(config["name"]))
    rows = config.get("input_nodes")
    with generated_code_removed():
        if rows is None:
            return builder(in_dim, out_dim, config)
        width = int(config["hidden"])
        return EmbeddingInput(int(rows), width, builder(width, out_dim, config))


class EmbeddingInput(nn.Module):
    """A model whose inputs are learnable: x's one column holds node ids (dataset.features=
    embedding), looked up in `table` before the first layer. The table is part of the model's
    state_dict, so model and gradient averaging average it with the layers."""

    def __init__(self, rows: int, width: int, inner: nn.Module):
        super().__init__()
        self.inner = inner  # built for inputs `width` wide
        self.table = nn.Embedding(rows, width)
        self.uses_graph = inner.uses_graph

    @property
    def num_layers(self) -> int:
        return self.inner.num_layers

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return self.table(x[:, 0].long())

    def forward(self, x: torch.Tensor, blocks: list) -> torch.Tensor:
        return self.inner(self.embed(x), blocks)

    def layer(self, i: int, h: torch.Tensor, block) -> torch.Tensor:
        """Layer-wise inference: layer 0 reads the table's rows of the ids in h."""
        return self.inner.layer(i, self.embed(h) if i == 0 else h, block)


class BlockStack(nn.Module):
    """Message-passing layers over the sampler's blocks, one block per layer, ReLU and dropout
    between them. Each layer is called as `conv((h, h[:num_dst]), edge_index, size=...)`: the
    block's targets are its first num_dst sources (PyG's bipartite convention)."""

    uses_graph = True

    def __init__(self, convs: list[nn.Module], dropout: float):
        super().__init__()
        self.convs = nn.ModuleList(convs)
        self.dropout = dropout

    @property
    def num_layers(self) -> int:
        return len(self.convs)

    def forward(self, x: torch.Tensor, blocks: list) -> torch.Tensor:
        if len(blocks) != self.num_layers:
            raise ValueError(f"{self.num_layers} layers need as many blocks, got {len(blocks)}")
        h = x
        for i, block in enumerate(blocks):
            h = self.layer(i, h, block)
        return h

    def layer(self, i: int, h: torch.Tensor, block) -> torch.Tensor:
        """Layer i on one block: its targets' outputs, activated unless it is the last layer
        (layer-wise inference calls it directly, one layer over the whole graph at a time)."""
        conv = self.convs[i]
        h = conv((h, h[: block.num_dst]), block.edge_index, size=(block.num_src, block.num_dst))
        if i < self.num_layers - 1:
            h = relu_dropout(h, self.dropout, self.training)
        return h
