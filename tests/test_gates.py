"""The regression gates: comparisons, and planted regressions that must turn the bench red."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.datasets import CORA, requires_dataset

from bench import ab_kernels, compare
from bench.conftest import GateRecorder
from bench.gates import (
    MEMORY_REL_TOL,
    SPEED_MAX_FACTOR,
    STARTUP_MAX_FACTOR,
    BaselineFile,
    Gate,
    failures,
    git_output,
    table,
)

REPO = Path(__file__).resolve().parent.parent


def test_gate_verdicts():
    assert Gate("rf", 2.0, 2.019, "lower").passed
    assert not Gate("rf", 2.0, 2.03, "lower").passed
    assert Gate("rf", 2.0, 1.5, "lower").passed  # an improvement passes
    assert not Gate("f1", 0.80, 0.77, "higher").passed
    assert Gate("f1", 0.80, 0.79, "higher").passed
    assert Gate("speed", 10.0, 10 * SPEED_MAX_FACTOR - 0.01, "speed").passed
    assert not Gate("speed", 10.0, 10 * SPEED_MAX_FACTOR + 0.01, "speed").passed
    assert Gate("memory", 0.1, 0.1 * (1 + MEMORY_REL_TOL) - 1e-9, "memory").passed
    assert not Gate("memory", 0.1, 0.1 * (1 + MEMORY_REL_TOL) + 1e-9, "memory").passed
    assert Gate("startup", 1.0, STARTUP_MAX_FACTOR - 0.01, "startup").passed
    assert not Gate("startup", 1.0, STARTUP_MAX_FACTOR + 0.01, "startup").passed


@pytest.mark.parametrize("kind", ["lower", "higher", "memory", "speed"])
def test_a_gate_without_baseline_fails_and_says_how_to_create_one(kind, tmp_path):
    gate = BaselineFile(tmp_path / "speed.json").gate(
        "hdrf/powerlaw-5M/p8/reference_passes", 3.0, kind
    )
    assert not gate.passed
    assert failures([gate]) == [
        "hdrf/powerlaw-5M/p8/reference_passes: no baseline in bench/baselines/ (now 3.0); "
        "create it with `make bench-baselines` and commit the diff"
    ]
    assert "REGRESSED" in table([gate])


def test_a_speed_gate_cleared_by_its_ab_passes_and_says_so():
    cleared = Gate("a", 1.0, 2.0, "speed", cleared_by_ab=True)
    assert cleared.passed and not failures([cleared])
    assert "| ok (A/B)" in table([cleared])


def commit_baselines(repo: Path, values: dict, message: str, path: str = "speed.json") -> str:
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(json.dumps(values))
    git_output(repo, "add", path)
    git_output(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message)
    return git_output(repo, "rev-parse", "HEAD")


def test_a_baseline_was_written_by_the_newest_commit_that_changed_its_value(tmp_path):
    git_output(tmp_path, "init", "-q")
    first = commit_baselines(tmp_path, {"a": 1.0}, "a")
    second = commit_baselines(tmp_path, {"a": 1.0, "b": 2.0}, "b, a unchanged")
    third = commit_baselines(tmp_path, {"a": 1.5, "b": 2.0}, "a rewritten")
    commit_baselines(tmp_path, {"a": 1.5, "b": 2.5}, "b rewritten")
    baseline = BaselineFile(tmp_path / "speed.json")
    assert baseline.written_by("a") == third
    assert baseline.written_by("missing") is None
    git_output(tmp_path, "reset", "-q", "--hard", second)
    assert BaselineFile(tmp_path / "speed.json").written_by("a") == first  # a root commit
    assert BaselineFile(tmp_path / "speed.json").written_by("b") == second
    (tmp_path / "speed.json").write_text(json.dumps({"a": 9.0, "b": 2.0}))  # not committed
    assert BaselineFile(tmp_path / "speed.json").written_by("a") is None


def test_a_baseline_in_a_subdirectory_and_in_a_shallow_clone(tmp_path):
    origin, path = tmp_path / "origin", "bench/baselines/speed.json"
    git_output(tmp_path, "init", "-q", str(origin))
    first = commit_baselines(origin, {"a": 1.0}, "a", path)
    commit_baselines(origin, {"a": 1.0, "b": 2.0}, "b", path)
    assert BaselineFile(origin / path).written_by("a") == first
    shallow = tmp_path / "shallow"
    git_output(tmp_path, "clone", "-q", "--depth", "1", f"file://{origin}", str(shallow))
    # the writer of a is beyond the cut: git cannot tell, so the gate cannot clear a figure
    assert BaselineFile(shallow / path).written_by("a") is None


def test_a_baseline_outside_git_has_no_writer(tmp_path):
    BaselineFile(tmp_path / "speed.json").write({"a": 1.0})
    assert BaselineFile(tmp_path / "speed.json").written_by("a") is None


AB_EDGES = 200_000


def over_limit_gate(tmp_path, monkeypatch, kernel: str) -> tuple[GateRecorder, str]:
    """A recorder whose baseline puts any real time over the limit, written (as git says) by
    HEAD: the A/B then times the working tree's work against HEAD's kernel."""
    monkeypatch.setattr(compare, "BENCH_HOME", tmp_path / "ab-home")
    key = f"{kernel}/powerlaw-{AB_EDGES}/p8/reference_passes"
    baseline = BaselineFile(tmp_path / "speed.json")
    baseline.write({key: 1e-9})
    head = git_output(REPO, "rev-parse", "HEAD")
    monkeypatch.setattr(baseline, "written_by", lambda _: head)
    return GateRecorder(baseline, update=False), key


@pytest.mark.alone
@pytest.mark.slow
@pytest.mark.parametrize("kernel", ["hash", "ldg", "refine-replication"])
def test_a_gate_over_its_limit_on_unchanged_code_is_cleared_by_the_ab(
    kernel, tmp_path, monkeypatch, gnnbench_home
):
    """ldg builds its CSR in every call and the refinement pass reuses one: both sides must
    time the same work for the A/B to read ~1."""
    recorder, key = over_limit_gate(tmp_path, monkeypatch, kernel)
    store = ab_kernels.open_graph(gnnbench_home, AB_EDGES)
    with contextlib.ExitStack() as cleanup:
        work = ab_kernels.build_kernels(store, [kernel], cleanup)[kernel]
        work()  # warm, as a gate's benchmark rounds leave it
        recorder.paired_speed(key, work, AB_EDGES)
    assert recorder.gates[-1].cleared_by_ab and recorder.gates[-1].passed, recorder.notes
    assert "not a regression" in recorder.notes[-1]


@pytest.mark.alone
@pytest.mark.slow
def test_a_gate_over_its_limit_on_slower_code_fails_after_the_ab(
    tmp_path, monkeypatch, gnnbench_home
):
    recorder, key = over_limit_gate(tmp_path, monkeypatch, "hash")
    store = ab_kernels.open_graph(gnnbench_home, AB_EDGES)
    partition = ab_kernels.partitioner_kernel(store, "hash")
    partition()

    def three_times_slower():
        for _ in range(3):
            partition()

    with pytest.raises(pytest.fail.Exception, match=rf"REGRESSED \(> {SPEED_MAX_FACTOR:g}[;)]"):
        recorder.paired_speed(key, three_times_slower, AB_EDGES)
    assert not recorder.gates[-1].passed


@pytest.mark.slow
def test_a_heavier_partition_trips_the_memory_gate():
    """24 MB more held through quotient_multilevel's partition, in the stage's own process
    (tests/plant_memory/sitecustomize.py): its peak over METIS's fails the memory gate."""
    completed = run_bench_with_plant(
        "memory", "quotient_multilevel", "test_memory_gates.py", REPO / "tests" / "plant_memory"
    )
    assert completed.returncode == 1, completed.stdout[-2000:]
    key = "quotient_multilevel/rgg-1m/p16/peak_over_metis"
    assert f"regression: {key}: baseline" in completed.stdout
    assert "tolerance 5% relative" in completed.stdout


