"""The in-memory METIS baselines: metis (pymetis), pyg_metis (ClusterData), distdgl_metis (DGL).

pyg_metis and distdgl_metis need `python -m gnnbench setup ...` first; locally their tests skip
without it, in CI (CI=true, where .ci/run sets them up) they fail.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from helpers.cli import gnnbench
from helpers.configured import dataset_config
from helpers.datasets import CORA, requires_dataset
from helpers.runs import runs

from gnnbench.data.datasets import prepare_dataset
from gnnbench.errors import BaselineUnavailable, OutOfMemory
from gnnbench.partition.spec import PartitionSpec
from gnnbench.partition.stage.runner import run_partition_stage
from gnnbench.setup import baseline_envs


def _partition(name: str, p: int = 4, **params):
    store = prepare_dataset(dataset_config("cora"))
    spec = PartitionSpec.defaults(name, **params)
    book, cached = run_partition_stage(store, partitioner=spec, p=p, seed=0, node_data=False)
    assert not cached
    return store, book


def _check_book(store, book, p: int) -> np.ndarray:
    owner = np.load(book.path / "owner.npy")
    assert owner.shape == (store.num_nodes,) and set(np.unique(owner)) == set(range(p))
    metrics = book.metrics
    assert 1.0 < metrics["replication_factor"] < 2.0  # cora: METIS keeps most neighbours local
    assert 0.0 < metrics["edge_cut"] < 0.2
    assert metrics["vertex_balance"] < 1.2
    assert metrics["partition_peak_mb"] > 0 and metrics["partition_rss_mb"] > 0
    assert metrics["partition_time_s"] > 0
    return owner


@requires_dataset(CORA)
def test_metis_on_cora_is_deterministic(gnnbench_home):
    store, book = _partition("metis")
    owner = _check_book(store, book, 4)
    assert json.loads((book.path / "meta.json").read_text())["stats"]["metis_edge_cut"] > 0
    shutil.rmtree(book.path)  # a fresh run, not the cached book, must give the same owners
    again = _partition("metis")[1]
    assert np.array_equal(owner, np.load(again.path / "owner.npy"))


@requires_dataset(CORA)
def test_pyg_metis_on_cora(gnnbench_home, pyg_metis_ready):
    store, book = _partition("pyg_metis")
    _check_book(store, book, 4)
    _check_one_meter(store, book)


@requires_dataset(CORA)
def test_distdgl_metis_on_cora(gnnbench_home, distdgl_ready):
    store, book = _partition("distdgl_metis")
    _check_book(store, book, 4)
    _check_one_meter(store, book)


def _check_one_meter(store, book) -> None:
    """partition_* is the structure-only run every partitioner does (below the feature bytes);
    the run a framework's user pays, loading the node features too, is logged beside it."""
    feature_mb = store.num_nodes * store.feature_dim * 4 / 2**20
    metrics = book.metrics
    assert metrics["partition_peak_mb"] < feature_mb < metrics["partition_with_features_peak_mb"]
    assert metrics["partition_with_features_rss_mb"] > 0
    assert metrics["partition_with_features_time_s"] > 0


@pytest.mark.fault("baseline: pyg_metis not set up")
def test_missing_pyg_environment_names_the_setup_command(monkeypatch):
    """Without torch-sparse's METIS, require_pyg_metis raises BaselineUnavailable naming the
    command `python -m gnnbench setup pyg_metis`."""
    monkeypatch.setattr(baseline_envs, "torch_sparse_with_metis", lambda: False)
    with pytest.raises(BaselineUnavailable, match="python -m gnnbench setup pyg_metis"):
        baseline_envs.require_pyg_metis()


