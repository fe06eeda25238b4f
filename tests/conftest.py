"""Shared fixtures: a private cache root per test, `requires_dataset` for the real datasets, and
`triangles`, the hand-checked graph of tests/helpers/graphs.py, the baseline environments' fixtures
and `graph`, a small community graph with a hash book. Helpers live in tests/helpers/.

Real datasets are read from GNNBENCH_RAW_DIR (default: gnnbench.paths.raw_dir(), a
`shared/datasets` folder next to the checkout when there is one). A test reading one is marked
`@requires_dataset("planetoid/ind.cora.graph", ...)`: skipped with the reason when a file is
absent, failed instead under CI=true (CI has the datasets; a silent skip would hide a broken path).

`make test` runs the tests in two pytest-xdist workers. A test marked `alone` runs with no other
test beside it: it times CPU, bounds a wall clock, or inspects machine-wide state (every process,
/dev/shm) that a neighbouring test would change.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.alone import alone_beside_other_workers  # noqa: F401  (autouse)
from helpers.datasets import RAW_DIR, in_ci
from helpers.graphs import TWO_TRIANGLES, community_store, make_store

from gnnbench.data.store import GraphStore
from gnnbench.paths import gnnbench_home as home_of_environment
from gnnbench.setup import baseline_envs


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
def pyg_generated_code_removed(tmp_path_factory):
    """For a test that builds PyG layers itself (PyG's, or gnnbench's subclasses of them outside
    build_model): the module PyG generates per layer class goes into a private temporary folder,
    removed when the test ends, as build_model does for a run. pytest's base folder is made
    first, or it would be made inside that folder and vanish with it; and only around such a
    test, not the session: whatever else first makes a folder in the moved temporary folder
    (multiprocessing's, pytest's) loses it when the folder goes (the sampler tests failed so)."""
    from gnnbench.train.models import generated_code_removed

    tmp_path_factory.getbasetemp()
    with generated_code_removed():
        yield


# The cache root this session was started with, where `python -m gnnbench setup` put DGL's env
# (each test then gets a private GNNBENCH_HOME of its own).
SETUP_HOME = home_of_environment()


@pytest.fixture
def gnnbench_home(tmp_path, monkeypatch) -> Path:
    """GNNBENCH_HOME pointed at a fresh directory; raw files read from RAW_DIR (subprocesses too)."""
    home = tmp_path / "gnnbench_home"
    monkeypatch.setenv("GNNBENCH_HOME", str(home))
    monkeypatch.setenv("GNNBENCH_RAW_DIR", str(RAW_DIR))
    return home


@pytest.fixture
def triangles(tmp_path) -> GraphStore:
    """TWO_TRIANGLES (tests/helpers/graphs.py) as a store with node data: split train {0, 3}."""
    return make_store(tmp_path / "triangles", TWO_TRIANGLES, 6, node_data=True)


@pytest.fixture
def small_sweep_store(tmp_path):
    """A fresh MLflow store holding one small training sweep (see tests/helpers/sweep_fixtures.py)."""
    from helpers.sweep_fixtures import build_small_sweep

    return build_small_sweep(tmp_path / "store")


def _missing(what: str) -> None:
    message = f"{what} is not set up: run python -m gnnbench setup {what}"
    if in_ci():
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture
def pyg_metis_ready():
    if not baseline_envs.torch_sparse_with_metis():
        _missing("pyg_metis")


@pytest.fixture
def distdgl_ready(gnnbench_home):
    """Link the DistDGL environment set up under the session's cache root into the test's root."""
    env = SETUP_HOME / "envs" / "distdgl"
    if not (env / ".complete").is_file():
        _missing("distdgl_metis")
    (gnnbench_home / "envs").mkdir(parents=True, exist_ok=True)
    (gnnbench_home / "envs" / "distdgl").symlink_to(env)


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    """(store, book path with p=2) shared by the run tests; the book is built by the real stage."""
    from gnnbench.partition.spec import PartitionSpec
    from gnnbench.partition.stage.runner import run_partition_stage

    root = tmp_path_factory.mktemp("train")
    store = community_store(root / "store")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GNNBENCH_HOME", str(root / "home"))
        book, _ = run_partition_stage(
            store, partitioner=PartitionSpec.defaults("hash"), p=2, seed=0
        )
    return store, book.path
