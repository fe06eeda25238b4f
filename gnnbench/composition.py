"""Hydra's reading of gnnbench/conf, in one place: a sweep's grid (its overrides and
hydra.sweeper.params expanded by Hydra's own grammar).

Nothing here imports a stage of gnnbench (data, partition, train, track, run): every stage may
read its config through this module.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def sweep_overrides(
    overrides: Iterable[str] = (), sweeper_params: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """{key element: Hydra's parsed override}: as Hydra's BasicSweeper, hydra.sweeper.params
    first, then the command line, one axis per key element (prefix and package included), so a
    key given later replaces earlier choices."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    params = sweeper_params or {}
    given = [f"{key}={value}" for key, value in params.items()] + list(overrides)
    parsed = OverridesParser.create().parse_overrides(given)
    return {override.get_key_element(): override for override in parsed}


def override_values(override: Any) -> list[str]:
    """The values one parsed override gives its key, each as an override string: a sweep's
    items (`[25,10],[-1,-1]` -> `[25,10]`, `[-1,-1]`; `range(1,4)` -> 1, 2, 3), else its one value."""
    if override.is_sweep_override():
        return [str(value) for value in override.sweep_string_iterator()]
    return [override.get_value_element_as_str()]


def sweep_grid(
    overrides: Iterable[str] = (), sweeper_params: Mapping[str, Any] | None = None
) -> dict[str, list[str]]:
    """{key element: its values as override strings} of a basic-sweeper grid: every job is one
    value of each key (`f"{key}={value}"` composes it)."""
    parsed = sweep_overrides(overrides, sweeper_params)
    return {key: override_values(override) for key, override in parsed.items()}