def _one_job_failed(tmp_path, overrides, finished: str, failed: str, error_type: str, timeout=300):
    """Sweep `partitioner=<finished>,<failed>`: one FINISHED, one FAILED with `error_type`."""
    partitioners = f"partitioner={finished},{failed}"
    completed = gnnbench(
        tmp_path, "-m", *overrides, partitioners, "p=4", "train=none", timeout=timeout
    )
    assert completed.returncode == 1, completed.stderr[-3000:]
    _, found = runs(tmp_path)
    by_name = {r.data.params["partitioner.name"]: r for r in found}
    assert by_name[finished].info.status == "FINISHED"
    assert by_name[failed].info.status == "FAILED"
    assert by_name[failed].data.tags["error_type"] == error_type
    return completed, by_name[finished], by_name[failed]


@pytest.mark.fault("baseline: distdgl_metis not set up, in a sweep")
@requires_dataset(CORA)
def test_missing_distdgl_environment_fails_its_job_only(tmp_path, gnnbench_home):
    """In a sweep of metis and distdgl_metis without the DistDGL environment, the sweep exits 1:
    metis FINISHED, distdgl_metis FAILED with error_type BaselineUnavailable, and stderr names
    `python -m gnnbench setup distdgl_metis`."""
    completed, _, _ = _one_job_failed(
        tmp_path, ["dataset=cora"], "metis", "distdgl_metis", "BaselineUnavailable"
    )
    assert "python -m gnnbench setup distdgl_metis" in completed.stderr


@pytest.mark.fault("baseline: a missing baseline in a single run")
@requires_dataset(CORA)
def test_missing_environment_single_run_is_one_line(tmp_path, gnnbench_home):
    """A single run of partitioner=distdgl_metis without its environment exits 2; the last stderr
    line is a gnnbench error naming partitioner=distdgl_metis and mentioning setup."""
    completed = gnnbench(tmp_path, "dataset=cora", "partitioner=distdgl_metis", "train=none")
    assert completed.returncode == 2
    line = completed.stderr.strip().splitlines()[-1]
    assert line.startswith("gnnbench: error: partitioner=distdgl_metis") and "setup" in line


@pytest.mark.fault("memory: a cap below what the process holds")
@requires_dataset(CORA)
def test_cap_below_what_the_process_holds_is_one_line(tmp_path, gnnbench_home):
    """A cap the partition process already exceeds could only fail somewhere arbitrary (the
    meter's thread, a library load): it is a config error naming what the process holds."""
    completed = gnnbench(tmp_path, "dataset=cora", "partitioner.memory_limit_gb=0.01", "train=none")
    assert completed.returncode == 2
    line = completed.stderr.strip().splitlines()[-1]
    assert line.startswith("gnnbench: error: partitioner.memory_limit_gb=0.01: below the ")
    assert not list(Path(gnnbench_home, "partitions").glob("*/owner.npy"))  # no book written


@pytest.mark.fault("config: setup of an unknown baseline")
def test_setup_rejects_unknown_names(tmp_path):
    """`gnnbench setup` of an unknown name exits 2 and lists the names it accepts (pyg_metis,
    distdgl_metis)."""
    completed = gnnbench(tmp_path, "setup", "metis_for_everyone")
    assert completed.returncode == 2
    assert "expected one or more of pyg_metis, distdgl_metis" in completed.stderr


@pytest.mark.fault("memory: an allocation over the cap")
def test_an_allocation_over_the_cap_is_out_of_memory(tmp_path):
    """Under the cap a failed allocation becomes OutOfMemory carrying the peak reached."""
    script = textwrap.dedent(
        f"""
        import numpy as np
        from pathlib import Path
        from gnnbench.process.memory_limit import apply_memory_limit
        from gnnbench.partition.stage.runner import tracked
        from gnnbench.errors import OutOfMemory

        def work():
            kept = np.ones(64 * 2**20 // 8)          # 64 MB the tracker sees
            return kept.sum() + np.ones(2**40 // 8).sum()  # 1 TB: refused under any cap here

        apply_memory_limit(16 * 2**30)
        try:
            tracked(Path({str(tmp_path)!r}) / "t.memray", work, "planted", 16 * 2**30)
        except OutOfMemory as exc:
            print(exc)
            print(exc.metrics["partition_peak_mb"])
        """
    )
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr[-2000:]
    message, peak = completed.stdout.strip().splitlines()
    assert message.startswith("out of memory: planted reached heap peak")
    assert "partitioner.memory_limit_gb=16" in message
    assert 64 <= float(peak) < 1024


