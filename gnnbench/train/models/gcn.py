"""GCN (Kipf & Welling) on the sampler's blocks, as DGL's GraphConv computes it on a block.

PyG's GCNConv needs a square graph, so the layer is written here: each target i aggregates
W h_j over its sampled neighbours j and itself, weighted 1 / sqrt(d_j d_i) with the block's
out-degree d_j of the source and in-degree d_i of the target, self-loops counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from gnnbench.train.models import MODELS, BlockStack, dropout_rate, layer_dims
from gnnbench.train.models.aggregate import csr_product, gcn_adjacency


class BlockGCNConv(nn.Module):
    """One symmetric-normalised graph convolution from a block's sources to its targets."""

    def __init__(self, in_dim: int, out_dim: int):
        super().__init__()
        self.linear = nn.Linear(in_dim, out_dim, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_dim))

    def forward(
        self, x: tuple[torch.Tensor, torch.Tensor], edge_index: torch.Tensor, size: tuple[int, int]
    ) -> torch.Tensor:
        num_src, num_dst = size
        # Aggregating before the linear map equals the reverse order (both are linear) and is
        # cheaper: a block has far more sources than targets.
        adjacency = gcn_adjacency(edge_index, num_src, num_dst, x[0].dtype)
        return self.linear(csr_product(adjacency, x[0])) + self.bias


@MODELS.register("gcn")
def build_gcn(in_dim: int, out_dim: int, config: Mapping[str, Any]) -> BlockStack:
    dims = layer_dims(in_dim, out_dim, config)
    convs = [BlockGCNConv(dims[i], dims[i + 1]) for i in range(len(dims) - 1)]
    return BlockStack(convs, dropout_rate(config))
