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


class BlockGCNConv(nn.Module):
    """One symmetric-normalised graph convolution from a block's sources to its targets."""

    def __init__(self, in_dim: int, out_dim: int):
        super().__init__()
        self.linear = nn.Linear(in_dim, out_dim, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_dim))

    def forward(self, x: tuple[torch.Tensor, torch.Tensor], edge_index: torch.Tensor, size):
        num_src, num_dst = size
        loops = torch.arange(num_dst, device=edge_index.device)
        source = torch.cat([edge_index[0], loops])
        target = torch.cat([edge_index[1], loops])
        ones = torch.ones(source.numel(), device=source.device)
        out_degree = torch.zeros(num_src, device=source.device).index_add_(0, source, ones)
        in_degree = torch.zeros(num_dst, device=source.device).index_add_(0, target, ones)
        weight = (out_degree[source] * in_degree[target]).rsqrt()
        h = self.linear(x[0])
        out = torch.zeros(num_dst, h.size(1), device=h.device, dtype=h.dtype)
        out.index_add_(0, target, h[source] * weight.unsqueeze(1).to(h.dtype))
        return out + self.bias


@MODELS.register("gcn")
def build_gcn(in_dim: int, out_dim: int, config: Mapping[str, Any]) -> BlockStack:
    dims = layer_dims(in_dim, out_dim, config)
    convs = [BlockGCNConv(dims[i], dims[i + 1]) for i in range(len(dims) - 1)]
    return BlockStack(convs, dropout_rate(config))
