"""A sweep's figures saved as a baseline file, and a later sweep checked against it (a user's CI).

    python -m gnnbench baseline save FILE [--sweep-id ID]    the sweep's figures per job -> FILE
    python -m gnnbench baseline check FILE [--sweep-id ID]   exit 1 naming each regression

A job is matched by its axes (dataset, partitioner, p, sync_interval, num_gpus, train mode, model,
seed: what a report row shows), so a change to the code under the same config meets its old self.

What is compared, and the default tolerance (the file keeps them; `--tolerance METRIC=X` or an
edited file overrides one):
- quality (replication_factor, edge_cut, vertex_balance), up by more than 1%: a seeded partitioner
  on the same graph gives the same owners; 1% leaves room for float summation order only.
- memory: the heap peak (partition_peak_mb, memray counts allocations: the same work allocates the
  same) up by more than 10% and 1 MB; max RSS (partition_rss_mb, the interpreter's pages and the
  allocator's caching in it) by more than 25% and 20 MB.
- accuracy: test micro- and macro-F1 down by more than 0.01 (training is deterministic for a seed
  on one machine and thread count; another machine's float order moves it by about that).
- time, only as a ratio to a reference partitioner's job of the same axes in the same sweep
  (`--time-reference`, default hash; the job's partition_time_s and epoch_time_s over the
  reference's): a shared CI runner's load slows both alike. A ratio up by more than 50% fails; a
  time under 0.5 s, or a sweep without the reference, is not compared (said so).
Times, max RSS and F1 measured on another machine (machine.cpu or machine.gpu differ) are
reported and never fail; quality and the heap peak do not depend on the machine and still do. A job of the baseline that is missing from the sweep or not FINISHED fails; a new job is
reported. The verdict is logged on the sweep's parent run: tag `baseline_check` and the table as
artifact `baseline_check.md`.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gnnbench.errors import GnnbenchError, one_line
from gnnbench.process.atomic import atomic_write_bytes
from gnnbench.schema import TrackingKeys
from gnnbench.track.report.query import AXES, LOAD, load_sweep, open_store

FORMAT = 1
# metric -> (direction, relative tolerance, absolute floor): +1 higher is worse, -1 lower is worse
TOLERANCES: dict[str, tuple[int, float, float]] = {
    "replication_factor": (+1, 0.01, 0.0),
    "edge_cut": (+1, 0.01, 0.0),
    "vertex_balance": (+1, 0.01, 0.0),
    "partition_peak_mb": (+1, 0.10, 1.0),
    "partition_rss_mb": (+1, 0.25, 20.0),
    "test_f1_micro": (-1, 0.0, 0.01),
    "test_f1_macro": (-1, 0.0, 0.01),
}
TIMES = ("partition_time_s", "epoch_time_s")
TIME_TOLERANCE = 0.5  # a ratio to the reference up by more than half
TIME_FLOOR_S = 0.5  # shorter times are mostly start-up and noise
REFERENCE = "hash"
MACHINE_TAGS = ("machine.cpu", "machine.gpu")
MACHINE_BOUND = {"partition_rss_mb", "test_f1_micro", "test_f1_macro"}  # besides the times
CHECK_TAG = "baseline_check"


def job_label(row: dict) -> str:
    """`dataset.name=cora partitioner.name=spring p=4 ...`: the job's axes that are set."""
    return " ".join(f"{axis}={row[axis]}" for axis in AXES if row.get(axis) not in (None, ""))


def _reference_label(row: dict, reference: str) -> str:
    return job_label({**row, "partitioner.name": reference})


def sweep_figures(tracking_uri: str, experiment: str, sweep_id: str | None) -> dict[str, Any]:
    """The sweep's jobs as the baseline file holds them."""
    sweep = load_sweep(tracking_uri, experiment, sweep_id)
    client = open_store(tracking_uri)
    jobs: dict[str, dict] = {}
    for row in sweep.rows:
        axes = {axis: row[axis] for axis in AXES if row.get(axis) not in (None, "")}
        label = job_label(axes)
        if label in jobs:
            raise GnnbenchError(
                f"sweep {sweep.sweep_id}: two jobs with {label} (a key the baseline does not "
                "tell apart, or another machine's): check one sweep per baseline"
            )
        tags = client.get_run(row["run_id"]).data.tags
        metrics = {m: row.get(m) for m in (*TOLERANCES, *TIMES) if row.get(m) is not None}
        jobs[label] = {
            "status": row["status"],
            "run_id": row["run_id"],
            "axes": axes,
            "metrics": metrics,
            LOAD: row.get(LOAD),
            "machine": {tag: tags.get(tag) for tag in MACHINE_TAGS},
        }
    return {"sweep_id": sweep.sweep_id, "parent_run_id": sweep.parent_run_id, "jobs": jobs}


