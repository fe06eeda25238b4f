"""The regression gates: comparisons, and planted regressions that must turn the bench red."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CORA, requires_dataset

from bench.gates import (
    SPEED_CONFIRMATIONS,
    SPEED_MAX_FACTOR,
    STARTUP_MAX_FACTOR,
    BaselineFile,
    Gate,
    confirmed,
    failures,
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
    assert Gate("startup", 1.0, STARTUP_MAX_FACTOR - 0.01, "startup").passed
    assert not Gate("startup", 1.0, STARTUP_MAX_FACTOR + 0.01, "startup").passed


@pytest.mark.parametrize("kind", ["lower", "higher", "speed"])
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


def _confirm(figures, measurements, monkeypatch):
    monkeypatch.setattr("bench.gates.SPEED_CONFIRM_PAUSE_S", 0.0)
    calls = iter(measurements)
    remeasured = []

    def remeasure():
        remeasured.append(next(calls))
        return remeasured[-1]

    def passes(now):
        return not failures([Gate(key, 1.0, value, "speed") for key, value in now.items()])

    return confirmed(figures, remeasure, passes), remeasured


def test_a_slowdown_that_goes_away_is_confirmed_as_noise(monkeypatch):
    now, remeasured = _confirm({"a": 2.0}, [{"a": 1.9}, {"a": 1.2}, {"a": 3.0}], monkeypatch)
    assert now == {"a": 1.2}  # the fastest measurement, and no more once it passes
    assert len(remeasured) == 2


def test_a_slowdown_that_stays_fails_after_every_confirmation(monkeypatch):
    slow = [{"a": 1.8 + 0.01 * i} for i in range(SPEED_CONFIRMATIONS)]
    now, remeasured = _confirm({"a": 1.9}, slow, monkeypatch)
    assert now == {"a": 1.8} and len(remeasured) == SPEED_CONFIRMATIONS
    assert failures([Gate("a", 1.0, now["a"], "speed")])


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
    plant: str, selection: str, bench_file: str
) -> subprocess.CompletedProcess:
    env = {**os.environ, "GNNBENCH_PLANT": plant, "PYTHONPATH": str(REPO / "tests")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "planted_regression", f"bench/{bench_file}", "-k", selection,
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


@pytest.mark.slow
def test_slowed_partitioner_trips_speed_gate():
    completed = run_bench_with_plant("speed", "spring", "test_partitioner_throughput.py")
    assert completed.returncode == 1, completed.stdout[-2000:]
    assert "regression: spring/powerlaw-5M/p8/reference_passes: baseline" in completed.stdout
    assert f"{SPEED_MAX_FACTOR}x the baseline ratio" in completed.stdout
