"""Feature-only baseline (same layers and width as the GNN): what the graph adds is the gap."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from gnnbench.train.models import MODELS, dropout_rate, layer_dims, relu_dropout
from gnnbench.train.sampler import Block


class Mlp(nn.Module):
    """Linear layers, ReLU and dropout between them; ignores the graph (no neighbours sampled)."""

    uses_graph = False

    def __init__(self, dims: list[int], dropout: float):
        super().__init__()
        self.linears = nn.ModuleList(nn.Linear(dims[i], dims[i + 1]) for i in range(len(dims) - 1))
        self.dropout = dropout

    @property
    def num_layers(self) -> int:
        return len(self.linears)

    def forward(self, x: torch.Tensor, blocks: list[Block]) -> torch.Tensor:
        h = x
        for i, linear in enumerate(self.linears):
            h = linear(h)
            if i < len(self.linears) - 1:
                h = relu_dropout(h, self.dropout, self.training)
        return h


@MODELS.register("mlp")
def build_mlp(in_dim: int, out_dim: int, config: Mapping[str, Any]) -> Mlp:
    return Mlp(layer_dims(in_dim, out_dim, config), dropout_rate(config))
