"""The in-memory baselines from PyPI: partitioner=kaminpar (KaMinPar) and partitioner=kahip (KaFFPa).

They come with the `partitioners` extra (make install has it); without it these tests skip
locally and fail in CI, like the other baselines.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from helpers.cli import gnnbench
from helpers.configured import dataset_config
from helpers.datasets import CORA, requires_dataset
from helpers.graphs import make_store

from gnnbench.data.datasets import prepare_dataset
from gnnbench.errors import BaselineUnavailable, ConfigError, OutOfMemory
from gnnbench.partition.algorithms.kahip import MODES
from gnnbench.partition.algorithms.kaminpar import CONTEXTS, write_parhip
from gnnbench.partition.baselines.in_memory import EXTRA_INSTALL
from gnnbench.partition.spec import PartitionSpec, vertex_balance_bound
from gnnbench.partition.stage.runner import run_partition_stage
from gnnbench.process import lifecycle
from gnnbench.process.atomic import is_stale

SETTINGS = [("kaminpar", {"context": c}) for c in CONTEXTS] + [
    ("kahip", {"mode": m}) for m in MODES
]


@pytest.fixture(autouse=True)
def packages_installed():
    missing = [m for m in ("kaminpar", "kahip") if importlib.util.find_spec(m) is None]
    if missing:
        message = f"{', '.join(missing)} not installed: {EXTRA_INSTALL}"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)


# Three triangles in a chain (bridges 2-3 and 5-6): the one partition into 3 blocks of 3 nodes
# that cuts 2 edges is the triangles themselves; any other cuts at least 4.
TRIANGLE_CHAIN = [(0, 1), (1, 2), (0, 2), (3, 4), (4, 5), (3, 5), (6, 7), (7, 8), (6, 8)]
TRIANGLE_CHAIN += [(2, 3), (5, 6)]


def _blocks(owner: np.ndarray) -> set[frozenset[int]]:
    return {frozenset(np.flatnonzero(owner == b).tolist()) for b in np.unique(owner)}


@pytest.mark.parametrize(
    "name,params", SETTINGS, ids=[f"{n}-{list(k.values())[0]}" for n, k in SETTINGS]
)
def test_finds_the_triangles_of_a_hand_checked_graph(tmp_path, name, params):
    store = make_store(tmp_path / "chain", TRIANGLE_CHAIN, 9)
    owner = PartitionSpec.defaults(name, **params).run(store, 3, seed=1).owner
    assert _blocks(owner) == {frozenset({0, 1, 2}), frozenset({3, 4, 5}), frozenset({6, 7, 8})}
    assert not list(store.path.glob(".*tmp*"))  # KaMinPar's graph file is gone


def test_parhip_file_layout(tmp_path):
    """Header (version, n, 2|E|), byte offsets of each node's first neighbour, uint32 neighbours."""
    indptr, indices = np.array([0, 1, 3, 4], np.int32), np.array([1, 0, 2, 1], np.int32)
    write_parhip(tmp_path / "g.parhip", indptr, indices)
    raw = (tmp_path / "g.parhip").read_bytes()
    assert np.frombuffer(raw[:24], "<u8").tolist() == [0b1111, 3, 4]  # no weights, 32-bit ids
    first = 24 + 4 * 4
    assert np.frombuffer(raw[24:first], "<u4").tolist() == [
        first,
        first + 4,
        first + 12,
        first + 16,
    ]
    assert np.frombuffer(raw[first:], "<u4").tolist() == [1, 0, 2, 1]


@pytest.mark.parametrize("wide", [False, True])
def test_kaminpar_reads_the_parhip_file_back(tmp_path, monkeypatch, wide):
    """Both offset widths (64-bit ones from 4 GB files on: forced here) read back by KaMinPar."""
    import kaminpar as package

    from gnnbench.partition.algorithms import kaminpar

    monkeypatch.setattr(kaminpar, "NARROW_OFFSETS_BELOW", 0 if wide else 2**32)
    store = make_store(tmp_path / "chain", TRIANGLE_CHAIN, 9)
    write_parhip(tmp_path / "g.parhip", *store.csr(np.int32))
    assert np.fromfile(tmp_path / "g.parhip", "<u8", count=1)[0] == (0b1011 if wide else 0b1111)
    graph = package.load_graph(str(tmp_path / "g.parhip"), package.GraphFileFormat.PARHIP)
    assert (graph.n(), graph.m()) == (9, 2 * len(TRIANGLE_CHAIN))
    assert sorted(v for v, _ in graph.neighbors(3)) == [2, 4, 5]


@requires_dataset(CORA)
@pytest.mark.parametrize("name,params", [("kaminpar", {}), ("kahip", {})])
def test_on_cora_deterministic_per_seed_and_balanced(gnnbench_home, name, params):
    store = prepare_dataset(dataset_config("cora"))
    spec = PartitionSpec.defaults(name, **params)
    book, _ = run_partition_stage(store, partitioner=spec, p=8, seed=3, node_data=False)
    metrics = book.metrics
    assert 0 < metrics["edge_cut"] < 0.15  # METIS cuts about 0.10 of cora's edges at p=8
    bound, source = vertex_balance_bound(spec, 8, store.num_nodes)
    assert metrics["vertex_balance"] <= bound <= 1.03 + 2 * 8 / 2708 and source == f"{name}'s own"
    assert metrics["partition_peak_mb"] > 0 and metrics["partition_time_s"] > 0
    again = spec.run(store, 8, seed=3).owner
    np.testing.assert_array_equal(np.load(book.path / "owner.npy"), again)


