"""Regression gates: figures measured now against a committed baseline file.

Quality figures (replication factor, edge cut, balance) are deterministic for fixed seeds, so they
are gated tightly (relative tolerance). F1 of a short seeded training run is gated within an
absolute band. Speed is gated as a ratio to a reference pass timed alternately in the same run
(plain numpy over edges.bin, none of gnnbench's code); this is the second line behind the A/B
comparison of `make bench-compare` (bench/compare.py). Baselines are written only by
`--update-baselines` (make bench-baselines); a figure without one fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# Generated graphs of the gates and of `make bench-compare`, one cache for both.
BENCH_HOME = Path(
    os.environ.get(
        "GNNBENCH_BENCH_HOME", Path(__file__).resolve().parent.parent / ".benchmarks" / "home"
    )
)
QUALITY_REL_TOL = 0.01  # RF, edge cut, balance: worse by more than 1% fails
F1_ABS_TOL = 0.02  # test F1: lower by more than 0.02 fails
# Speed (CPU seconds over the reference pass's): more than SPEED_MAX_FACTOR x the committed ratio
# fails. The committed figures are the per-figure medians of three idle runs under the versions
# constraints.txt pins (numpy 2.4.6, whose SIMD sort made the reference ~3x faster than the
# numpy they were first written under); the three spanned 1.05-1.44x per figure (twops, dbh,
# spring and refine-replication the widest). 1.5 leaves room for a CI machine of the same type in
# another state; the 1.2x regressions are the A/B gate's (compare.py), which times both trees in
# one run, as does a figure over this limit (below).
SPEED_MAX_FACTOR = 1.5
# A speed figure over its limit is not yet a verdict: the work is timed A/B, alternately in this
# run, against the same work of the commit that wrote its baseline (BaselineFile.written_by,
# bench.compare.work_versus_revision), and fails only if that is credibly more than
# SPEED_MAX_FACTOR x slower. Why: the ratio to the sort moves with the machine, not only the code.
# Latency-bound kernels (per-node state read in edge order: dbh, greedy, hdrf, twops, spring,
# the replication refinement) slow more than the sort when a neighbour's load or a host's memory
# state changes, for seconds or for hours: CI read dbh, greedy and twops at 1.51-1.60x their
# baselines after three re-measurements, and the commit that wrote the baselines read the same
# back to back, while the A/B of this tree against that commit read 1.02-1.03 for all three.
# Start-up (wall seconds of whole processes, bench/test_startup.py): not re-measured in issue 28;
# the limit stays where it was.
STARTUP_MAX_FACTOR = 3.0
SPEED_FACTORS = {"speed": SPEED_MAX_FACTOR, "startup": STARTUP_MAX_FACTOR}
# Memory (the one meter's heap peak of an algorithm over METIS's on the same graph, both measured
# through the partition stage in this run, bench/test_memory_gates.py): memray counts the bytes
# asked for, so for the same code and libraries the ratio repeats (two runs of the gate read the
# same to four digits); more than this much over its committed ratio fails.
MEMORY_REL_TOL = 0.05


@dataclass(frozen=True)
class Gate:
    """One gated figure: its key (partitioner/graph/p/metric), values and verdict."""

    key: str
    baseline: float | None
    now: float
    kind: str  # "lower" (quality), "higher" (F1), "memory", "speed" or "startup"
    # a speed figure over its limit that the A/B against its baseline's commit found no slower
    # than the limit (bench/conftest.py GateRecorder.paired_speed)
    cleared_by_ab: bool = False

    @property
    def change(self) -> float | None:
        if self.baseline in (None, 0):
            return None
        return self.now / self.baseline - 1.0

    @property
    def passed(self) -> bool:
        if self.baseline is None:
            return False  # a gate that cannot fail is no gate
        if self.kind == "lower":
            return self.now <= self.baseline * (1 + QUALITY_REL_TOL) + 1e-12
        if self.kind == "higher":
            return self.now >= self.baseline - F1_ABS_TOL
        if self.kind == "memory":
            return self.now <= self.baseline * (1 + MEMORY_REL_TOL)
        return self.cleared_by_ab or self.now <= self.baseline * SPEED_FACTORS[self.kind]

    def message(self) -> str:
        if self.baseline is None:
            return (
                f"{self.key}: no baseline in bench/baselines/ (now {self.now!r}); create it with "
                "`make bench-baselines` and commit the diff"
            )
        limit = {
            "lower": f"tolerance {QUALITY_REL_TOL:.0%} relative",
            "higher": f"tolerance {F1_ABS_TOL} absolute",
            "memory": f"tolerance {MEMORY_REL_TOL:.0%} relative",
        }.get(self.kind, f"limit {SPEED_FACTORS.get(self.kind)}x the baseline ratio")
        change = "" if self.change is None else f" ({self.change:+.1%})"
        return f"{self.key}: baseline {self.baseline:.6g}, now {self.now:.6g}{change}; {limit}"


class BaselineFile:
    """A JSON map key -> value under bench/baselines/, rewritten sorted so diffs show what moved."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.values: dict[str, float] = (
            json.loads(self.path.read_text()) if self.path.is_file() else {}
        )

    def gate(self, key: str, now: float, kind: str) -> Gate:
        return Gate(key, self.values.get(key), float(now), kind)

    def written_by(self, key: str) -> str | None:
        """The commit whose tree measured `key`'s baseline: the newest commit in which this file's
        value for it changed (baselines are committed with, or after, the code they measured).
        None when the working tree's value is not committed, or git cannot tell (no history, or
        a shallow clone cut before that commit)."""
        try:
            root = git_output(self.path.parent, "rev-parse", "--show-toplevel")
            relative = self.path.resolve().relative_to(root)
            # main's own line of commits (a merged branch's are not what main measured)
            commits = git_output(
                self.path.parent, "rev-list", "--first-parent", "HEAD", "--", f":(top){relative}"
            ).split()
            value = self.values.get(key)
            if not commits or self._value_at(commits[0], relative, key) != value:
                return None  # rewritten here and not committed yet
            for commit in commits:
                if self._value_before(commit, relative, key) != value:
                    return commit
        except (OSError, ValueError, LookupError, subprocess.CalledProcessError):
            return None
        return None

    def _value_before(self, commit: str, relative: Path, key: str) -> float | None:
        """The value in `commit`'s parent; None for a root commit (LookupError past a shallow
        clone's cut, where the parent exists but is not here)."""
        try:
            return self._value_at(f"{commit}^", relative, key)
        except LookupError:
            if git_output(self.path.parent, "rev-parse", "--is-shallow-repository") == "true":
                raise
            return None

    def _value_at(self, commit: str, relative: Path, key: str) -> float | None:
        """The file's value for `key` at `commit` (None where the file or key did not exist);
        LookupError when the commit is not in this clone."""
        try:
            git_output(self.path.parent, "cat-file", "-e", f"{commit}^{{commit}}")
        except subprocess.CalledProcessError:
            raise LookupError(commit) from None
        try:
            text = git_output(self.path.parent, "show", f"{commit}:{relative}")
        except subprocess.CalledProcessError:
            return None
        return json.loads(text).get(key)

    def write(self, measured: dict[str, float]) -> None:
        merged = {**self.values, **measured}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(merged, indent=2, sort_keys=True) + "\n")
        self.values = merged


