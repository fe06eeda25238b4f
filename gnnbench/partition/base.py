"""The partitioner protocol and registry.

A vertex partitioner returns an owner partition per node. Edge partitioners (a part per edge)
reduce to the same shape before the shared GNN-ready step, so every metric is computed one way.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from gnnbench import schema
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
# meter, docs/design.md "Metrics"). Its signature is `fn(store, p, seed, *, <own keys>)`:
# keyword-only parameters without defaults, which gnnbench/conf/partitioner/<name>.yaml supplies
# (gnnbench/partition/spec.py checks them). What else the stage and the reports must know about it
# is its PartitionerTraits, declared where it registers (`register_partitioner`).
PartitionFn = Callable[..., PartitionResult]
PARTITIONERS: Registry[PartitionFn] = Registry(
    "partitioner", "gnnbench.partition.algorithms", "partitioner.name"
)


@dataclass(frozen=True)
class PartitionerTraits:
    """What a partitioner declares beside its call; the defaults fit a streaming partitioner
    that runs in this process (a plugin registered with `@PARTITIONERS.register` gets them)."""

    # False where there is no JIT to compile before measuring (an out-of-process baseline)
    warm_up: bool = True
    # keys for that warm-up on a 256-node graph where the partitioner's own would skip kernels a
    # real graph runs (tests/test_meter.py checks that nothing compiles inside the measured step)
    warm_up_keys: Mapping[str, Any] = field(default_factory=dict)
    # the in-memory baselines (METIS and kin), which the streaming gates in bench/ skip
    in_memory_baseline: bool = False
    # a baseline that also logs partition_with_features_* (docs/design.md "Metrics")
    with_features_figures: bool = False
    # (p, num_nodes, **own keys) -> the vertex balance the algorithm enforces, None where those
    # keys enforce none (then the shared partitioner.max_vertex_balance applies)
    vertex_balance_bound: Callable[..., float | None] | None = None
    # (**own keys) -> the PartitionSpec of another partitioner this one runs (quotient's base),
    # whose identity and code version enter the book's (gnnbench/partition/stage/book_identity.py)
    nested_spec: Callable[..., Any] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "warm_up_keys", MappingProxyType(dict(self.warm_up_keys)))


_TRAITS: dict[PartitionFn, PartitionerTraits] = {}


def register_partitioner(name: str, **traits: Any) -> Callable[[PartitionFn], PartitionFn]:
    """`@register_partitioner("ldg", vertex_balance_bound=...)`: registers the function under
    `name` with its PartitionerTraits (an unknown trait is a TypeError where it is declared)."""
    declared = PartitionerTraits(**traits)

    def decorate(fn: PartitionFn) -> PartitionFn:
        _TRAITS[fn] = declared
        return PARTITIONERS.register(name)(fn)

    return decorate


def partitioner_traits(name: str) -> PartitionerTraits:
    """The traits of the partitioner registered as `name` (through wrappers that keep
    `__wrapped__`, as planted regressions and plugins' overrides do)."""
    return _TRAITS.get(inspect.unwrap(PARTITIONERS.get(name)), PartitionerTraits())


def algorithm_version(name: str) -> str:
    """The VERSION string of the module that registered `name` (bumped when its output changes),
    part of every partition book's cache key."""
    module = sys.modules[PARTITIONERS.get(name).__module__]
    return str(getattr(module, "VERSION", "0"))


def streaming_partitioners() -> list[str]:
    """Registered partitioners other than the in-memory baselines (what bench/ gates)."""
    return [
        name for name in PARTITIONERS.names() if not partitioner_traits(name).in_memory_baseline
    ]


# What the refinement post-pass may lower (gnnbench/partition/refine.py): the spec checks the key,
# and the refinement checks a value passed to it directly.
REFINE_OBJECTIVES = schema.choices(schema.RefineObjective)


def check_refine_objective(value: Any) -> str:
    """partitioner.refine_objective checked (refine.py reads the choice)."""
    return check_choice("refine_objective", value, REFINE_OBJECTIVES)


def check_choice(key: str, value: Any, choices: tuple[str, ...]) -> str:
    """partitioner.<key> checked against its choices (one line naming them)."""
    if value not in choices:
        raise ConfigError(f"partitioner.{key}: expected one of {', '.join(choices)}, got {value!r}")
    return str(value)
