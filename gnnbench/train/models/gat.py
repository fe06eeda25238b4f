"""GAT (Velickovic et al.) on the sampler's blocks; CATGNN trains it with 4 heads.

Hidden layers concatenate `heads` heads of hidden/heads channels (so their width is model.hidden);
the output layer averages its heads. Self-loops are the block's first num_dst nodes, which are
the targets themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torch_geometric.nn import GATConv

from gnnbench.errors import ConfigError
from gnnbench.spec_keys import whole_at_least
from gnnbench.train.models import MODELS, BlockStack, dropout_rate, layer_dims


@MODELS.register("gat")
def build_gat(in_dim: int, out_dim: int, config: Mapping[str, Any]) -> BlockStack:
    dims = layer_dims(in_dim, out_dim, config)
    heads = whole_at_least("model.heads", config["heads"], 1)
    if len(dims) > 2 and dims[1] % heads:
        raise ConfigError(f"model.hidden={dims[1]}: expected a multiple of model.heads={heads}")
    last = len(dims) - 2
    convs = [
        GATConv(dims[i], dims[i + 1] // heads, heads=heads)
        if i < last
        else GATConv(dims[i], dims[i + 1], heads=heads, concat=False)
        for i in range(len(dims) - 1)
    ]
    return BlockStack(convs, dropout_rate(config))
