"""Hydra's reading of gnnbench/conf, in one place: a sweep's grid (its overrides and
hydra.sweeper.params expanded by Hydra's own grammar), and gnnbench/conf composed as Hydra composes
a job (`composed`), for the code that builds specs without running Hydra's app (tests, benchmarks,
a partitioner nesting another).

Nothing here imports a stage of gnnbench (data, partition, train, track, run): every stage may
read its config through this module.
"""

from __future__ import annotations

import copy
import functools
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

from gnnbench.errors import ConfigError
from gnnbench.paths import CONF_DIR

CONFIG_NAME = "config"  # the primary config file: gnnbench/conf/config.yaml


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


def composed(*overrides: str) -> dict[str, Any]:
    """gnnbench/conf composed as Hydra composes a job with these overrides (group choices such as
    `partitioner=<name>`, `train=<mode>`, `model=<name>`), resolved, without its `hydra` node.
    Each composition is made once per process; every call gets its own copy."""
    return copy.deepcopy(_composed(tuple(overrides)))


@functools.cache
def _composed(overrides: tuple[str, ...]) -> dict[str, Any]:
    from omegaconf import OmegaConf, open_dict

    config = load(_loader(), CONFIG_NAME, overrides)
    with open_dict(config):
        del config["hydra"]
    return OmegaConf.to_container(config, resolve=True)


@functools.lru_cache(maxsize=1)
def _loader() -> Any:
    """Hydra's config loader over gnnbench/conf (and Hydra's own configs), as `hydra.main` builds
    it; no global state, so it also composes inside a running Hydra app."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra._internal.utils import create_config_search_path

    return ConfigLoaderImpl(config_search_path=create_config_search_path(str(CONF_DIR)))


def load(loader: Any, config_name: str, overrides: Iterable[str]) -> Any:
    """The config Hydra's `loader` composes from `config_name` with `overrides` (its `hydra`
    node included); a config Hydra cannot compose is one line."""
    from hydra.errors import HydraException
    from hydra.types import RunMode

    overrides = list(overrides)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return loader.load_configuration(config_name, overrides, RunMode.RUN)
    except HydraException as exc:
        first = str(exc).strip().splitlines()[0]
        given = f"{' '.join(overrides)}: " if overrides else ""
        raise ConfigError(f"{given}cannot compose the config ({first})") from None
