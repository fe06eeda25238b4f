"""DistDGL's METIS partitioning of a GraphStore; runs inside the DistDGL environment, not gnnbench's.

    <envs/distdgl>/bin/python distdgl_driver.py --store DIR --parts P --seed S --out DIR [--features]

DGL 2.1.0 needs torch <= 2.2.1, so this script imports only the standard library, numpy, torch,
dgl and memray, and reads the GraphStore files directly. It builds a `DGLGraph` of the structure
and the training mask the partition balances, with `--features` also the features, labels and
validation and test masks, as DGL's distributed examples do (docs/design.md, "Metrics": the
structure-only figure is the one every partitioner reports), and calls
`dgl.distributed.partition_graph(..., part_method="metis", num_hops=1, balance_edges=True,
return_mapping=True)`. Loading and partitioning run under one memray tracker (imports do not, as
in gnnbench's own stage). It writes `result.json` (peak_mb, rss_mb, seconds, or error) and
`owner.npy` (DGL's partition of every original node id) to --out. rss_mb follows
gnnbench/process/peak_rss.py (not importable here): the resident peak since a reset when the step starts.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np


def load_graph(store: Path, features: bool):
    """The GraphStore as a DGLGraph with both edge directions and the training mask; with
    `features` also node features, labels and the validation and test masks."""
    import dgl
    import torch

    meta = json.loads((store / "meta.json").read_text())
    num_nodes = int(meta["num_nodes"])
    id_dtype = np.dtype(meta["id_dtype"]).newbyteorder("<")
    edges = np.fromfile(store / "edges.bin", dtype=id_dtype).reshape(-1, 2)
    src = torch.from_numpy(np.concatenate([edges[:, 0], edges[:, 1]]).astype(np.int64))
    dst = torch.from_numpy(np.concatenate([edges[:, 1], edges[:, 0]]).astype(np.int64))
    del edges
    graph = dgl.graph((src, dst), num_nodes=num_nodes)
    del src, dst
    for name, key in (("feat.npy", "feat"), ("label.npy", "label")) if features else ():
        if (store / name).is_file():
            graph.ndata[key] = torch.from_numpy(np.load(store / name))
    with np.load(store / "split.npz") as split:
        for name in ("train", "val", "test") if features else ("train",):
            mask = torch.zeros(num_nodes, dtype=torch.bool)
            mask[torch.from_numpy(split[name].astype(np.int64))] = True
            graph.ndata[f"{name}_mask"] = mask
    return graph


def partition(store: Path, parts: int, seed: int, out: Path, features: bool) -> np.ndarray:
    """Run partition_graph; return the owner partition of every original node id."""
    import dgl
    import torch

    dgl.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    graph = load_graph(store, features)
    orig_nids, _ = dgl.distributed.partition_graph(
        graph,
        "graph",
        parts,
        str(out / "dgl"),
        part_method="metis",
        num_hops=1,
        balance_ntypes=graph.ndata["train_mask"],
        balance_edges=True,
        return_mapping=True,
    )
    del graph
    config = json.loads((out / "dgl" / "graph.json").read_text())
    ranges = np.asarray(config["node_map"]["_N"], dtype=np.int64)  # [start, end) per partition
    owner_by_new_id = np.repeat(np.arange(parts, dtype=np.int32), ranges[:, 1] - ranges[:, 0])
    owner = np.empty(len(owner_by_new_id), dtype=np.int32)
    owner[orig_nids.numpy()] = owner_by_new_id
    return owner


def reset_peak_rss() -> None:
    """Start the resident high-water mark at the current size (Linux >= 4.0), as
    gnnbench/process/peak_rss.py does: ru_maxrss would carry the launcher's size across fork and exec."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass  # VmHWM stays the peak since exec, imports included: an upper bound


def peak_rss_mb() -> float:
    """VmHWM (MB): the resident peak since reset_peak_rss (the lifetime peak without /proc)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return float(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--parts", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--features", action="store_true", help="load node data as DGL users do")
    args = parser.parse_args()
    result: dict = {"peak_mb": None}
    try:
        import dgl  # noqa: F401  (imported before the tracker starts, as gnnbench's stage does)
        import dgl.distributed  # noqa: F401
        import memray

        tracker = args.out / "partition.memray"
        started = time.perf_counter()
        reset_peak_rss()
        try:
            with memray.Tracker(tracker):
                owner = partition(args.store, args.parts, args.seed, args.out, args.features)
            result["seconds"] = time.perf_counter() - started
            np.save(args.out / "owner.npy", owner)
        finally:
            if tracker.is_file():
                result["peak_mb"] = memray.FileReader(tracker).metadata.peak_memory / 2**20
    except Exception as exc:  # reported to gnnbench, which tells out-of-memory from other failures
        result["error"] = f"{type(exc).__name__}: {exc}"
    result["rss_mb"] = peak_rss_mb()
    (args.out / "result.json").write_text(json.dumps(result))
    return 1 if "error" in result else 0


if __name__ == "__main__":
    sys.exit(main())
