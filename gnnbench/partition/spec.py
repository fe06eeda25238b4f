"""PartitionSpec: the `partitioner` config, checked once against the algorithm's own signature.

The shared keys (k of the k-hop partitions, the streamed chunk size, the memory cap, the balance
bound, the refinement passes) are declared once, with their types and defaults, in
gnnbench/schema.py (`PartitionerKeys`, which PartitionSpec extends); the algorithm's own keys are
the keyword-only parameters of its registered function, which has no defaults of its own:
gnnbench/conf/partitioner/<name>.yaml supplies every one.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gnnbench import schema
from gnnbench.data.store import GraphStore
from gnnbench.errors import ConfigError
from gnnbench.partition.base import (
    PARTITIONERS,
    PartitionFn,
    PartitionResult,
    check_choice,
    check_refine_objective,
    partitioner_traits,
)
from gnnbench.schema import PartitionerKeys
from gnnbench.spec_keys import (
    ReadOnlyMap,
    check_annotated,
    check_keys,
    plain,
    whole_at_least,
)

# The keys every partitioner shares (gnnbench/schema.py); a partitioner function taking one of them
# as a keyword (chunk_edges) receives the shared value.
SHARED_KEYS = schema.keys(PartitionerKeys)
# Shared keys that change whether a partition runs or what is reported, never the book itself.
NOT_IN_BOOK_KEY = ("memory_limit_gb", "max_vertex_balance")
# What a partition holds of the store's features (gnnbench/partition/stage/gnn_ready.py): a copy of its
# rows, or nothing but a reference to the store's feat.npy by global id.
FEATURE_ROWS = schema.choices(schema.FeatureRows)


def own_keys(partition_fn: PartitionFn) -> tuple[str, ...]:
    """The algorithm's own config keys: its keyword-only parameters, less the shared ones."""
    return tuple(
        name
        for name, parameter in inspect.signature(partition_fn).parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY and name not in SHARED_KEYS
    )


def own_values(partition_fn: PartitionFn, config: Mapping[str, Any]) -> dict[str, Any]:
    """The algorithm's own keys of `config`, each checked against its parameter's annotation
    (`partitioner.<key>: expected <type>, got <value>`, in one line, not deep inside the
    algorithm); an unannotated parameter is not checked."""
    annotations = _own_annotations(partition_fn)
    return {
        key: check_annotated(f"partitioner.{key}", config[key], annotations.get(key, Any))
        for key in own_keys(partition_fn)
    }


@functools.cache
def _own_annotations(partition_fn: PartitionFn) -> dict[str, Any]:
    """The resolved annotations of the function's parameters (text under `from __future__ import
    annotations`); none where they do not resolve (a name imported for type checking only)."""
    try:
        return typing.get_type_hints(partition_fn)
    except Exception:
        return {}


def takes_keyword(partition_fn: PartitionFn, key: str) -> bool:
    """Whether the partitioner function has the keyword parameter `key`."""
    parameter = inspect.signature(partition_fn).parameters.get(key)
    return parameter is not None and parameter.kind is inspect.Parameter.KEYWORD_ONLY


