"""Benchmark fixtures: generated power-law graphs cached under the bench cache root.

Speed is always reported as a ratio to one reference pass over the same edges.bin (plain numpy,
bench.gates.reference_pass), measured in the same run: these machines are noisy, a ratio of two
timings taken together much less so.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from bench.ab_kernels import power_law_config
from bench.compare import work_versus_revision
from bench.gates import (
    BENCH_HOME,
    SPEED_MAX_FACTOR,
    BaselineFile,
    Gate,
    failures,
    median_seconds,
    paired_ratio,
    reference_pass,
    table,
)
from gnnbench.data.datasets import prepare_dataset
from gnnbench.data.store import GraphStore
from gnnbench.paths import CONF_DIR, raw_dir

BASELINES = Path(__file__).resolve().parent / "baselines"
DATASET_CONF = CONF_DIR / "dataset"


def dataset_config(choice: str, /, **overrides) -> dict:
    """gnnbench/conf/dataset/<choice>.yaml with `overrides` on top, as the plain dict
    prepare_dataset reads: the gates measure the configs a user runs, not copies of them."""
    config = OmegaConf.merge(OmegaConf.load(DATASET_CONF / f"{choice}.yaml"), overrides)
    return OmegaConf.to_container(config, resolve=True)


@pytest.fixture(scope="session", autouse=True)
def bench_home() -> Path:
    BENCH_HOME.mkdir(parents=True, exist_ok=True)
    previous = os.environ.get("GNNBENCH_HOME")
    os.environ["GNNBENCH_HOME"] = str(BENCH_HOME)
    yield BENCH_HOME
    if previous is None:
        os.environ.pop("GNNBENCH_HOME", None)
    else:
        os.environ["GNNBENCH_HOME"] = previous


def require_raw(relative_path: str | None) -> None:
    """Skip a gate whose real dataset is not under GNNBENCH_RAW_DIR (fail under CI=true, where
    the datasets are expected), as the tests do."""
    if relative_path is None or (raw_dir() / relative_path).exists():
        return
    message = f"real dataset {relative_path} not under GNNBENCH_RAW_DIR={raw_dir()}"
    if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def make_power_law_store(num_edges: int) -> GraphStore:
    return prepare_dataset(power_law_config(num_edges))


def reference_pass_seconds(store: GraphStore, rounds: int = 9) -> float:
    """Median time of one reference pass (numpy chunk sort) over the store's edges.bin."""
    reference_pass(store.path)  # warm the page cache
    return median_seconds(lambda: reference_pass(store.path), rounds)


def pytest_addoption(parser):
    parser.addoption(
        "--update-baselines",
        action="store_true",
        help="write the measured figures into bench/baselines/*.json instead of gating on them",
    )


class GateRecorder:
    """Collects the gated figures of one baseline file; fails a test on regression."""

    def __init__(self, baseline: BaselineFile, update: bool):
        self.baseline = baseline
        self.update = update
        self.gates: list[Gate] = []
        self.measured: dict[str, float] = {}
        self.notes: list[str] = []  # figures over their limit, and what their A/B read

    def check(self, figures: dict[str, float], kind: str) -> None:
        """Gate `figures`: fail the test on a regression (unless writing baselines)."""
        self._record(self._gates(figures, kind))

    def paired_speed(self, key: str, work: Callable[[], object], num_edges: int) -> float:
        """Gate `key`: `work`'s CPU time over one reference pass over the edges.bin of the
        num_edges power-law graph (bench/ab_kernels.py's recipe, which `work` runs on), the two
        timed alternately (bench.gates.paired_ratio). Over the limit, `work` is timed A/B against
        the kernel named by the key's first segment in the commit that wrote the baseline, and
        fails only if it is credibly over the limit there too. Returns the ratio."""
        store = make_power_law_store(num_edges)
        ratio = paired_ratio(work, lambda: reference_pass(store.path), timer=time.process_time)
        gate = self.baseline.gate(key, ratio, "speed")
        if gate.passed or self.update or gate.baseline is None:
            self._record([gate])
            return ratio
        cleared, verdict = self._against_baseline_code(key, work, num_edges, store.num_edges)
        self.notes.append(f"{key}: {ratio:.6g} is over its limit; {verdict}")
        self._record([dataclasses.replace(gate, cleared_by_ab=cleared)], detail=verdict)
        return ratio

    def _record(self, gates: list[Gate], detail: str = "") -> None:
        self.gates += gates
        self.measured.update({gate.key: gate.now for gate in gates})
        regressions = failures(gates)
        if regressions and not self.update:
            message = "; ".join(regressions + [detail] if detail else regressions)
            pytest.fail(f"regression: {message}", pytrace=False)

    def _against_baseline_code(
        self, key: str, work: Callable[[], object], num_edges: int, edges: int
    ) -> tuple[bool, str]:
        """Whether the A/B of `work` against the baseline's commit clears it, and what it read."""
        kernel, commit = key.split("/")[0], self.baseline.written_by(key)
        if commit is None:
            return False, (
                "no A/B: git cannot tell which commit wrote the baseline (not committed, or a "
                "clone without that history: git fetch --unshallow)"
            )
        try:
            verdict = work_versus_revision(kernel, work, commit, num_edges, edges, SPEED_MAX_FACTOR)
        except (LookupError, RuntimeError, subprocess.CalledProcessError) as exc:
            return False, f"no A/B against {commit[:12]}, which wrote the baseline: {exc}"
        state = verdict.label if verdict.regressed else "not a regression"
        return not verdict.regressed, (
            f"A/B against {commit[:12]}, which wrote the baseline: new/base CPU "
            f"{verdict.median:.3f} [{verdict.low:.3f}, {verdict.high:.3f}], wall "
            f"{verdict.wall_median:.3f} [{verdict.wall_low:.3f}, {verdict.wall_high:.3f}] over "
            f"{verdict.rounds} rounds: {state}"
        )

    def _gates(self, figures: dict[str, float], kind: str) -> list[Gate]:
        return [self.baseline.gate(key, value, kind) for key, value in figures.items()]


def _recorder(request, name: str) -> GateRecorder:
    update = request.config.getoption("--update-baselines")
    recorder = GateRecorder(BaselineFile(BASELINES / f"{name}.json"), update)
    request.config.stash.setdefault(_RECORDERS, []).append((name, recorder))
    yield recorder
    if update:
        recorder.baseline.write(recorder.measured)


_RECORDERS = pytest.StashKey[list]()


@pytest.fixture(scope="session")
def quality_gates(request):
    yield from _recorder(request, "quality")


@pytest.fixture(scope="session")
def speed_gates(request):
    yield from _recorder(request, "speed")


@pytest.fixture(scope="session")
def memory_gates(request):
    yield from _recorder(request, "memory")


def pytest_terminal_summary(terminalreporter, config):
    for name, recorder in config.stash.get(_RECORDERS, []):
        if recorder.gates:
            terminalreporter.section(f"gnnbench {name} gates ({recorder.baseline.path.name})")
            terminalreporter.write_line(table(recorder.gates))
            for note in recorder.notes:
                terminalreporter.write_line(note)
            if recorder.update:
                terminalreporter.write_line(f"baseline written: {recorder.baseline.path}")
