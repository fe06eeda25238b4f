"""The package's import graph matches its stages (docs/design.md, "Stages"): no import circle, and
no module imports a layer above its own.

Every import counts: at module level, inside a function, and under `if TYPE_CHECKING:` (an
annotation couples modules as a call does). Layers, lowest first:

- below the stages: errors, paths, process/ (which may use only errors, paths and itself), the
  config helpers (schema, spec_keys, composition, config_values), the registries and plugins, progress,
  commands and setup/ (the baseline environments);
- the stages in their order: data < partition < train;
- the job: its spec (spec.py, tracking_spec.py) and identity (run keys, sweep ids);
- tracking (track/): logs a job it is given and reads runs back;
- experiments (experiments/): the drivers and doc generators behind scripts/, and the claims;
- the entry points: run.py, cli.py, startup.py, __main__.py.

Run as a script to print the circles and upward imports of the working tree.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "gnnbench"

BELOW_THE_STAGES = 0
LAYERS = {
    **dict.fromkeys(
        ("__init__", "errors", "paths", "process", "spec_keys", "composition", "config_values",
         "schema", "registry", "plugins", "progress", "commands", "setup"),
        BELOW_THE_STAGES,
    ),
    "data": 1,
    "partition": 2,
    "train": 3,
    **dict.fromkeys(("spec", "tracking_spec", "identity"), 4),
    "track": 5,
    "experiments": 6,
    **dict.fromkeys(("run", "cli", "startup", "__main__"), 7),
}  # fmt: skip
PROCESS_MAY_USE = ("gnnbench.errors", "gnnbench.paths", "gnnbench.process")


def module_files(package: Path = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> source file, for every module of the package."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imported_names(module: str, path: Path) -> set[str]:
    """Every dotted name a module imports, relative imports resolved (`from a import b` gives
    both `a` and `a.b`: b may be a module or a name in a)."""
    names = set()
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            source = ".".join([*base, *([node.module] if node.module else [])])
            names |= {source} | {f"{source}.{alias.name}" for alias in node.names}
    return names


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (the longest module each name lies in)."""
    files = module_files(package)

    def owner(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for module, path in files.items():
        targets = {owner(name) for name in imported_names(module, path)}
        graph[module] = {target for target in targets if target and target != module}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def layer(module: str) -> int:
    """The layer of a module: that of its top-level name under gnnbench."""
    top = module.split(".")[1] if "." in module else "__init__"
    if top not in LAYERS:
        raise AssertionError(f"{module}: no layer; place `{top}` in LAYERS (this file)")
    return LAYERS[top]


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """`a -> b` for every import of a module from a layer above its own."""
    return [f"{source} -> {target}" for source, targets in sorted(graph.items())
            for target in sorted(targets) if layer(target) > layer(source)]  # fmt: skip


def test_no_import_circle():
    assert circles(import_graph()) == []


def test_no_import_from_a_higher_layer():
    assert upward_imports(import_graph()) == []


def test_process_utilities_import_no_stage():
    """gnnbench/process/ sits below every stage: it may use errors, paths and itself, nothing of
    data, partition, train, track or run, nor the other helpers."""
    for module, targets in import_graph().items():
        if module.startswith("gnnbench.process"):
            above = sorted(t for t in targets if not t.startswith(PROCESS_MAY_USE))
            assert not above, f"{module} imports {above}"


def test_the_checks_see_a_circle_an_upward_import_and_a_type_only_import(tmp_path):
    """A planted package: data imports train under TYPE_CHECKING, train imports data inside a
    function; both count, as a circle and as an upward import."""
    package = tmp_path / "gnnbench"
    (package / "data").mkdir(parents=True)
    (package / "train").mkdir()
    for folder in (package, package / "data", package / "train"):
        (folder / "__init__.py").write_text("")
    (package / "data" / "store.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from gnnbench.train.spec import X\n"
    )
    (package / "train" / "spec.py").write_text("def f():\n    from ..data import store\n")
    graph = import_graph(package)
    assert circles(graph) == [["gnnbench.data.store", "gnnbench.train.spec"]]
    assert upward_imports(graph) == ["gnnbench.data.store -> gnnbench.train.spec"]


if __name__ == "__main__":
    whole = import_graph()
    for component in circles(whole):
        print("circle:", " <-> ".join(component))
    for line in upward_imports(whole):
        print("upward:", line)
