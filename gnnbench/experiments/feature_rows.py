"""Copy vs shared feature rows on a generated graph (scripts/feature_rows.py): the GNN-ready
step's time, the book's disk, and the time to gather random batches of rows, printed as a table
(the script's docstring says what each figure measures)."""

from __future__ import annotations

import os
import time

import numpy as np

from gnnbench.data.datasets import prepare_dataset
from gnnbench.partition.spec import PartitionSpec
from gnnbench.partition.stage.runner import run_partition_stage
from gnnbench.process.atomic import disk_bytes


def gather_seconds(book, rows_per_batch: int, batches: int) -> float:
    """Seconds per batch to gather `rows_per_batch` random local rows of each partition in turn."""
    rng = np.random.default_rng(0)
    started = time.perf_counter()
    for batch in range(batches):
        part = book.load(batch % book.p)
        part.features[rng.integers(0, len(part.features), size=rows_per_batch)]
    return (time.perf_counter() - started) / batches


def compare(nodes: int, features: int, p: int, dtype: str, batch_rows: int, batches: int) -> None:
    """Import the graph with and without features, build an LDG book of each kind of feature
    rows, and print what each costs."""
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    config = {"name": "feature_rows", "source": "synthetic", "num_nodes": nodes}
    config.update(avg_degree=10, feature_dtype=dtype)
    bare = prepare_dataset({**config, "feature_dim": 0})
    store = prepare_dataset({**config, "feature_dim": features})
    feature_bytes = (store.path / "feat.npy").stat().st_size
    print(
        f"import heap peak: {bare.meta.get('import_peak_mb')} MB without features, "
        f"{store.meta.get('import_peak_mb')} MB with {features} ({feature_bytes / 2**20:.0f} "
        f"MB of {dtype} rows); import {store.meta.get('import_time_s')} s"
    )
    print("| feature rows | GNN-ready s | book MB | of which feat.npy MB | gather s per batch |")
    print("|---|---|---|---|---|")
    for rows in ("copy", "shared"):
        spec = PartitionSpec.defaults("ldg", feature_rows=rows)
        book, cached = run_partition_stage(store, partitioner=spec, p=p, seed=0)
        copies = sum(item.stat().st_size for item in book.path.glob("part-*/feat.npy"))
        seconds = gather_seconds(book, batch_rows, batches)
        print(
            f"| {rows} | {book.metrics['gnn_ready_time_s']:.1f}{' (cached)' if cached else ''} | "
            f"{disk_bytes(book.path) / 2**20:.0f} | {copies / 2**20:.0f} | {seconds:.3f} |"
        )
    rf = book.metrics["replication_factor"]
    print(f"RF {rf:.2f}: copy = RF x |V| x F x bytes = {rf * feature_bytes / 2**20:.0f} MB")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
