"""Copy vs shared feature rows on a generated graph: the disk and the time each costs.

    python scripts/feature_rows.py [--nodes 1000000] [--features 128] [--p 8] [--dtype float32]

Prepares the contextual DC-SBM (mean degree 10) with and without features (the import's heap
peak shows whether the features streamed), builds an LDG book that copies the feature rows and
one that shares the store's, and prints for each: the GNN-ready step's time, the book's bytes on
disk, and the time to gather the features of random batches of rows (--batch-rows, about what a
2-layer GraphSAGE batch of 512 seeds with fanouts 25, 10 reads) through
`PartitionBook.load(i).features`. Timings depend on the machine's
load: the line printed first says what it was.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from gnnbench.atomic import disk_bytes
from gnnbench.data.datasets import prepare_dataset
from gnnbench.partition.spec import PartitionSpec
from gnnbench.partition.stage import run_partition_stage


def gather_seconds(book, rows_per_batch: int, batches: int) -> float:
    """Seconds per batch to gather `rows_per_batch` random local rows of each partition in turn."""
    rng = np.random.default_rng(0)
    started = time.perf_counter()
    for batch in range(batches):
        part = book.load(batch % book.p)
        part.features[rng.integers(0, len(part.features), size=rows_per_batch)]
    return (time.perf_counter() - started) / batches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=128)
    parser.add_argument("--p", type=int, default=8)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--batch-rows", type=int, default=100_000)
    parser.add_argument("--batches", type=int, default=16)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    config = {"name": "feature_rows", "source": "synthetic", "num_nodes": args.nodes}
    config.update(avg_degree=10, feature_dtype=args.dtype)
    bare = prepare_dataset({**config, "feature_dim": 0})
    store = prepare_dataset({**config, "feature_dim": args.features})
    feature_bytes = (store.path / "feat.npy").stat().st_size
    print(
        f"import heap peak: {bare.meta.get('import_peak_mb')} MB without features, "
        f"{store.meta.get('import_peak_mb')} MB with {args.features} ({feature_bytes / 2**20:.0f} "
        f"MB of {args.dtype} rows); import {store.meta.get('import_time_s')} s"
    )
    print("| feature rows | GNN-ready s | book MB | of which feat.npy MB | gather s per batch |")
    print("|---|---|---|---|---|")
    for rows in ("copy", "shared"):
        spec = PartitionSpec.defaults("ldg", feature_rows=rows)
        book, cached = run_partition_stage(store, partitioner=spec, p=args.p, seed=0)
        copies = sum(item.stat().st_size for item in book.path.glob("part-*/feat.npy"))
        seconds = gather_seconds(book, args.batch_rows, args.batches)
        print(
            f"| {rows} | {book.metrics['gnn_ready_time_s']:.1f}{' (cached)' if cached else ''} | "
            f"{disk_bytes(book.path) / 2**20:.0f} | {copies / 2**20:.0f} | {seconds:.3f} |"
        )
    rf = book.metrics["replication_factor"]
    print(f"RF {rf:.2f}: copy = RF x |V| x F x bytes = {rf * feature_bytes / 2**20:.0f} MB")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
