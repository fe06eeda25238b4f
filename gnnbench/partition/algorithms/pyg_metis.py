"""PyG's METIS path: `ClusterData(data, num_parts=p, recursive=False)` on an in-memory `Data`.

This is what PyG's (deprecated) `distributed.Partitioner` wrapped and what Cluster-GCN users run:
the whole graph as a `torch_geometric.data.Data` with features, labels and masks in memory, METIS
through torch-sparse (built with 64-bit METIS by `python -m gnnbench setup pyg_metis`), then the
node and edge permutation of every attribute. All of it is inside the measured step. torch-sparse
calls METIS with default options, so its internal seed is fixed and the run's seed does not reach
it: the partition is deterministic, but the same for every seed.
"""

from __future__ import annotations

import numpy as np

from gnnbench.data.store import GraphStore
from gnnbench.partition.base import PARTITIONERS, PartitionResult
from gnnbench.setup.baseline_envs import require_pyg_metis

# Bump when this module's output changes: part of every partition book's cache key.
VERSION = "1"


def load_pyg_data(store: GraphStore):
    """The whole store as a PyG `Data`: both edge directions, features, labels, split masks."""
    import torch
    from torch_geometric.data import Data

    edges = torch.from_numpy(store.edges().astype(np.int64))
    edge_index = torch.cat([edges.t(), edges.t().flip(0)], dim=1)
    del edges
    data = Data(edge_index=edge_index, num_nodes=store.num_nodes)
    if store.has_features:
        data.x = torch.from_numpy(store.features()[:])  # read into memory, as PyG does
    labels = store.labels()
    if labels is not None:
        data.y = torch.from_numpy(labels)
    for name, ids in store.split().items():
        mask = torch.zeros(store.num_nodes, dtype=torch.bool)
        mask[torch.from_numpy(ids.astype(np.int64))] = True
        data[f"{name}_mask"] = mask
    return data


@PARTITIONERS.register("pyg_metis")
def pyg_metis(store: GraphStore, p: int, seed: int, *, recursive: bool) -> PartitionResult:
    """Owner per node from ClusterData's partition pointer and node permutation."""
    require_pyg_metis()
    from torch_geometric.loader import ClusterData

    if p == 1:
        return PartitionResult(np.zeros(store.num_nodes, dtype=np.int32), {"passes": 1})
    data = load_pyg_data(store)
    clusters = ClusterData(data, num_parts=p, recursive=bool(recursive), log=False)
    sizes = np.diff(clusters.partition.partptr.numpy())
    owner = np.empty(store.num_nodes, dtype=np.int32)
    owner[clusters.partition.node_perm.numpy()] = np.repeat(np.arange(p, dtype=np.int32), sizes)
    return PartitionResult(owner, {"passes": 1})


pyg_metis.in_memory_baseline = True