def save(path: Path, tracking_uri: str, experiment: str, sweep_id: str | None) -> dict:
    """The sweep's FINISHED jobs as a baseline file (one that did not finish is no reference:
    named on stderr and left out)."""
    figures = sweep_figures(tracking_uri, experiment, sweep_id)
    unfinished = [label for label, job in figures["jobs"].items() if job["status"] != "FINISHED"]
    for label in unfinished:
        print(f"baseline: left out, not FINISHED: {label}", file=sys.stderr)
    figures["jobs"] = {k: v for k, v in figures["jobs"].items() if k not in unfinished}
    baseline = {
        "format": FORMAT,
        "saved": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "tolerances": {m: {"relative": t[1], "absolute": t[2]} for m, t in TOLERANCES.items()},
        "time_tolerance": TIME_TOLERANCE,
        **figures,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, (json.dumps(baseline, indent=1, sort_keys=True) + "\n").encode())
    return baseline


@dataclass(frozen=True)
class Finding:
    job: str
    metric: str
    base: float | None
    new: float | None
    verdict: str  # "regressed", "ok", "reported", "not compared"
    note: str = ""

    def message(self) -> str:
        """`<job>: edge_cut 0.2551 -> 0.3102 (+21.6%)`, or `<job>: status (job missing)`."""
        if self.base is None or self.new is None:
            return f"{self.job}: {self.metric} ({self.note})"
        return f"{self.job}: {self.metric} {self.base:.4g} -> {self.new:.4g} ({self.note})"

    def row(self) -> str:
        shown = [f"{v:.4g}" if isinstance(v, float | int) else "-" for v in (self.base, self.new)]
        return f"| {self.job} | {self.metric} | {shown[0]} | {shown[1]} | {self.verdict} | {self.note} |"


