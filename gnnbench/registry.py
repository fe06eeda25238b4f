"""Name -> implementation registries filled by decorators, GraphGym style.

A registry discovers its implementations by importing every module of one package, so adding a
dataset source, partitioner or model is one new module (plus its config file): no central list;
then the plugins other packages declare (gnnbench/plugins.py).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import Generic, TypeVar

from gnnbench.errors import ConfigError
from gnnbench.plugins import UNLOADED, is_builtin, load_plugins, problem

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps config names to implementations registered in the modules of `package`.

    A `by_module` registry looks a name up in the module of that name first and imports the
    others only when it is not there: the training modes, so that train=none (its module imports
    no torch) declares what its jobs ignore without loading the other modes' torch."""

    def __init__(self, kind: str, package: str, config_key: str, by_module: bool = False):
        self.kind = kind
        self.package = package
        self.config_key = config_key
        self.by_module = by_module
        self._items: dict[str, T] = {}
        self._discovered = False

    def register(self, name: str) -> Callable[[T], T]:
        def decorate(obj: T) -> T:
            present = self._items.get(name)
            if present is None or present is obj:
                self._items[name] = obj
            elif is_builtin(present) and is_builtin(obj):
                raise ValueError(f"{self.kind} '{name}' registered twice")
            else:  # a plugin's name taken: the built-in keeps it, else the first plugin
                kept, ignored = (obj, present) if is_builtin(obj) else (present, obj)
                self._items[name] = kept
                problem(
                    f"plugin module {ignored.__module__}: {self.kind} '{name}' is already "
                    f"{kept.__module__}'s; the plugin's is ignored"
                )
            return obj

        return decorate

    def override(self, name: str, obj: T) -> T:
        """Replace a registered implementation (for plugins and planted-regression tests)."""
        self._discover()
        previous = self.get(name)
        self._items[name] = obj
        return previous

    def _discover(self) -> None:
        if self._discovered:
            return
        package = importlib.import_module(self.package)
        for module in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{self.package}.{module.name}")
        load_plugins()  # other packages' modules (gnnbench/plugins.py), after the built-ins
        self._discovered = True

    def names(self) -> list[str]:
        self._discover()
        return sorted(self._items)

    def _import_module_named(self, name: str) -> None:
        module = f"{self.package}.{name}"
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:  # the module exists and lacks a dependency
                raise

    def get(self, name: str) -> T:
        if self.by_module and name.isidentifier():  # the built-in first, even if a plugin
            self._import_module_named(name)  # registered the name before it was imported
        if not self.by_module or name not in self._items:
            self._discover()
        if name not in self._items:
            raise ConfigError(
                f"{self.config_key}: unknown {self.kind} '{name}' "
                f"(expected one of: {', '.join(self.names())})"
                + (f"; {len(UNLOADED)} plugin(s) failed to load, see above" if UNLOADED else "")
            )
        return self._items[name]