def test_baseline_file_round_trip_and_table(tmp_path):
    baseline = BaselineFile(tmp_path / "quality.json")
    baseline.write({"b": 2.0, "a": 1.0})
    assert (tmp_path / "quality.json").read_text().index('"a"') < (
        tmp_path / "quality.json"
    ).read_text().index('"b"')
    gates = [BaselineFile(tmp_path / "quality.json").gate("a", 1.5, "lower")]
    assert failures(gates) == ["a: baseline 1, now 1.5 (+50.0%); tolerance 1% relative"]
    assert "REGRESSED" in table(gates)


def run_bench_with_plant(
    plant: str, selection: str, bench_file: str, *paths: Path
) -> subprocess.CompletedProcess:
    pythonpath = os.pathsep.join(str(path) for path in (*paths, REPO / "tests"))
    env = {**os.environ, "GNNBENCH_PLANT": plant, "PYTHONPATH": pythonpath}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "helpers.planted_regression", f"bench/{bench_file}", "-k", selection,
         "-q", "-p", "no:cacheprovider"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


@pytest.mark.slow
@requires_dataset(CORA)  # the planted regression is gated on cora
def test_scrambled_partitioner_trips_quality_gate():
    completed = run_bench_with_plant("quality", "spring and cora", "test_quality_gates.py")
    assert completed.returncode == 1, completed.stdout[-2000:]
    assert "regression: spring/cora/p4/replication_factor: baseline" in completed.stdout
    assert "REGRESSED" in completed.stdout


@pytest.mark.alone
@pytest.mark.slow
def test_slowed_partitioner_trips_speed_gate():
    completed = run_bench_with_plant("speed", "spring", "test_partitioner_throughput.py")
    assert completed.returncode == 1, completed.stdout[-2000:]
    assert "regression: spring/powerlaw-5M/p8/reference_passes: baseline" in completed.stdout
    assert f"{SPEED_MAX_FACTOR}x the baseline ratio" in completed.stdout
    # and the A/B against the commit that wrote the baseline agrees it is the code
    assert "which wrote the baseline: new/base CPU" in completed.stdout
    # the CPU reason (its busy loop may add the wall one: "; wall > ...")
    assert f"REGRESSED (> {SPEED_MAX_FACTOR:g}" in completed.stdout
