"""DataSpec: the `dataset` config, its keys checked once against what its source reads.

A source states its own keys as the `config_keys` attribute of its registered function; the keys
every source shares are read by `prepare_dataset` and the GraphStoreBuilder. The spec keeps the
keys exactly as configured, so the dataset's cache key (datasets.dataset_key) is unchanged.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gnnbench import schema
from gnnbench.data.sources import SOURCES
from gnnbench.errors import ConfigError
from gnnbench.schema import DatasetKeys
from gnnbench.spec_keys import ReadOnlyMap, check_annotated, check_keys, plain

# Keys of every dataset config, whatever its source (read by prepare_dataset and the builder),
# declared with their types and defaults in gnnbench/schema.py.
SHARED_KEYS = schema.keys(DatasetKeys)
# Keys that say where an input's checksummed bytes come from, not what it holds (the same bytes
# whatever the mirror): never in a run key or a store key, never logged as a parameter.
ORIGIN_KEYS = ("dataset.download",)


def source_keys(source: str) -> tuple[str, ...]:
    """The keys source `source` reads (its function's `config_keys`); an unknown source fails in
    one line naming the registered ones."""
    return tuple(getattr(SOURCES.get(source), "config_keys", ()))


@dataclass(frozen=True)
class DataSpec:
    """One job's dataset: its name, its source, and every other key as configured."""

    name: str
    source: str
    params: Mapping[str, Any] = field(default_factory=ReadOnlyMap)

    @classmethod
    def from_config(cls, dataset: Mapping[str, Any]) -> DataSpec:
        """The composed `dataset` config checked: a name, a registered source, and no key that
        neither the source nor the import reads (one-line ConfigError naming the valid keys)."""
        config = plain(dataset)
        if not isinstance(config, Mapping) or "name" not in config or "source" not in config:
            raise ConfigError("dataset: expected keys 'name' and 'source'")
        source = str(config["source"])
        valid = ("name", "source", *SHARED_KEYS, *source_keys(source))
        check_keys("dataset", config, valid, f"source {source}")
        from gnnbench.data.input_features import check_input_features

        check_input_features(shared_value(config, "features"))
        # the split's seed and normalisation against their declared types; the other shared keys
        # have narrower checks where they are read (import_checks, features, builder, download)
        hints = typing.get_type_hints(DatasetKeys)
        for key in ("split_seed", "normalize_features"):
            check_annotated(f"dataset.{key}", shared_value(config, key), hints[key])
        from gnnbench.data.download import remote_files

        remote_files(config)  # a malformed download list fails here, before anything runs
        params = {key: value for key, value in config.items() if key not in ("name", "source")}
        return cls(name=str(config["name"]), source=source, params=ReadOnlyMap(params))

    def to_config(self) -> dict[str, Any]:
        """The flat config, as composed: what the source reads and the cache key hashes."""
        return {"name": self.name, "source": self.source, **dict(self.params)}


def shared_value(dataset: Mapping[str, Any], key: str) -> Any:
    """A shared dataset key's value in a flat dataset config: as configured, else its declared
    default."""
    return schema.configured(DatasetKeys, dataset, key)
