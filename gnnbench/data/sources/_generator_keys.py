"""The keys of a generated dataset (synthetic, geometric): numbers whose defaults live in one YAML.

A generator states its keys as a frozen dataclass of int and float fields without defaults; a key
left out of the dataset config, or null, takes the value of gnnbench/conf/dataset/<defaults>.yaml.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from functools import cache
from typing import Any, TypeVar

from gnnbench.errors import ConfigError

Params = TypeVar("Params")


@cache
def yaml_defaults(config_name: str) -> dict[str, Any]:
    """gnnbench/conf/dataset/<config_name>.yaml as a dict (read once)."""
    from omegaconf import OmegaConf

    from gnnbench.paths import CONF_DIR

    path = CONF_DIR / "dataset" / f"{config_name}.yaml"
    return OmegaConf.to_container(OmegaConf.load(path))


def generator_params(cls: type[Params], dataset: Mapping[str, Any], defaults: str) -> Params:
    """`cls` from the dataset config, each field converted to its type (a non-number is a
    one-line ConfigError naming the key); checking the values is the caller's business."""
    values = {}
    for item in fields(cls):
        value = dataset.get(item.name)
        value = yaml_defaults(defaults)[item.name] if value is None else value
        try:
            values[item.name] = (int if item.type == "int" else float)(value)
        except (TypeError, ValueError):
            raise ConfigError(f"dataset.{item.name}: expected a number, got {value!r}") from None
    return cls(**values)
