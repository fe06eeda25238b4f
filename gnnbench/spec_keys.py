"""Helpers the typed specs share: a read-only mapping and the one-line key checks.

Every spec (`gnnbench/spec.py`, `gnnbench/data/spec.py`, `gnnbench/partition/spec.py`) reports an
unknown or missing key the same way: `<section>.<key>: unknown key for <owner>; valid keys: ...`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from gnnbench.errors import ConfigError


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
