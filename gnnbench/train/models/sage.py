"""GraphSAGE (mean aggregation) on the sampler's bipartite blocks: CATGNN's model."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torch_geometric.nn import SAGEConv

from gnnbench.train.models import MODELS, BlockStack, dropout_rate, layer_dims


@MODELS.register("sage")
def build_sage(in_dim: int, out_dim: int, config: Mapping[str, Any]) -> BlockStack:
    dims = layer_dims(in_dim, out_dim, config)
    convs = [SAGEConv(dims[i], dims[i + 1], aggr="mean") for i in range(len(dims) - 1)]
    return BlockStack(convs, dropout_rate(config))
