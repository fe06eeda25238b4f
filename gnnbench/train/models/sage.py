"""GraphSAGE (mean aggregation) on the sampler's bipartite blocks: CATGNN's model."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import SAGEConv

from gnnbench.train.models import MODELS, dropout_rate, layer_dims
from gnnbench.train.sampler import Block


class GraphSage(nn.Module):
    """SAGEConv layers, ReLU and dropout between them; one block per layer."""

    uses_graph = True

    def __init__(self, dims: list[int], dropout: float):
        super().__init__()
        self.convs = nn.ModuleList(
            SAGEConv(dims[i], dims[i + 1], aggr="mean") for i in range(len(dims) - 1)
        )
        self.dropout = dropout

    @property
    def num_layers(self) -> int:
        return len(self.convs)

    def forward(self, x: torch.Tensor, blocks: list[Block]) -> torch.Tensor:
        h = x
        for i, (conv, block) in enumerate(zip(self.convs, blocks, strict=True)):
            h = conv((h, h[: block.num_dst]), block.edge_index, size=(block.num_src, block.num_dst))
            if i < self.num_layers - 1:
                h = F.dropout(F.relu(h), p=self.dropout, training=self.training)
        return h


@MODELS.register("sage")
def build_sage(in_dim: int, out_dim: int, config: Mapping[str, Any]) -> GraphSage:
    return GraphSage(layer_dims(in_dim, out_dim, config), dropout_rate(config))