@dataclass(frozen=True, kw_only=True)
class PartitionSpec(PartitionerKeys):
    """One job's partitioner: its name, the shared keys (PartitionerKeys' fields), and the
    algorithm's own keys."""

    name: str
    params: Mapping[str, Any] = field(default_factory=ReadOnlyMap)

    @classmethod
    def from_config(cls, partitioner: Mapping[str, Any]) -> PartitionSpec:
        """The composed `partitioner` config checked: every key known, none missing, shared
        values in range (one-line ConfigError naming the key and the valid ones)."""
        config = plain(partitioner)
        if not isinstance(config, Mapping) or not config.get("name"):
            raise ConfigError("partitioner.name: missing (expected a partitioner's name)")
        name = str(config["name"])
        own = own_keys(PARTITIONERS.get(name))  # an unknown name fails here, in one line
        valid = ("name", *SHARED_KEYS, *own)
        check_keys("partitioner", config, valid, name, required=valid)
        shared = {
            "hops": whole_at_least("partitioner.hops", config["hops"], 0),
            "chunk_edges": whole_at_least("partitioner.chunk_edges", config["chunk_edges"], 1),
            "memory_limit_gb": _positive_or_none(config, "memory_limit_gb"),
            "max_vertex_balance": _positive_or_none(config, "max_vertex_balance"),
            "refine_passes": whole_at_least(
                "partitioner.refine_passes", config["refine_passes"], 0
            ),
            "refine_objective": check_refine_objective(config["refine_objective"]),
            "feature_rows": check_choice("feature_rows", config["feature_rows"], FEATURE_ROWS),
        }
        return cls(
            name=name,
            **schema.require_every_key(PartitionerKeys, shared),
            params=ReadOnlyMap(own_values(PARTITIONERS.get(name), config)),
        )

    @classmethod
    def defaults(cls, name: str, **overrides: Any) -> PartitionSpec:
        """gnnbench/conf/partitioner/<name>.yaml under the shared keys' defaults (the schema), with
        overrides: what Hydra composes for
        `partitioner=<name> partitioner.<key>=<value>...`."""
        return cls.from_config({**default_config(name), **overrides})

    def to_config(self) -> dict[str, Any]:
        """The flat config (JSON-ready): what crosses to the partition process."""
        shared = {key: getattr(self, key) for key in SHARED_KEYS}
        return {"name": self.name, **shared, **dict(self.params)}

    def kwargs(self) -> dict[str, Any]:
        """The keyword arguments of the partitioner function: its own keys, and the shared
        keys it takes (chunk_edges)."""
        partition_fn = PARTITIONERS.get(self.name)
        shared = {
            key: getattr(self, key) for key in SHARED_KEYS if takes_keyword(partition_fn, key)
        }
        return {**dict(self.params), **shared}

    def run(self, store: GraphStore, p: int, seed: int) -> PartitionResult:
        """Call the partitioner on `store` with this spec's keywords."""
        return PARTITIONERS.get(self.name)(store, p, seed, **self.kwargs())

    def run_refined(self, store: GraphStore, p: int, seed: int) -> PartitionResult:
        """`run`, then the refinement post-pass its shared keys ask for (what the stage runs and
        measures): both share one CSR of the store, built inside this call and deleted after it."""
        from gnnbench.data.adjacency import adjacency_scope
        from gnnbench.partition.refine import refine_result  # numba: loaded only here

        with adjacency_scope():
            result = self.run(store, p, seed)
            return refine_result(store, result, p, self.refine_passes, self.refine_objective)


# Bound on vertex_balance for a partitioner that states none of its own (edge partitioners balance
# edges, and their owners are drawn among replicas), where partitioner.max_vertex_balance is null.
DEFAULT_MAX_VERTEX_BALANCE = schema.default(PartitionerKeys, "max_vertex_balance")


def vertex_balance_bound(partitioner: PartitionSpec, p: int, num_nodes: int) -> tuple[float, str]:
    """(bound, where it comes from) on max_i |O_i| / (|V|/p): the algorithm's own stated bound (its
    trait `vertex_balance_bound`), else the shared
    partitioner.max_vertex_balance; widened to the refinement's own rule when it runs after."""
    name = partitioner.name
    own = partitioner_traits(name).vertex_balance_bound
    stated = None if own is None else own(p, num_nodes, **partitioner.kwargs())
    if stated is not None:  # None: none of its own under these keys
        bound, source = float(stated), f"{name}'s own"
    else:
        shared = partitioner.max_vertex_balance
        bound = DEFAULT_MAX_VERTEX_BALANCE if shared is None else float(shared)
        source = "partitioner.max_vertex_balance"
    if partitioner.refine_passes:  # refinement may fill a block to ceil(1.03 |V| / p)
        from gnnbench.partition.refine import slack_balance_bound  # numba: loaded only here

        bound = max(bound, slack_balance_bound(p, num_nodes))
        source += " or the refinement's"
    return bound, source


def default_config(name: str) -> dict[str, Any]:
    """The `partitioner` block Hydra composes for `partitioner=<name>`: gnnbench/conf/partitioner/
    <name>.yaml (with the files its `defaults` list extends: a preset such as quotient_best.yaml)
    under the shared keys (gnnbench/schema.py); `name` may be a preset. A file setting a shared key is
    one ConfigError naming it."""
    from gnnbench.composition import composed_choice
    from gnnbench.paths import CONF_DIR

    path = CONF_DIR / "partitioner" / f"{name}.yaml"
    if not path.is_file():
        PARTITIONERS.get(name)  # an unknown name: the registry's one line
        raise ConfigError(f"{path}: not found (the config of partitioner={name})")
    return composed_choice("partitioner", name)


def _positive_or_none(config: Mapping[str, Any], key: str) -> float | None:
    value = config[key]
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(f"partitioner.{key}: expected a positive number or null, got {value!r}")
    return value
