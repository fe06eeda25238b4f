"""PyG's METIS path: `ClusterData(data, num_parts=p, recursive=False)` on an in-memory `Data`.

This is what PyG's (deprecated) `distributed.Partitioner` wrapped and what Cluster-GCN users run:
the whole graph as a `torch_geometric.data.Data`, METIS through torch-sparse (built with 64-bit
METIS by `python -m gnnbench setup pyg_metis`), then the node and edge permutation of every
attribute. torch-sparse calls METIS with default options, so its internal seed is fixed and the
run's seed does not reach it: the partition is deterministic, but the same for every seed.

Two figures (docs/design.md, "Metrics"). The measured step partitions the structure only (a
`Data` holding the edges), the work every partitioner does: `partition_*`. A PyG user also loads
and permutes features, labels and split masks with it: that run goes to a child process of its
own (this module's `main`), measured the same way, and is logged
as `partition_with_features_*`. The child's wall time is not the structure's: `partition_time_s`
is the structure-only run's own.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from gnnbench.data.store import GraphStore
from gnnbench.partition.base import PartitionResult, register_partitioner
from gnnbench.process import lifecycle
from gnnbench.process.atomic import scratch_directory
from gnnbench.setup.baseline_envs import require_pyg_metis

# Bump when this module's output changes: part of every partition book's cache key.
VERSION = "2"  # 2: structure-only partition_* and partition_with_features_* (one meter)


def load_pyg_data(store: GraphStore, node_data: bool):
    """The store as a PyG `Data`: both edge directions, and with `node_data` the features,
    labels and split masks a PyG user loads."""
    import torch
    from torch_geometric.data import Data

    edges = torch.from_numpy(store.edges().astype(np.int64))
    edge_index = torch.cat([edges.t(), edges.t().flip(0)], dim=1)
    del edges
    data = Data(edge_index=edge_index, num_nodes=store.num_nodes)
    if not node_data:
        return data
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


def cluster_owner(store: GraphStore, p: int, recursive: bool, node_data: bool) -> np.ndarray:
    """Owner per node from ClusterData's partition pointer and node permutation."""
    from torch_geometric.loader import ClusterData

    data = load_pyg_data(store, node_data)
    clusters = ClusterData(data, num_parts=p, recursive=bool(recursive), log=False)
    sizes = np.diff(clusters.partition.partptr.numpy())
    owner = np.empty(store.num_nodes, dtype=np.int32)
    owner[clusters.partition.node_perm.numpy()] = np.repeat(np.arange(p, dtype=np.int32), sizes)
    return owner


# partition_with_features_*: docs/design.md
@register_partitioner("pyg_metis", in_memory_baseline=True, with_features_figures=True)
def pyg_metis(store: GraphStore, p: int, seed: int, *, recursive: bool) -> PartitionResult:
    """Owner per node from the structure-only run; the with-features run measured beside it."""
    require_pyg_metis()
    if p == 1:
        return PartitionResult(np.zeros(store.num_nodes, dtype=np.int32), {"passes": 1})
    started = time.perf_counter()
    owner = cluster_owner(store, p, recursive, node_data=False)
    measured = {"partition_time_s": time.perf_counter() - started}
    measured.update(_with_features(store, p, recursive))
    return PartitionResult(owner, {"passes": 1}, measured)


def _with_features(store: GraphStore, p: int, recursive: bool) -> dict[str, float]:
    """The run with node data in a process of its own (one memray tracker per process)."""
    with scratch_directory("pyg-metis") as scratch:
        out = Path(scratch) / "result.json"
        # imported, not run as __main__: a second copy of this module would register it twice
        command = [sys.executable, "-c", f"import sys; from {__name__} import main; sys.exit(main())",
                   "--store", str(store.path), "--p", str(p), "--out", str(out),
                   *(["--recursive"] if recursive else [])]  # fmt: skip
        completed = subprocess.run(
            command, capture_output=True, text=True, preexec_fn=lifecycle.tied_to_parent()
        )
        if completed.returncode != 0 or not out.is_file():
            tail = "\n".join(completed.stderr.strip().splitlines()[-15:])
            raise RuntimeError(f"pyg_metis with features exited {completed.returncode}:\n{tail}")
        return json.loads(out.read_text())


def main(argv: list[str] | None = None) -> int:
    from torch_geometric.loader import ClusterData  # noqa: F401  (imports stay unmeasured)

    from gnnbench.partition.stage.runner import tracked

    parser = argparse.ArgumentParser(description="pyg_metis with node data, measured")
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--p", type=int, required=True)
    parser.add_argument("--recursive", action="store_true")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    store = GraphStore(args.store)
    _, peak_mb, rss_mb, seconds = tracked(
        args.out.with_suffix(".memray"),
        lambda: cluster_owner(store, args.p, args.recursive, node_data=True),
        "pyg_metis with features",
    )
    figures = {"peak_mb": peak_mb, "rss_mb": rss_mb, "time_s": seconds}
    args.out.write_text(json.dumps({f"partition_with_features_{k}": v for k, v in figures.items()}))
    return 0