def load_baseline(path: Path) -> dict:
    try:
        baseline = json.loads(path.read_text())
    except OSError as exc:
        raise GnnbenchError(f"{path}: cannot read the baseline ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        raise GnnbenchError(f"{path}: not a baseline file (JSON error: {exc.msg})") from None
    if not isinstance(baseline, dict) or baseline.get("format") != FORMAT or "jobs" not in baseline:
        raise GnnbenchError(f"{path}: not a gnnbench baseline file (format {FORMAT} expected)")
    return baseline


def compare(
    baseline: dict, new: dict, overrides: dict[str, float], reference: str
) -> list[Finding]:
    """Every job of either side against the other, metric by metric."""
    tolerances = _tolerances(baseline, overrides)
    time_tolerance = overrides.get("time", baseline.get("time_tolerance", TIME_TOLERANCE))
    findings = []
    for label, base in baseline["jobs"].items():
        job = new["jobs"].get(label)
        if job is None or job["status"] != "FINISHED":
            status = "missing" if job is None else job["status"]
            findings.append(Finding(label, "status", None, None, "regressed", f"job {status}"))
            continue
        other = base["machine"] != job["machine"]
        for metric, (direction, relative, absolute) in tolerances.items():
            findings += _quality(label, metric, base, job, direction, relative, absolute, other)
        for metric in TIMES:
            findings += _time(label, metric, baseline, new, time_tolerance, reference, other)
    findings += [Finding(label, "status", None, None, "reported", "new job, not in the baseline")
                 for label in new["jobs"] if label not in baseline["jobs"]]  # fmt: skip
    return findings


def _tolerances(baseline: dict, overrides: dict[str, float]) -> dict[str, tuple[int, float, float]]:
    saved = baseline.get("tolerances", {})
    merged = {}
    for metric, (direction, relative, absolute) in TOLERANCES.items():
        kept = saved.get(metric, {})
        relative, absolute = kept.get("relative", relative), kept.get("absolute", absolute)
        if metric in overrides:  # --tolerance edge_cut=0.05: relative, or absolute for F1
            relative, absolute = (
                (overrides[metric], absolute) if direction > 0 else (0.0, overrides[metric])
            )
        merged[metric] = (direction, relative, absolute)
    return merged


def _quality(label, metric, base, job, direction, relative, absolute, other) -> list[Finding]:
    old, now = base["metrics"].get(metric), job["metrics"].get(metric)
    if old is None:
        return []
    if now is None:
        return [Finding(label, metric, old, None, "regressed", "no longer logged")]
    allowed = abs(old) * relative + absolute
    worse = (now - old) * direction > allowed + 1e-12
    note = f"{(now - old) / old:+.1%}" if old else ""
    if worse and other and metric in MACHINE_BOUND:
        return [
            Finding(label, metric, old, now, "reported", f"{note}, measured on another machine")
        ]
    return [Finding(label, metric, old, now, "regressed" if worse else "ok", note)]


def _time(label, metric, baseline, new, tolerance, reference, other) -> list[Finding]:
    base_job, job = baseline["jobs"][label], new["jobs"][label]
    old, now = base_job["metrics"].get(metric), job["metrics"].get(metric)
    if old is None or now is None or job["axes"].get("partitioner.name") == reference:
        return []
    ref_label = _reference_label(job["axes"], reference)
    old_ref = baseline["jobs"].get(ref_label, {}).get("metrics", {}).get(metric)
    new_ref = new["jobs"].get(ref_label, {}).get("metrics", {}).get(metric)
    if old_ref is None or new_ref is None:
        return [
            Finding(label, metric, old, now, "not compared", f"no {reference} job to time against")
        ]
    if min(old, now, old_ref, new_ref) < TIME_FLOOR_S:
        return [Finding(label, metric, old, now, "not compared", f"under {TIME_FLOOR_S} s")]
    ratio = (now / new_ref) / (old / old_ref)
    note = f"{ratio:.2f}x relative to {reference}"
    if ratio > 1 + tolerance:
        return [Finding(label, metric, old, now, "reported" if other else "regressed",
                        note + (", measured on another machine" if other else ""))]  # fmt: skip
    return [Finding(label, metric, old, now, "ok", note)]


def table(findings: list[Finding]) -> str:
    head = (
        "| job | metric | baseline | now | verdict | note |\n| --- | --- | --- | --- | --- | --- |"
    )
    shown = [f for f in findings if f.verdict != "ok"] or findings
    return "\n".join([head, *(f.row() for f in shown)])


def check(path: Path, tracking_uri: str, experiment: str, sweep_id: str | None,
          overrides: dict[str, float], reference: str) -> list[Finding]:  # fmt: skip
    baseline = load_baseline(path)
    new = sweep_figures(tracking_uri, experiment, sweep_id)
    findings = compare(baseline, new, overrides, reference)
    regressions = [f for f in findings if f.verdict == "regressed"]
    verdict = f"FAILED: {len(regressions)} regression(s)" if regressions else "passed"
    client = open_store(tracking_uri)
    client.set_tag(new["parent_run_id"], CHECK_TAG, f"{verdict} against {path.name}")
    client.log_text(new["parent_run_id"], _document(path, baseline, findings), "baseline_check.md")
    return findings


def _document(path: Path, baseline: dict, findings: list[Finding]) -> str:
    return (f"# Baseline check against {path.name}\n\nBaseline: sweep {baseline['sweep_id']}, "
            f"saved {baseline['saved']}.\n\n{table(findings)}\n")  # fmt: skip


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gnnbench baseline", description=__doc__.split("\n")[0]
    )
    parser.add_argument("action", choices=("save", "check"))
    parser.add_argument("file", type=Path)
    parser.add_argument("--sweep-id", help="the sweep (default: the latest)")
    parser.add_argument("--tracking-uri", default=TrackingKeys.uri)
    parser.add_argument("--experiment", default=TrackingKeys.experiment)
    parser.add_argument("--tolerance", action="append", default=[], metavar="METRIC=X",
                        help="a metric's tolerance (relative; absolute for F1; 'time' for the time ratio)")  # fmt: skip
    parser.add_argument(
        "--time-reference", default=REFERENCE, help="partitioner the times are divided by"
    )
    return parser


def _overrides(pairs: list[str]) -> dict[str, float]:
    overrides = {}
    for pair in pairs:
        metric, _, value = pair.partition("=")
        if metric not in (*TOLERANCES, "time"):
            raise GnnbenchError(
                f"--tolerance {pair}: unknown metric (one of {', '.join([*TOLERANCES, 'time'])})"
            )
        try:
            overrides[metric] = float(value)
        except ValueError:
            raise GnnbenchError(f"--tolerance {pair}: expected METRIC=<number>") from None
    return overrides


def main(argv: list[str]) -> int:
    from mlflow.exceptions import MlflowException

    args = _parser().parse_args(argv)
    try:
        if args.action == "save":
            baseline = save(args.file, args.tracking_uri, args.experiment, args.sweep_id)
            print(
                f"baseline: {len(baseline['jobs'])} job(s) of sweep {baseline['sweep_id']} saved to {args.file}"
            )
            return 0
        findings = check(args.file, args.tracking_uri, args.experiment, args.sweep_id,
                         _overrides(args.tolerance), args.time_reference)  # fmt: skip
    except (GnnbenchError, OSError, MlflowException) as exc:  # one line: the file or the store
        print(f"gnnbench baseline: error: {one_line(exc)}", file=sys.stderr)
        return 2
    print(table(findings))
    regressions = [f for f in findings if f.verdict == "regressed"]
    for finding in regressions:
        print(f"REGRESSED: {finding.message()}", file=sys.stderr)
    print(f"baseline check against {args.file}: "
          f"{'FAILED, ' + str(len(regressions)) + ' regression(s)' if regressions else 'passed'}",
          file=sys.stderr)  # fmt: skip
    return 1 if regressions else 0
