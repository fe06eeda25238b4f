"""Plugins: partitioners, models, dataset sources and training modes from other packages.

A package declares one entry point per module that registers something, in the group
`gnnbench.plugins`:

    [project.entry-points."gnnbench.plugins"]
    myplugin = "myplugin.partitioner"     # a module whose @PARTITIONERS.register("myplugin") runs

and ships its config files in a `conf/` folder of its top-level package, laid out like
gnnbench/conf (`myplugin/conf/partitioner/myplugin.yaml`). gnnbench's registries load every plugin
once, after the modules of the first registry that looks a name up (gnnbench/registry.py; a
built-in keeps its name whichever is imported first), and Hydra finds the plugins' config folders
through gnnbench's search-path plugin (hydra_plugins/gnnbench_plugin_configs). From there a
plugin is a built-in: the same meter, GNN-ready step, identity and resume.

A plugin that fails to import is one line naming it and its error, and is left out; a name a
built-in already has stays the built-in's, with one line naming the plugin. Either way the rest of
gnnbench runs.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

GROUP = "gnnbench.plugins"
BUILTIN_PACKAGE = "gnnbench"

_loaded = False
PROBLEMS: list[str] = []  # one line per plugin that failed to load or clashed with a built-in
UNLOADED: list[str] = []  # the entry points that failed to load


@functools.cache  # one scan of the installed distributions per process (~15-60 ms)
def plugin_entry_points() -> tuple[EntryPoint, ...]:
    return tuple(sorted(entry_points(group=GROUP), key=lambda point: point.name))


def load_plugins() -> None:
    """Import every plugin module once (their decorators register them)."""
    global _loaded
    if _loaded:
        return
    _loaded = True  # first: a plugin importing a registry must not load the plugins again
    for point in plugin_entry_points():
        try:
            point.load()
        except Exception as exc:  # any failure of someone else's code: one line, and go on
            UNLOADED.append(point.name)
            problem(
                f"plugin {point.name!r} ({point.value}) not loaded: {type(exc).__name__}: {exc}"
            )


def problem(line: str) -> None:
    """Say a plugin problem once, on stderr (before logging is set up too), and keep it."""
    line = " ".join(line.split())
    if line not in PROBLEMS:
        PROBLEMS.append(line)
        print(f"gnnbench: warning: {line}", file=sys.stderr)


def is_builtin(obj: object) -> bool:
    module = getattr(obj, "__module__", "") or ""
    return module == BUILTIN_PACKAGE or module.startswith(f"{BUILTIN_PACKAGE}.")


@functools.cache
def config_dirs() -> tuple[Path, ...]:
    """The `conf/` folders of the plugins' top-level packages (found without importing them)."""
    folders = []
    for point in plugin_entry_points():
        top = point.value.split(":")[0].split(".")[0]
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            continue  # reported when the registries load it
        for location in (spec.submodule_search_locations or []) if spec else []:
            conf = Path(location) / "conf"
            if conf.is_dir() and conf not in folders:
                folders.append(conf)
    return tuple(folders)
