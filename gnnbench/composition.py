"""Hydra's reading of gnnbench/conf, in one place: a sweep's grid (its overrides and
hydra.sweeper.params expanded by Hydra's own grammar), and gnnbench/conf composed as Hydra composes
a job (`composed`), for the code that builds specs without running Hydra's app (tests, benchmarks,
a partitioner nesting another). A file of a group whose keys every choice shares are declared in
gnnbench/schema.py (`partitioner`, `dataset`) may not set one of them: the schema's block, composed
after the group, would override it without a word, so it is one line naming the file and the key
(`check_group_file`).

Nothing here imports a stage of gnnbench (data, partition, train, track, run): every stage may
read its config through this module.
"""

from __future__ import annotations

import copy
import functools
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

from gnnbench import schema
from gnnbench.errors import ConfigError
from gnnbench.paths import CONF_DIR, CONFIG_NAME, REPO_ROOT

# The groups whose block in the schema holds the keys every choice shares (README, "Keys every
# partitioner shares", "Keys every dataset shares"); a file of the group setting one of them is
# an error, since the block would override it without a word.
SHARED_BLOCK_GROUPS = ("partitioner", "dataset")


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


def composed_choice(group: str, choice: str) -> dict[str, Any]:
    """The `group` block Hydra composes for `group=<choice>` over gnnbench/conf; the group file
    checked once (`check_group_file`)."""
    if group in SHARED_BLOCK_GROUPS:
        _checked_once(group, choice)
    return composed(f"{group}={choice}")[group]


@functools.cache
def _checked_once(group: str, choice: str) -> None:
    loader = _loader()
    check_group_file(loader, loader.repository, group, choice)


def check_group_file(
    loader: Any, repository: Any, group: str, choice: str, overrides: Iterable[str] = ()
) -> None:
    """The file of `group=<choice>` (with the files its `defaults` list extends, as Hydra
    composes it) sets no key of the schema's `group` block: one ConfigError naming the file and
    the key where it does."""
    shared = schema.node(schema.JobKeys).get(group)
    if not shared:
        return
    block = _group_block(loader, repository, group, choice, overrides)
    clash = [key for key in block if key in shared]
    if clash:
        raise ConfigError(
            f"{_file_of(repository, group, choice)}: sets {clash[0]}, a key every {group} shares "
            f"(set it on the command line or in an experiment; its default: gnnbench/schema.py)"
        )


def _group_block(
    loader: Any, repository: Any, group: str, choice: str, overrides: Iterable[str]
) -> Mapping[str, Any]:
    """The keys the group file sets: the file as read where it extends no other file and keeps
    its group's package (no composition: a few milliseconds), else as Hydra composes it."""
    found = repository.load_config(f"{group}/{choice}")
    if found is None:
        return {}
    plain = found.header.get("package") is None and all(
        entry.is_self() for entry in found.defaults_list or []
    )
    if plain:
        return found.config
    return load(loader, f"{group}/{choice}", overrides).get(group) or {}


def _file_of(repository: Any, group: str, choice: str) -> str:
    """The group file's path as a user finds it (from the repository root where inside it)."""
    from pathlib import Path

    found = repository.load_config(f"{group}/{choice}")
    root = str(found.path) if found is not None else ""
    if not root.startswith("file://"):  # a package's configs (pkg://...)
        return f"{root}/{group}/{choice}.yaml" if root else f"{group}/{choice}.yaml"
    path = Path(root.removeprefix("file://")) / group / f"{choice}.yaml"
    return str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)
