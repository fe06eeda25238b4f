"""Shared fixtures: a private cache root per test, `requires_dataset` for the real datasets, and
`triangles`, the hand-checked graph of tests/graphs.py.

Real datasets are read from GNNBENCH_RAW_DIR (default: gnnbench.paths.raw_dir(), a
`shared/datasets` folder next to the checkout when there is one). A test reading one is marked
`@requires_dataset("planetoid/ind.cora.graph", ...)`: skipped with the reason when a file is
absent, failed instead under CI=true (CI has the datasets; a silent skip would hide a broken path).

`make test` runs the tests in two pytest-xdist workers. A test marked `alone` runs with no other
test beside it: it times CPU, bounds a wall clock, or inspects machine-wide state (every process,
/dev/shm) that a neighbouring test would change.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from alone import alone_beside_other_workers  # noqa: F401  (autouse)
from graphs import TWO_TRIANGLES, make_store

from gnnbench.data.store import GraphStore
from gnnbench.paths import raw_dir

RAW_DIR = raw_dir()
CORA = "planetoid/ind.cora.graph"  # the file every cora test needs first


def requires_dataset(*relative_paths: str) -> pytest.MarkDecorator:
    """Mark a test that reads these paths under RAW_DIR (skipped, or failed in CI, without them)."""
    return pytest.mark.requires_dataset(*relative_paths)


def in_ci() -> bool:
    """Whether the CI variable says this is CI (`CI=true`, as CI services set it)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers",
        "requires_dataset(*paths): reads these files under GNNBENCH_RAW_DIR; "
        "skipped without them (failed under CI=true)",
    )


def pytest_runtest_setup(item) -> None:
    """Skip (fail under CI) a test whose real dataset files are not under RAW_DIR."""
    for marker in item.iter_markers("requires_dataset"):
        missing = [path for path in marker.args if not (RAW_DIR / path).exists()]
        if missing:
            message = (
                f"real dataset {missing[0]} not under GNNBENCH_RAW_DIR={RAW_DIR} "
                "(point it at a folder laid out like shared/datasets)"
            )
            if in_ci():
                pytest.fail(message, pytrace=False)
            pytest.skip(message)


@pytest.fixture
def gnnbench_home(tmp_path, monkeypatch) -> Path:
    """GNNBENCH_HOME pointed at a fresh directory; raw files read from RAW_DIR (subprocesses too)."""
    home = tmp_path / "gnnbench_home"
    monkeypatch.setenv("GNNBENCH_HOME", str(home))
    monkeypatch.setenv("GNNBENCH_RAW_DIR", str(RAW_DIR))
    return home


@pytest.fixture
def triangles(tmp_path) -> GraphStore:
    """TWO_TRIANGLES (tests/graphs.py) as a store with node data: split train {0, 3}."""
    return make_store(tmp_path / "triangles", TWO_TRIANGLES, 6, node_data=True)


@pytest.fixture
def small_sweep_store(tmp_path):
    """A fresh MLflow store holding one small training sweep (see tests/sweep_fixtures.py)."""
    from sweep_fixtures import build_small_sweep

    return build_small_sweep(tmp_path / "store")
