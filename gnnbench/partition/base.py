"""The partitioner protocol and registry.

A vertex partitioner returns an owner partition per node. Edge partitioners (a part per edge)
reduce to the same shape before the shared GNN-ready step, so every metric is computed one way.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gnnbench.errors import ConfigError
from gnnbench.registry import Registry


@dataclass
class PartitionResult:
    """An owner partition for every node, plus algorithm-specific figures to log.

    `measured` lets a partitioner that runs in a process of its own (DistDGL in its environment)
    report that process's `partition_peak_mb`, `partition_rss_mb` and `partition_time_s`, which
    replace the stage's measurement of the (idle) calling process.
    """

    owner: np.ndarray
    stats: dict[str, Any] = field(default_factory=dict)
    measured: dict[str, float] = field(default_factory=dict)


# A partitioner builds everything it reads beyond the GraphStore inside its own call (the one
# meter, docs/design.md "Metrics"). It may carry
# `warm_up = False` when it has no JIT to compile before measuring (out-of-process baselines);
# `warm_up_keys`, keys for that warm-up on a 256-node graph where its own would skip kernels a
# real graph runs (tests/test_meter.py checks that nothing compiles inside the measured step); and
# `in_memory_baseline = True` for the METIS baselines, which the streaming gates in bench/ skip;
# `with_features_figures = True` for a baseline that also logs partition_with_features_*;
# and `vertex_balance_bound(p, num_nodes, **keywords)`, the bound the algorithm enforces (None
# where those keys enforce none);
# and `nested_spec(**keywords)`, for a partitioner that runs another (quotient): that other one's
# PartitionSpec, whose identity and code version enter the book's (partition/book_identity.py).
# Its signature is `fn(store, p, seed, *, <own keys>)`: keyword-only parameters without defaults,
# which gnnbench/conf/partitioner/<name>.yaml supplies (gnnbench/partition/spec.py checks them).
PartitionFn = Callable[..., PartitionResult]
PARTITIONERS: Registry[PartitionFn] = Registry(
    "partitioner", "gnnbench.partition.algorithms", "partitioner.name"
)


def algorithm_version(name: str) -> str:
    """The VERSION string of the module that registered `name` (bumped when its output changes),
    part of every partition book's cache key."""
    module = sys.modules[PARTITIONERS.get(name).__module__]
    return str(getattr(module, "VERSION", "0"))


def streaming_partitioners() -> list[str]:
    """Registered partitioners other than the in-memory baselines (what bench/ gates)."""
    return [
        name
        for name in PARTITIONERS.names()
        if not getattr(PARTITIONERS.get(name), "in_memory_baseline", False)
    ]


def check_num_parts(p: Any, num_nodes: int, dataset: str) -> int:
    """p must be a whole number in [1, num_nodes]."""
    if isinstance(p, bool) or not isinstance(p, int | np.integer):
        raise ConfigError(f"p: expected a whole number of partitions, got {p!r}")
    if p < 1:
        raise ConfigError(f"p: expected at least 1 partition, got {p}")
    if p > num_nodes:
        raise ConfigError(f"p={p} is larger than the number of nodes of {dataset} ({num_nodes})")
    return int(p)


# What the refinement post-pass may lower (gnnbench/partition/refine.py): the spec checks the key,
# and the refinement checks a value passed to it directly.
REFINE_OBJECTIVES = ("edge_cut", "replication")


def check_refine_objective(value: Any) -> str:
    """partitioner.refine_objective checked (refine.py reads the choice)."""
    return check_choice("refine_objective", value, REFINE_OBJECTIVES)


def check_choice(key: str, value: Any, choices: tuple[str, ...]) -> str:
    """partitioner.<key> checked against its choices (one line naming them)."""
    if value not in choices:
        raise ConfigError(f"partitioner.{key}: expected one of {', '.join(choices)}, got {value!r}")
    return str(value)
