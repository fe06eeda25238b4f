"""GraphSAGE (mean aggregation) on the sampler's bipartite blocks: CATGNN's model."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch_geometric.nn import SAGEConv

from gnnbench.train.models import MODELS, BlockStack, dropout_rate, layer_dims
from gnnbench.train.models.aggregate import csr_product, mean_adjacency


class BlockSAGEConv(SAGEConv):
    """PyG's SAGEConv (same parameters, initialisation and state_dict keys) whose mean over a
    block's neighbours is a CSR product instead of PyG's gather-and-scatter."""

    def forward(
        self,
        x: tuple[torch.Tensor, torch.Tensor],
        edge_index: torch.Tensor,
        size: tuple[int, int],
    ) -> torch.Tensor:
        source_x, target_x = x
        num_src, num_dst = size
        if self.project:  # PyG projects the sources before aggregating them
            source_x = self.lin(source_x).relu()
        adjacency = mean_adjacency(edge_index, num_src, num_dst, source_x.dtype)
        out = self.lin_l(csr_product(adjacency, source_x))
        if self.root_weight:
            out = out + self.lin_r(target_x)
        if self.normalize:
            out = F.normalize(out, p=2.0, dim=-1)
        return out


@MODELS.register("sage")
def build_sage(in_dim: int, out_dim: int, config: Mapping[str, Any]) -> BlockStack:
    dims = layer_dims(in_dim, out_dim, config)
    convs = [BlockSAGEConv(dims[i], dims[i + 1], aggr="mean") for i in range(len(dims) - 1)]
    return BlockStack(convs, dropout_rate(config))
