"""Partitioners as the tests call them: with their YAML keys, keyword overrides on top."""

from __future__ import annotations

from collections.abc import Callable

from gnnbench.partition.base import PartitionResult
from gnnbench.partition.spec import PartitionSpec


def configured(name: str) -> Callable[..., PartitionResult]:
    """`call(store, p, seed, **keys)`: partitioner `name` with
    gnnbench/conf/partitioner/<name>.yaml's keys and the shared block's, `keys` overriding them (an
    unknown key is a ConfigError)."""

    def call(store, p: int, seed: int, **keys) -> PartitionResult:
        return PartitionSpec.defaults(name, **keys).run(store, p, seed)

    call.__name__ = name
    return call
