"""Rooms small enough to know: no module in gnnbench/ or scripts/ over 400 lines, no function in
gnnbench/ over 60, and scripts/ under 1,000 lines in all (thin command lines over the package).

Compiled kernels (a numba.njit / numba.jit decorator) are exempt from the function limit: a hot
loop is clearer in one piece than split across calls numba would have to inline again. Run as a
script (`python tests/test_structure.py`) to list every offender with its size.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "gnnbench"
SCRIPTS = PACKAGE.parent / "scripts"
MAX_MODULE_LINES = 400
MAX_SCRIPTS_LINES = 1000
MAX_FUNCTION_LINES = 60
KERNEL_DECORATORS = {"njit", "jit"}


def modules(package: Path = PACKAGE) -> list[Path]:
    """Every Python source file of the package, in a stable order."""
    return sorted(path for path in package.rglob("*.py") if "__pycache__" not in path.parts)


def scripts() -> list[Path]:
    """The command lines of scripts/."""
    return sorted(SCRIPTS.glob("*.py"))


def line_count(path: Path) -> int:
    return len(path.read_text().splitlines())


def decorator_name(decorator: ast.expr) -> str:
    """The last name of a decorator: `numba.njit(cache=True)` -> "njit"."""
    if isinstance(decorator, ast.Call):
        decorator = decorator.func
    if isinstance(decorator, ast.Attribute):
        return decorator.attr
    return decorator.id if isinstance(decorator, ast.Name) else ""


def is_kernel(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(decorator_name(d) in KERNEL_DECORATORS for d in function.decorator_list)


def long_functions(path: Path, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """`path:line name (N lines)` for each non-kernel function or method longer than `limit`,
    counted from its `def` line to its last line (decorators excluded)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or is_kernel(node):
            continue
        length = node.end_lineno - node.lineno + 1
        if length > limit:
            found.append(f"{relative(path)}:{node.lineno} {node.name} ({length} lines)")
    return found


def long_modules(limit: int = MAX_MODULE_LINES) -> list[str]:
    """`path (N lines)` for each module of the package or script longer than `limit`."""
    sizes = {path: line_count(path) for path in [*modules(), *scripts()]}
    return [f"{relative(path)} ({size} lines)" for path, size in sizes.items() if size > limit]


def relative(path: Path) -> str:
    """The path from the repository root (as is outside it)."""
    return (
        str(path.relative_to(PACKAGE.parent)) if path.is_relative_to(PACKAGE.parent) else str(path)
    )


def test_no_module_over_the_limit():
    offenders = long_modules()
    assert not offenders, f"modules over {MAX_MODULE_LINES} lines: " + "; ".join(offenders)


def test_scripts_stay_thin():
    total = sum(line_count(path) for path in scripts())
    assert total < MAX_SCRIPTS_LINES, f"scripts/ holds {total} lines (limit {MAX_SCRIPTS_LINES})"


def test_no_function_over_the_limit():
    offenders = [line for path in modules() for line in long_functions(path)]
    assert not offenders, f"functions over {MAX_FUNCTION_LINES} lines: " + "; ".join(offenders)


def test_the_checks_see_a_long_function_and_skip_a_kernel(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    source = tmp_path / "sample.py"
    source.write_text(
        f"import numba\n\ndef plain():\n{body}\n\n@numba.njit(cache=True)\ndef kernel():\n{body}\n"
    )
    found = long_functions(source)
    assert len(found) == 1 and " plain (61 lines)" in found[0]


if __name__ == "__main__":
    for line in long_modules() + [line for path in modules() for line in long_functions(path)]:
        print(line)
    print(f"scripts/: {sum(line_count(path) for path in scripts())} lines")


@pytest.mark.parametrize("script", sorted(path.name for path in scripts()))
def test_every_script_answers_help_without_running(script, tmp_path):
    """`--help` prints the usage and does nothing else: a script without a parser once ran its
    whole experiment (and rewrote its doc) when asked for help."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "GNNBENCH_HOME": str(tmp_path), "GNNBENCH_RAW_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, str(PACKAGE.parent / "scripts" / script), "--help"],
                          capture_output=True, text=True, timeout=120, env=env)  # fmt: skip
    assert done.returncode == 0 and done.stdout.startswith("usage:"), done.stdout + done.stderr


def _imported_test_modules(path: Path) -> list[str]:
    """The test modules (test_*, conftest: tests' own, not bench's) a file imports."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        found += [
            name for name in names if name.removeprefix("tests.").startswith(("test_", "conftest"))
        ]
    return found


def test_tests_share_helpers_only_through_their_package():
    """Test modules import shared code from tests/helpers/ (fixtures come from conftest.py by
    name), never from another test module or from conftest; tests/ holds no other helper."""
    tests = Path(__file__).parent
    found = {
        f"{path.relative_to(tests)}: {name}"
        for path in [*tests.glob("*.py"), *(tests / "helpers").glob("*.py")]
        for name in _imported_test_modules(path)
    }
    assert not found, sorted(found)
    loose = {p.name for p in tests.glob("*.py")} - {"conftest.py", "__init__.py"}
    assert all(name.startswith("test_") for name in loose), sorted(loose)


def test_the_import_check_sees_a_test_module_import(tmp_path):
    planted = tmp_path / "test_planted.py"
    planted.write_text("from test_train import FAST\nfrom conftest import CORA\nimport helpers\n")
    assert _imported_test_modules(planted) == ["test_train", "conftest"]


TORCH_NAMES_OF_NUM_GPUS = {"world_size", "num_workers"}  # torch's keywords; ours is num_gpus


def second_names_of_num_gpus(path: Path) -> list[str]:
    """`path:line name` for each variable, parameter, attribute or string (a logged key) named as
    torch names the worker count; a keyword argument is a call into torch's API and passes."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [f"{relative(path)}:{node.lineno} {_named(node)}" for node in ast.walk(tree)
            if _named(node) in TORCH_NAMES_OF_NUM_GPUS]  # fmt: skip


def _named(node: ast.AST) -> object:
    """The name a node gives: a variable's, a parameter's, an attribute's, a string's text."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.arg):
        return node.arg
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.value if isinstance(node, ast.Constant) else None


def test_the_worker_count_has_one_name_from_the_command_line_to_the_launcher():
    found = [hit for path in modules() for hit in second_names_of_num_gpus(path)]
    assert not found, "call it num_gpus: " + "; ".join(found)


def test_the_name_check_sees_a_second_name_and_passes_torch_keywords(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text(
        "def f(world_size):\n    return {'num_workers': group.world_size}\n"
        "dist.init_process_group('gloo', world_size=n)\nDataLoader(x, num_workers=0)\n"
    )
    hits = [hit.split(" ")[1] for hit in second_names_of_num_gpus(planted)]
    assert hits == ["world_size", "num_workers", "world_size"]
