"""Helpers the typed specs share: a read-only mapping and the one-line key checks.

Every spec (`gnnbench/spec.py`, `gnnbench/data/spec.py`, `gnnbench/partition/spec.py`) reports an
unknown or missing key the same way: `<section>.<key>: unknown key for <owner>; valid keys: ...`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from gnnbench.errors import ConfigError

# Config keys added after runs and partition books existed, each with the value that computes what
# a config without the key computed. At that value a key is left out of a job's run key, and a
# partitioner's own key (and refine_objective) out of its book's cache key, so resuming after an
# upgrade still finds the older runs and books instead of running them again (chunk_edges always
# was in streaming partitioners' book keys, so it stays there). A key whose new default changes
# results does not belong here. Keys are per section, not per partitioner: a partitioner that
# later takes a key of the same name must share its neutral value or pick another name.
KEYS_ADDED_LATER: dict[str, Any] = {
    "partitioner.chunk_edges": 1048576,  # moved into the shared block, with the old default
    "partitioner.refine_objective": "edge_cut",
    "partitioner.chunk_refinement": True,  # grem's
    "partitioner.grid_dims": 2,  # grid's
    "partitioner.subpart_lp_passes": 0,  # quotient's
    "partitioner.subpart_slack": 1.03,  # quotient's
    "partitioner.quotient_ncuts": 1,  # quotient's
    "partitioner.subpart_fm_passes": 0,  # quotient's
    "partitioner.node_fm_passes": 0,  # quotient's
    "train.optimizer_state": "local",
    "dataset.features": "none",
    "dataset.feature_dtype": "float32",
    "dataset.split_fractions": [0.70, 0.15, 0.15],
    "partitioner.feature_rows": "copy",  # books before it copied feature rows into each partition
}


def is_neutral(dotted_key: str, value: Any) -> bool:
    """Whether `section.key` is one of the KEYS_ADDED_LATER and holds its neutral value."""
    if dotted_key not in KEYS_ADDED_LATER:
        return False
    neutral = KEYS_ADDED_LATER[dotted_key]
    return type(value) is type(neutral) and value == neutral  # 1 is not true, 2.0 is not 2


def neutral_keys_present(config: Mapping[str, Any]) -> list[str]:
    """The KEYS_ADDED_LATER a resolved config holds at their neutral value."""
    present = []
    for dotted in KEYS_ADDED_LATER:
        section, key = dotted.split(".")
        block = config.get(section)
        if isinstance(block, Mapping) and key in block and is_neutral(dotted, block[key]):
            present.append(dotted)
    return present


def without_keys(config: Mapping[str, Any], dotted_keys: Iterable[str]) -> dict[str, Any]:
    """A copy of a config without the given `section.key`s."""
    trimmed = dict(config)
    for dotted in dotted_keys:
        section, key = dotted.split(".")
        trimmed[section] = {name: v for name, v in trimmed[section].items() if name != key}
    return trimmed


class ReadOnlyMap(Mapping[str, Any]):
    """A plain, picklable, read-only view of a dict (the spec's algorithm or source keys)."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, Any] | None = None) -> None:
        self._items = dict(items or {})

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"ReadOnlyMap({self._items!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self.items()) == dict(other.items())

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._items.items(), key=lambda item: item[0])))


def plain(config: Any) -> Any:
    """A Hydra DictConfig (resolved) or any mapping as plain dicts and lists."""
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf
    except ImportError:  # pragma: no cover - omegaconf is a dependency
        return config
    if isinstance(config, DictConfig | ListConfig):
        return OmegaConf.to_container(config, resolve=True)
    if isinstance(config, Mapping):
        return {str(key): plain(value) for key, value in config.items()}
    return config


def check_keys(
    section: str,
    given: Iterable[str],
    valid: Iterable[str],
    owner: str,
    required: Iterable[str] = (),
) -> None:
    """Raise a one-line ConfigError for the first key of `given` outside `valid`, or the first
    key of `required` missing from `given`; both name the key (under `section`, "" for the top
    level) and the valid keys."""
    given, valid = list(given), sorted(set(valid))
    listing = ", ".join(valid) if valid else "(none)"
    prefix = f"{section}." if section else ""  # "" for the top level
    for key in given:
        if key not in valid:
            raise ConfigError(f"{prefix}{key}: unknown key for {owner}; valid keys: {listing}")
    for key in required:
        if key not in given:
            raise ConfigError(f"{prefix}{key}: missing for {owner}; valid keys: {listing}")


def whole_at_least(name: str, value: Any, least: int) -> int:
    """`value` when it is an int >= `least` (not a bool), else one line naming `name`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ConfigError(f"{name}: expected a whole number >= {least}, got {value!r}")
    return value


def whole_axis(name: str, value: Any, least: int | None = None, unit: str = "") -> int:
    """A sweep axis (sync_interval, num_gpus, seed): an int (not a bool), >= `least` if given;
    the two ways it can be wrong say which."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name}: expected a whole number, got {value!r}")
    if least is not None and value < least:
        raise ConfigError(f"{name}: expected >= {least}{f' {unit}' if unit else ''}, got {value}")
    return value
