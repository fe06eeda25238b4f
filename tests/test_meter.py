"""The rules of the one meter (docs/design.md, "Metrics"), one test each.

1. No work on the graph before the tracker starts: every registered partitioner (and the
   refinement post-pass) reads the store only inside its measured step, and leaves no file behind
   in or beside the store for a later run to reuse.
   A second run on the same store builds it all again.
2. The resident peak is the step's own: a stage started from a parent holding a large block does
   not report that block.
3. No JIT compilation inside the measured step: the warm-up on the tiny graph compiles (or loads
   from numba's cache) every kernel specialisation the real run calls, in a fresh interpreter,
   on a graph large enough for every level of the multilevel coarsening.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers.graphs import make_store

from gnnbench.data.store import GraphStore
from gnnbench.partition.base import PARTITIONERS
from gnnbench.partition.spec import PartitionSpec
from gnnbench.partition.stage import runner as stage
from gnnbench.paths import gnnbench_home
from gnnbench.process.peak_rss import current_rss_mb
from gnnbench.setup import baseline_envs

# Every way a partitioner can read the graph out of a GraphStore.
STORE_READS = ("edge_stream", "edges", "csr", "degree", "features", "feature_layout", "labels")
P = 4


def _cases() -> list[tuple[str, dict]]:
    return [(name, {}) for name in PARTITIONERS.names()] + [("hash", {"refine_passes": 1})]


def _skip_without_environment(name: str, monkeypatch) -> None:
    """The baselines that run in environments of their own skip when those are not set up."""
    if name == "pyg_metis" and not baseline_envs.torch_sparse_with_metis():
        pytest.skip("pyg_metis is not set up: run python -m gnnbench setup pyg_metis")
    if name == "distdgl_metis":
        home = gnnbench_home()  # the session's root, where `setup distdgl_metis` put the env
        if not (home / "envs" / "distdgl" / ".complete").is_file():
            pytest.skip("distdgl_metis is not set up: run python -m gnnbench setup distdgl_metis")
        monkeypatch.setenv("GNNBENCH_HOME", str(home))


@pytest.fixture
def store(tmp_path) -> GraphStore:
    rng = np.random.default_rng(3)
    return make_store(tmp_path / "stores" / "g", rng.integers(0, 400, (3000, 2)), 400, True)


def _listing(folder: Path) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(folder)), p.stat().st_size) for p in folder.rglob("*"))


@pytest.mark.parametrize(("name", "overrides"), _cases(), ids=lambda case: str(case or ""))
def test_no_work_on_the_graph_before_the_tracker_starts(
    name, overrides, store, tmp_path, monkeypatch
):
    _skip_without_environment(name, monkeypatch)
    measuring, outside = [], []
    for method in STORE_READS:
        original = getattr(GraphStore, method)

        def spy(self, *args, _original=original, _method=method, **kwargs):
            if self.path == store.path and not measuring:  # the warm-up's tiny graph is no store
                outside.append(_method)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(GraphStore, method, spy)
    tracked = stage.tracked

    def flagged(tracker_file, work, *args, **kwargs):
        def measured():
            measuring.append(True)
            try:
                return work()
            finally:
                measuring.pop()

        return tracked(tracker_file, measured, *args, **kwargs)

    monkeypatch.setattr(stage, "tracked", flagged)
    monkeypatch.setattr(stage, "_flamegraph", lambda tracker, html: tracker.unlink())  # speed
    before = _listing(store.path.parent)
    spec = PartitionSpec.defaults(name, **overrides)
    book = tmp_path / "book"
    stage.partition_into(store, partitioner=spec, p=P, seed=0, dest=book)
    assert (book / "meta.json").is_file()
    assert outside == [], f"{name} read the store outside its measured step: {outside}"
    # nothing cached in or beside the store that a later run ("a warm home") would skip building
    assert _listing(store.path.parent) == before


def test_a_warm_home_builds_what_a_fresh_one_builds(store, tmp_path, monkeypatch):
    """A second run on the same store (a warm home, in the same process) builds the node-stream
    CSR again, inside its step: the same edge passes as the first, shared with the refinement."""
    monkeypatch.setattr(stage, "_flamegraph", lambda tracker, html: tracker.unlink())
    spec = PartitionSpec.defaults("ldg", refine_passes=1)
    metas = []
    for run in ("fresh", "warm"):
        stage.partition_into(store, partitioner=spec, p=P, seed=0, dest=tmp_path / run)
        metas.append(json.loads((tmp_path / run / "meta.json").read_text()))
    fresh, warm = metas
    assert fresh["stats"]["adjacency_build_passes"] >= 1
    assert warm["stats"] == fresh["stats"]  # build passes, refinement moves: the same work
    assert warm["metrics"]["passes"] == fresh["metrics"]["passes"]
    assert fresh["metrics"]["partition_load_1m"] >= 0  # what else ran beside the step


def test_resident_peak_excludes_the_launchers_memory(store, gnnbench_home):
    """ru_maxrss carries a forked launcher's size across exec: the child of a parent holding 1.5 GB
    would read >= 1.5 GB before doing anything. The tiny graph's stage holds a few hundred MB."""
    block = np.ones(1536 << 20, dtype=np.uint8)  # resident: every page written
    try:
        spec = PartitionSpec.defaults("hash")
        book, cached = stage.run_partition_stage(store, partitioner=spec, p=P, seed=0)
        assert not cached
        metrics = book.metrics
    finally:
        del block
    for figure in ("partition_rss_mb", "gnn_ready_rss_mb"):
        assert 0 < metrics[figure] < 768, (figure, metrics[figure])


def test_import_resident_peak_excludes_what_the_process_held(tmp_path):
    """import_rss_mb of an import in a process that held 1.5 GB earlier is the import's own."""
    from gnnbench.data.import_measure import measured_import

    held_before = (
        current_rss_mb()
    )  # this test process's own size, which depends on the tests before
    block = np.ones(1536 << 20, dtype=np.uint8)
    del block  # freed: the process's lifetime peak (ru_maxrss) stays >= 1.5 GB above held_before
    with measured_import(tmp_path / "capture.memray") as figures:
        np.ones(64 << 20, dtype=np.uint8)
    assert figures["import_rss_mb"] < held_before + 64 + 512, figures
    assert os.path.exists(tmp_path) and not (tmp_path / "capture.memray").exists()


PRESETS = ("quotient_best", "quotient_multilevel")


@pytest.fixture(scope="module")
def larger_store(tmp_path_factory) -> GraphStore:
    """More nodes than quotient's coarse_nodes (8192): the multilevel mode clusters every level."""
    rng = np.random.default_rng(4)
    edges = rng.integers(0, 12000, (60000, 2))
    return make_store(tmp_path_factory.mktemp("larger") / "g", edges, 12000, True)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "overrides"),
    [
        *_cases(),
        *((preset, {}) for preset in PRESETS),
        # levels coarsened in memory below the disk level (weighted, writable arrays)
        ("quotient_multilevel", {"coarse_nodes": 64}),
    ],
    ids=lambda case: str(case or ""),
)
def test_no_compilation_inside_the_measured_step(name, overrides, larger_store, monkeypatch):
    _skip_without_environment(name, monkeypatch)
    command = [
        sys.executable, str(Path(__file__).parent / "helpers" / "jit_probe.py"), name,
        json.dumps(overrides), str(larger_store.path), str(P),
    ]  # fmt: skip
    completed = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-2000:]
    compiled = json.loads(completed.stdout.strip().splitlines()[-1])
    assert compiled == [], f"{name} compiled inside its measured step: {compiled}"
