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


def num_parts(
    value: Any, *, num_nodes: int | None = None, dataset: str = "", auto: bool = False
) -> Any:
    """p, checked by one rule wherever it is read: a whole number of partitions >= 1 (numpy's
    too), or "auto" where the run has yet to choose (`auto`); with the graph's node count, at
    most that many."""
    if auto and value == "auto":
        return value
    if isinstance(value, bool) or not isinstance(value, int) and not hasattr(value, "__index__"):
        expected = "a whole number or auto" if auto else "a whole number of partitions"
        raise ConfigError(f"p: expected {expected}, got {value!r}")
    if value < 1:
        raise ConfigError(f"p: expected at least 1 partition, got {value}")
    if num_nodes is not None and value > num_nodes:
        raise ConfigError(
            f"p={value} is larger than the number of nodes of {dataset} ({num_nodes})"
        )
    return int(value)


def whole_axis(name: str, value: Any, least: int | None = None, unit: str = "") -> int:
    """A sweep axis (sync_interval, num_gpus, seed): an int (not a bool), >= `least` if given;
    the two ways it can be wrong say which."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name}: expected a whole number, got {value!r}")
    if least is not None and value < least:
        raise ConfigError(f"{name}: expected >= {least}{f' {unit}' if unit else ''}, got {value}")
    return value


def check_annotated(name: str, value: Any, annotation: Any) -> Any:
    """`value` when it fits the type annotation `annotation` (int, float, bool, str,
    Literal[...], X | None, tuple / list / Sequence of X, Mapping / dict), else one line
    `<name>: expected <type>, got <value!r>`. An int fits float, a bool fits no number; an
    annotation this does not know (or none) accepts anything."""
    if not fits(value, annotation):
        raise ConfigError(f"{name}: expected {describe(annotation)}, got {value!r}")
    return value


def fits(value: Any, annotation: Any) -> bool:
    """Whether `value` (from YAML or JSON: lists for tuples) fits `annotation`."""
    import types
    import typing
    from collections.abc import Sequence

    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is None or annotation is type(None):
        return value is None
    if origin in (typing.Union, types.UnionType):
        return any(fits(value, arg) for arg in args)
    if origin is typing.Literal:
        return any(value == arg and type(value) is type(arg) for arg in args)
    if annotation in _SCALARS:
        return _SCALARS[annotation](value)
    sequence = origin if origin is not None else annotation
    if sequence in (list, tuple, Sequence):
        return _fits_sequence(value, args)
    if sequence in (dict, Mapping):
        return isinstance(value, Mapping) and (
            not args or all(fits(k, args[0]) and fits(v, args[1]) for k, v in value.items())
        )
    return True  # Any, no annotation, or a type the algorithm checks itself


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_SCALARS = {
    bool: lambda value: isinstance(value, bool),
    int: lambda value: isinstance(value, int) and not isinstance(value, bool),
    float: _number,
    str: lambda value: isinstance(value, str),
}


def _fits_sequence(value: Any, args: tuple) -> bool:
    """A list or tuple (not a string) whose items fit `args`: (X, ...), (X,) or (X, Y, ...)."""
    if isinstance(value, str) or not isinstance(value, list | tuple):
        return False
    if not args:
        return True
    if len(args) == 1 or (len(args) == 2 and args[1] is Ellipsis):
        return all(fits(item, args[0]) for item in value)
    return len(value) == len(args) and all(map(fits, value, args))


def describe(annotation: Any) -> str:
    """An annotation as an error line names it: `a number or null`, `one of 'id', 'random'`,
    `a list of a whole number`."""
    import types
    import typing
    from collections.abc import Sequence

    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is None or annotation is type(None):
        return "null"
    if origin in (typing.Union, types.UnionType):
        return " or ".join(describe(arg) for arg in args)
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(arg) for arg in args)
    if origin in (list, tuple, Sequence):
        whole = args and (len(args) == 1 or args[1] is Ellipsis)
        return f"a list of {describe(args[0])}" if whole else "a list"
    if origin in (dict, Mapping):
        return "a mapping"
    return PLAIN_NAMES.get(annotation, getattr(annotation, "__name__", str(annotation)))


# The words every other one-line config error uses for these types
PLAIN_NAMES = {int: "a whole number", float: "a number", bool: "true or false", str: "a string"}