def test_out_of_memory_errors_are_recognised():
    from gnnbench.process.memory_limit import is_out_of_memory

    assert is_out_of_memory(MemoryError())
    assert is_out_of_memory(RuntimeError("std::bad_alloc"))
    assert is_out_of_memory(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried"))
    assert is_out_of_memory(OutOfMemory("out of memory: x"))
    assert not is_out_of_memory(ValueError("p must be positive"))
    try:  # the reason hidden behind a wrapper's message, as torch-sparse's loader does
        try:
            raise OSError("_version_cpu.so: failed to map segment from shared object")
        except OSError as cause:
            raise OSError("Could not load this library: _version_cpu.so") from cause
    except OSError as wrapped:
        assert is_out_of_memory(wrapped)
    try:  # `from None` hides the context: a real bug in a fallback stays a bug
        try:
            raise MemoryError
        except MemoryError:
            raise ValueError("fallback failed") from None
    except ValueError as hidden:
        assert not is_out_of_memory(hidden)
    # a thread that cannot start counts only under the cap, and non-blocking I/O never does
    memray_thread = RuntimeError("Resource temporarily unavailable")
    assert is_out_of_memory(memray_thread, capped=True) and not is_out_of_memory(memray_thread)
    assert not is_out_of_memory(
        BlockingIOError(11, "Resource temporarily unavailable"), capped=True
    )


@pytest.mark.fault("memory: pyg_metis under a tiny cap")
def test_pyg_metis_under_a_tiny_cap_is_out_of_memory_not_missing(pyg_metis_ready):
    """torch-sparse installed but unable to load under the cap: out of memory, not 'set it up'."""
    script = textwrap.dedent(
        """
        import torch
        from gnnbench.errors import BaselineUnavailable
        from gnnbench.setup.baseline_envs import require_pyg_metis
        import resource
        from gnnbench.process.memory_limit import LIMIT, is_out_of_memory, private_bytes

        # no room left at all (apply_memory_limit refuses such a cap), so that the first thing
        # to fail is the loader mapping torch-sparse's library, whatever the import order
        resource.setrlimit(LIMIT, (private_bytes(), resource.getrlimit(LIMIT)[1]))
        try:
            require_pyg_metis()
            print("loaded")
        except BaselineUnavailable as exc:
            print("unavailable:", exc)
        except OSError as exc:  # the library could not be mapped: out of memory, said plainly
            loader = exc.__cause__ or exc.__context__
            mapped = loader is not None and "failed to map segment" in str(loader)
            print("out of memory" if mapped and is_out_of_memory(exc) else f"other: {exc!r}")
        """
    )
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert completed.stdout.strip() == "out of memory"


@pytest.mark.fault("memory: METIS over the cap, SPRING under it")
@pytest.mark.slow
def test_cap_fails_metis_cleanly_and_spring_finishes(tmp_path, gnnbench_home):
    """A cap METIS cannot live under but SPRING can: METIS FAILED (out of memory), SPRING FINISHED."""
    graph = ["dataset=synthetic", "dataset.num_nodes=400000", "dataset.avg_degree=20",
             "dataset.feature_dim=8"]  # fmt: skip
    cap = "partitioner.memory_limit_gb=0.75"
    _, spring, metis = _one_job_failed(
        tmp_path, [*graph, cap], "spring", "metis", "OutOfMemory", 900
    )
    assert metis.data.tags["error"].startswith("out of memory: metis reached")
    peak = metis.data.metrics["partition_peak_mb"]  # the peak it reached, logged
    assert peak > 4 * spring.data.metrics["partition_peak_mb"]
    assert not list(Path(gnnbench_home, "partitions").glob("*metis*"))  # nothing half-written