def git_output(directory: Path, *args: str) -> str:
    """git's stdout, run in `directory`."""
    return subprocess.run(
        ["git", "-C", str(directory), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def failures(gates: Iterable[Gate]) -> list[str]:
    return [gate.message() for gate in gates if not gate.passed]


def table(gates: Iterable[Gate]) -> str:
    """Every gated figure with baseline, now and change, worst first within each verdict."""
    rows = ["figure | baseline | now | change | verdict", "--- | --- | --- | --- | ---"]
    for gate in sorted(gates, key=lambda g: (g.passed, g.key)):
        baseline = "new" if gate.baseline is None else f"{gate.baseline:.6g}"
        change = "" if gate.change is None else f"{gate.change:+.1%}"
        verdict = "ok (A/B)" if gate.cleared_by_ab else "ok" if gate.passed else "REGRESSED"
        rows.append(f"{gate.key} | {baseline} | {gate.now:.6g} | {change} | {verdict}")
    return "\n".join(rows)


def reference_pass(store_dir: Path, chunk_edges: int = 1 << 20) -> np.ndarray:
    """Each chunk of edges.bin's source column sorted (np.sort), read by a plain memmap: the
    speed gates' yardstick, which shares no code (store reader, edge stream, numba) with what
    they time, so a slowdown there cannot cancel out of the ratio. It is compute-bound on
    sequential reads on purpose: the degree count (np.bincount) it replaces scatters into a
    |V|-sized array, and its fastest time moved with the machine's memory state (0.022-0.027 s on
    5 M edges across three idle processes here, which moved quotient's gated ratio 35-43 with no
    change to quotient) while the sort read 0.1548-0.1560 s. Returns the last chunk's sort."""
    meta = json.loads((Path(store_dir) / "meta.json").read_text())
    dtype = np.dtype(meta["id_dtype"]).newbyteorder("<")
    edges = np.memmap(Path(store_dir) / "edges.bin", dtype=dtype, mode="r").reshape(-1, 2)
    ordered = np.empty(0, dtype=dtype)
    for start in range(0, len(edges), chunk_edges):
        ordered = np.sort(edges[start : start + chunk_edges, 0])
    return ordered


Timer = Callable[[], float]


def run_times(
    work: Callable[[], object], repeats: int, timer: Timer = time.perf_counter
) -> list[float]:
    """Seconds (of `timer`: wall clock, or time.process_time for CPU) of `repeats` calls."""
    times = []
    for _ in range(repeats):
        started = timer()
        work()
        times.append(timer() - started)
    return times


def median_seconds(
    work: Callable[[], object], rounds: int, timer: Timer = time.perf_counter
) -> float:
    return sorted(run_times(work, rounds, timer))[rounds // 2]


def paired_ratio(
    work: Callable[[], object],
    reference: Callable[[], object],
    rounds: int = 5,
    timer: Timer = time.perf_counter,
) -> float:
    """Fastest time(work) over fastest time(reference), the two timed back to back each round.

    Interference from other processes only ever adds time, so the fastest of several interleaved
    rounds is the steadiest estimate of each; each side is repeated until it spans about 0.1 s,
    so short jobs are not timed at the clock's noise floor.
    """
    repeats = [max(1, round(0.1 / median_seconds(job, 1, timer))) for job in (reference, work)]
    fastest_reference = fastest_work = float("inf")
    for _ in range(rounds):
        fastest_reference = min(fastest_reference, *run_times(reference, repeats[0], timer))
        fastest_work = min(fastest_work, *run_times(work, repeats[1], timer))
    return fastest_work / fastest_reference
