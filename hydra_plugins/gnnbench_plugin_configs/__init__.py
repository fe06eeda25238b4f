"""Hydra finds gnnbench plugins' config folders (gnnbench/plugins.py) and gnnbench's config
schema (gnnbench/schema.py, the ConfigStore node config.yaml extends) through this search-path
plugin: Hydra loads it for every app from the `hydra_plugins` namespace package, and it acts only
where the app composes gnnbench's own configs. Each path that composes gnnbench's configs
(hydra.main, the checks before it in gnnbench/cli.py, gnnbench/composition.py, and Hydra's own
`initialize_config_dir` + `compose` in a script or test) builds its search path through Hydra, so
all of them see the same plugins and the same schema."""

from __future__ import annotations

import os

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin


class GnnbenchPluginConfigs(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        from gnnbench.paths import CONF_DIR
        from gnnbench.plugins import config_dirs

        ours = {os.path.realpath(CONF_DIR), "pkg://gnnbench.conf", "pkg://gnnbench/conf"}
        if not any(_normalised(element.path) in ours for element in search_path.get_path()):
            return  # another Hydra app in this environment
        from gnnbench import schema

        schema.register()  # before any config is loaded: config.yaml's defaults list names it
        for folder in config_dirs():
            search_path.append(provider="gnnbench-plugin", path=f"file://{folder}")


def _normalised(path: str | None) -> str:
    """A search-path element as a comparable path: a folder (file://, a trailing slash, a link)
    resolved; a package path as written."""
    path = path or ""
    if path.startswith("pkg://"):
        return path.rstrip("/")
    return os.path.realpath(path.removeprefix("file://"))
