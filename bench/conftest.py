"""Benchmark fixtures: generated power-law graphs cached under the bench cache root.

Speed is always reported as a ratio to one compiled degree pass over the same edge stream,
measured in the same run: these machines are noisy, a ratio of two timings taken together is not.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from gnnbench.data.datasets import prepare_dataset
from gnnbench.data.graph_ops import streaming_degree
from gnnbench.data.store import GraphStore

BENCH_HOME = Path(
    os.environ.get(
        "GNNBENCH_BENCH_HOME", Path(__file__).resolve().parent.parent / ".benchmarks" / "home"
    )
)


def power_law_config(num_edges: int, num_nodes: int | None = None) -> dict:
    """A synthetic contextual SBM with power-law degrees and about `num_edges` edges."""
    num_nodes = num_nodes or max(1000, num_edges // 10)
    return {
        "name": f"powerlaw-{num_edges}",
        "source": "synthetic",
        "num_nodes": num_nodes,
        "avg_degree": 2 * num_edges / num_nodes * 1.02,  # a little over, for duplicates
        "num_classes": 16,
        "feature_dim": 8,
        "seed": 7,
    }


@pytest.fixture(scope="session", autouse=True)
def bench_home() -> Path:
    BENCH_HOME.mkdir(parents=True, exist_ok=True)
    previous = os.environ.get("GNNBENCH_HOME")
    os.environ["GNNBENCH_HOME"] = str(BENCH_HOME)
    yield BENCH_HOME
    if previous is None:
        os.environ.pop("GNNBENCH_HOME", None)
    else:
        os.environ["GNNBENCH_HOME"] = previous


def make_power_law_store(num_edges: int) -> GraphStore:
    return prepare_dataset(power_law_config(num_edges))


def degree_pass_seconds(store: GraphStore, rounds: int = 5) -> float:
    """Median time of one compiled random-access degree pass over the store's edge stream."""
    streaming_degree(store.edge_stream(), store.num_nodes)  # compile / warm the page cache
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        streaming_degree(store.edge_stream(), store.num_nodes)
        times.append(time.perf_counter() - started)
    return sorted(times)[len(times) // 2]