@pytest.mark.parametrize(
    "name,key,value",
    [("kaminpar", "context", "turbo"), ("kahip", "mode", "social"), ("kahip", "imbalance", 1.5)],
)
def test_bad_preset_is_one_line_naming_the_key(tmp_path, name, key, value):
    store = make_store(tmp_path / "chain", TRIANGLE_CHAIN, 9)
    with pytest.raises(ConfigError, match=f"partitioner.{key}: expected"):
        PartitionSpec.defaults(name, **{key: value}).run(store, 3, seed=0)


@pytest.fixture
def hidden_packages(tmp_path, monkeypatch):
    """kaminpar and kahip that fail to import, for this process and the ones it starts."""
    shadow = tmp_path / "shadow"
    for module in ("kaminpar", "kahip"):
        (shadow / module).mkdir(parents=True)
        (shadow / module / "__init__.py").write_text("raise ImportError('not installed (test)')\n")
    monkeypatch.setenv("PYTHONPATH", f"{shadow}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    for module in ("kaminpar", "kahip"):
        monkeypatch.setitem(__import__("sys").modules, module, None)


@pytest.mark.fault("baseline: kaminpar or kahip not installed")
@pytest.mark.parametrize("name", ["kaminpar", "kahip"])
def test_missing_package_names_the_install_command(tmp_path, hidden_packages, name):
    """Running kaminpar or kahip when the package cannot be imported is BaselineUnavailable
    giving the command pip install 'gnnbench[partitioners]'."""
    store = make_store(tmp_path / "chain", TRIANGLE_CHAIN, 9)
    with pytest.raises(BaselineUnavailable, match=r"pip install 'gnnbench\[partitioners\]'"):
        PartitionSpec.defaults(name).run(store, 3, seed=0)


@pytest.mark.fault("baseline: kaminpar not installed, in a single run")
@requires_dataset(CORA)
def test_missing_package_single_run_is_one_line(tmp_path, gnnbench_home, hidden_packages):
    """A single run of partitioner=kaminpar without the package exits 2; the last stderr line
    names partitioner=kaminpar and ends with the install command, and no owner.npy is written
    under GNNBENCH_HOME/partitions."""
    completed = gnnbench(tmp_path, "dataset=cora", "partitioner=kaminpar", "train=none")
    assert completed.returncode == 2, completed.stderr[-2000:]
    line = completed.stderr.strip().splitlines()[-1]
    assert line.startswith("gnnbench: error: partitioner=kaminpar: the kaminpar package")
    assert line.endswith(EXTRA_INSTALL)
    assert not list(Path(gnnbench_home, "partitions").glob("*/owner.npy"))


@pytest.mark.fault("memory: kaminpar or kahip over the cap")
@pytest.mark.parametrize("name", ["kaminpar", "kahip"])
def test_package_out_of_memory_under_the_cap_is_out_of_memory(gnnbench_home, name):
    """Room for the edges and the CSR but not for the package's own graph. The C++ allocation
    fails as a MemoryError (std::bad_alloc), or KaMinPar aborts on a failed allocation of its own
    (SIGABRT); the stage reports either as out of memory, and a graph file an abort leaves behind
    is a stale temporary the next run removes."""
    store = prepare_dataset(
        {**dataset_config("rgg"), "name": "rgg-cap", "num_nodes": 30000, "avg_degree": 40}
    )
    # what the step itself holds before the package runs: the edges and the 32-bit CSR
    ours_mb = (store.num_nodes + 1 + 4 * store.num_edges) * 4 / 2**20
    script = textwrap.dedent(
        f"""
        import numpy as np
        from pathlib import Path
        from gnnbench.data.store import GraphStore
        from gnnbench.process.memory_limit import apply_memory_limit, is_out_of_memory
        from gnnbench.process.memory_limit import private_bytes
        from gnnbench.partition.spec import PartitionSpec
        import {name}
        store = GraphStore(Path({str(store.path)!r}))
        store.csr(np.int32)  # compiled before the cap
        spec = PartitionSpec.defaults({name!r})  # the config's composition is not the package's
        apply_memory_limit(private_bytes() + int({2 * ours_mb} * 2**20))
        try:
            spec.run(store, 4, 0)
            print("finished")
        except MemoryError as exc:
            print("out of memory", is_out_of_memory(exc, True), exc)
        """
    )
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    if completed.returncode < 0:  # aborted: what the stage makes of it under a cap
        died = lifecycle.signal_death("kaminpar", completed.returncode, True, None)
        assert name == "kaminpar" and isinstance(died, OutOfMemory), completed.stderr[-2000:]
        assert "out of memory" in completed.stderr
    else:
        assert completed.returncode == 0, completed.stderr[-2000:]
        assert completed.stdout.strip() == "out of memory True std::bad_alloc"
    assert all(is_stale(left) for left in store.path.glob(".*tmp*"))
