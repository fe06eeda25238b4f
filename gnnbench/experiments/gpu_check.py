"""The GPU path in one command (scripts/gpu_check.py, `make gpu-check`): every training mode with
num_gpus=1 on CUDA and then on the same machine's CPU, the CUDA tests, and docs/gpu.md from them.

Built for a machine without a package index (an air-gapped cluster, a lent device): the runtime
dependencies come from an offline wheelhouse (`gnnbench wheelhouse`) installed into a temporary
folder, the raw files of cora and amazon_cs from --raw-dir, the synthetic graph is generated
there. The whole check keeps to --budget-s: each sweep gets its share of the time left (GROUPS'
weights), and one over its share is stopped: its unfinished jobs are recorded as timed out, not lost.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from gnnbench.paths import REPO_ROOT
from gnnbench.process.atomic import atomic_write_bytes, scratch_directory

RESULTS = "gpu_check.json"
EXPERIMENT = "gpu_check"
STOP_GRACE_S = 20  # after SIGTERM, for the run to record itself KILLED and stop its workers
TESTS_RESERVE_S = 45.0  # kept for the CUDA tests while the CUDA jobs run
MIN_SHARE_S = 20.0  # kept for each group still to run (a process start and one small job)
OVERRUN = 3.0  # a group may take up to this many times its share by weight, if the others' minimum is kept


@dataclass(frozen=True)
class CheckGroup:
    """One `gnnbench -m` sweep of the check (num_gpus=1, the hash partitioner), one job per mode:
    a sweep starts Python once for its jobs. `weight` is its share of the time budget relative
    to the other groups."""

    dataset: str
    modes: tuple[str, ...]
    epochs: int
    p: int = 1
    overrides: tuple[str, ...] = ()
    weight: float = 1.0

    @property
    def name(self) -> str:
        return f"{self.dataset}/{','.join(self.modes)}/p={self.p}"

    def job_names(self) -> list[str]:
        return [job_name(self.dataset, mode, self.p) for mode in self.modes]

    def arguments(self, device: str) -> list[str]:
        """What the jobs are (the doc lists these); command() adds where they log."""
        return [f"dataset={self.dataset}", f"train={','.join(self.modes)}", f"p={self.p}",
                "num_gpus=1", "partitioner=hash", f"train.epochs={self.epochs}", *self.overrides,
                f"train.device={device}"]  # fmt: skip

    def command(self, device: str, tracking_uri: str) -> list[str]:
        return [sys.executable, "-m", "gnnbench", "-m", *self.arguments(device),
                f"tracking.uri={tracking_uri}", f"tracking.experiment={EXPERIMENT}", "resume=false"]  # fmt: skip


def job_name(dataset: str, mode: str, p: object) -> str:
    return f"{dataset}/{mode}/p={p}"


MODES = ("model_avg", "grad_avg", "centralized")
# the synthetic graph: 1 M nodes, 128 features (~10.4 M edges, generated in ~20 s), with 2% of
# its nodes to train on (40 batches of 512), 1% to validate and 2% to test, and one evaluation,
# so that the CPU half fits the budget (the same work on both devices)
SYNTHETIC_SPLIT = ("dataset.split_fractions=[0.02,0.01,0.02]", "train.eval_every=2")
GROUPS = (
    CheckGroup("cora", MODES, 10, weight=1.0),
    CheckGroup("amazon_cs", MODES, 10, weight=1.5),
    CheckGroup("amazon_cs", ("model_avg",), 10, p=4, weight=1.0),  # more partitions than GPUs
    CheckGroup("synthetic_large", MODES, 2, overrides=SYNTHETIC_SPLIT, weight=2.5),
)


@dataclass
class GroupOutcome:
    group: str  # CheckGroup.name, or "pytest -m gpu" for the CUDA tests
    device: str
    status: str  # finished, failed (exit n), timed out, not run
    wall_s: float
    share_s: float
    last_line: str
    command: str


class Budget:
    """The time left of --budget-s, shared among the groups still to run: by weight, and up to
    OVERRUN times that while the groups after it keep MIN_SHARE_S each."""

    def __init__(self, seconds: float):
        self.deadline = time.monotonic() + seconds

    def left(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def share(self, weight: float, weights_left: float, groups_after: int, reserve: float) -> float:
        usable = max(0.0, self.left() - reserve)
        by_weight = usable * weight / weights_left
        return max(by_weight, min(OVERRUN * by_weight, usable - MIN_SHARE_S * groups_after))


def stop_group(process: subprocess.Popen) -> None:
    """SIGTERM to the job's process group (gnnbench stops its workers and records the run
    KILLED), SIGKILL after STOP_GRACE_S."""
    for sig, wait in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, 5)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_job(
    command: list[str], share_s: float, env: dict, cwd: Path, log
) -> tuple[str, float, str]:
    """(status, wall seconds, last line of output) of one command held to `share_s`."""
    start = time.monotonic()
    if share_s < 5:
        return "not run", 0.0, "no time left in the budget"
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)  # fmt: skip
    lines: list[str] = []
    try:
        out, _ = process.communicate(timeout=share_s)
        lines = out.splitlines()
        status = "finished" if process.returncode == 0 else f"failed (exit {process.returncode})"
    except subprocess.TimeoutExpired:
        stop_group(process)
        out, _ = process.communicate()
        lines = (out or "").splitlines()
        status = "timed out"
    except BaseException:  # the check itself interrupted: leave no job running
        stop_group(process)
        raise
    log.write("\n".join(["+ " + " ".join(command[1:]), *lines, ""]))
    log.flush()
    last = next((line for line in reversed(lines) if line.strip()), "")
    return status, time.monotonic() - start, last.strip()[-300:]


def gpu_test_files() -> list[str]:
    """The test modules holding a test marked gpu (collecting only those needs no optional
    package the others import)."""
    return sorted(str(path.relative_to(REPO_ROOT)) for path in (REPO_ROOT / "tests").glob("test_*.py")
                  if "pytest.mark.gpu" in path.read_text())  # fmt: skip


def run_gpu_tests(share_s: float, env: dict, log) -> GroupOutcome:
    command = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider",
               *gpu_test_files()]  # fmt: skip
    status, wall, last = run_job(command, share_s, env, REPO_ROOT, log)
    return GroupOutcome("pytest -m gpu", "cuda", status, round(wall, 1), round(share_s, 1), last,
                        " ".join(command[1:]))  # fmt: skip


def job_environment(site: str | None, raw_dir: Path, scratch: Path) -> dict:
    """The jobs' environment: the wheelhouse and this checkout on the path, a private
    GNNBENCH_HOME (stores and books are made afresh), the raw files from --raw-dir."""
    paths = [p for p in (site, str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "GNNBENCH_HOME": str(scratch / "home"),
            "GNNBENCH_RAW_DIR": str(raw_dir.resolve()), "PYTHONUNBUFFERED": "1"}  # fmt: skip


def run_groups(
    devices: list[str],
    groups: tuple[CheckGroup, ...],
    with_tests: bool,
    budget: Budget,
    env: dict,
    scratch: Path,
    log,
) -> list[GroupOutcome]:
    """Each group on every device in turn (CUDA first: a check cut short by its budget still
    holds GPU/CPU pairs), the CUDA tests (`with_tests`) after the first CUDA group; each held to
    its share of what is left."""
    tracking = f"sqlite:///{scratch}/mlflow.db"
    plan = [(device, group) for group in groups for device in devices]
    weights_left = sum(group.weight for _, group in plan)
    outcomes: list[GroupOutcome] = []
    for index, (device, group) in enumerate(plan):
        tests_pending = (
            with_tests
            and "cuda" in devices
            and not any(o.group.startswith("pytest") for o in outcomes)
        )
        reserve = TESTS_RESERVE_S if tests_pending else 0.0
        share = budget.share(group.weight, weights_left, len(plan) - index - 1, reserve)
        status, wall, last = run_job(group.command(device, tracking), share, env, scratch, log)
        outcomes.append(GroupOutcome(group.name, device, status, round(wall, 1), round(share, 1),
                                     last, "gnnbench -m " + " ".join(group.arguments(device))))  # fmt: skip
        say(f"{device} {group.name}: {status} in {wall:.0f} s (share {share:.0f} s)")
        weights_left -= group.weight
        if device == "cuda" and tests_pending:
            left_for_rest = MIN_SHARE_S * (len(plan) - index - 1)
            outcomes.append(run_gpu_tests(max(budget.left() - left_for_rest, 0), env, log))
            say(f"CUDA tests: {outcomes[-1].status}: {outcomes[-1].last_line}")
    return outcomes


def say(line: str) -> None:
    print(f"gpu_check: {line}", flush=True)


def job_outcomes(groups: list[GroupOutcome], figures: dict) -> list[dict]:
    """One record per job: its run's status and figures from the store, or, where the sweep was
    stopped before the job logged anything, its group's status."""
    jobs = []
    for outcome in groups:
        if outcome.group.startswith("pytest"):
            jobs.append({"job": outcome.group, **asdict(outcome)})
            continue
        group = next(g for g in GROUPS if g.name == outcome.group)
        for name in group.job_names():
            logged = figures.get((outcome.device, name))
            status = RUN_STATUS.get(logged["run_status"], logged["run_status"]) if logged else (
                outcome.status if outcome.status != "finished" else "not logged")  # fmt: skip
            jobs.append({"job": name, "device": outcome.device, "status": status,
                         "group_status": outcome.status, "wall_s": outcome.wall_s,
                         "share_s": outcome.share_s, "last_line": outcome.last_line,
                         "command": outcome.command, **(logged or {})})  # fmt: skip
    return jobs


RUN_STATUS = {
    "FINISHED": "finished",
    "FAILED": "failed",
    "KILLED": "timed out",
    "RUNNING": "timed out",
}


def logged_figures(tracking: str) -> dict[tuple[str, str], dict]:
    """{(device, job name): params and figures} of every run the jobs logged."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking)
    experiment = client.get_experiment_by_name(EXPERIMENT)
    if experiment is None:
        return {}
    found = {}
    for run in client.search_runs([experiment.experiment_id], order_by=["attributes.start_time"]):
        params = run.data.params
        if "train.mode" not in params:
            continue
        name = job_name(params.get("dataset.name"), params["train.mode"], params.get("p"))
        found[(params.get("train.device", "?"), name)] = {
            "run_status": run.info.status, "metrics": dict(run.data.metrics),
            "versions": {k: v for k, v in params.items() if k.startswith(("version.", "machine."))},
        }  # fmt: skip
    return found


def cuda_facts() -> dict[str, str]:
    """The device, its driver, torch/CUDA/NCCL versions (empty without a CUDA device)."""
    import torch

    if not torch.cuda.is_available():
        return {}
    nccl = torch.cuda.nccl.version()
    facts = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
             "cuda": str(torch.version.cuda), "nccl": ".".join(map(str, nccl)) if isinstance(nccl, tuple) else str(nccl),
             "gpu_memory_gb": f"{torch.cuda.get_device_properties(0).total_memory / 2**30:.1f}"}  # fmt: skip
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=True)  # fmt: skip
        facts["driver"] = smi.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        facts["driver"] = "unknown (no nvidia-smi)"
    return facts


def groups_of(datasets: list[str] | None) -> tuple[CheckGroup, ...]:
    """The check's groups, or those of `datasets` (a rerun of what an earlier check left unfinished)."""
    if not datasets:
        return GROUPS
    unknown = sorted(set(datasets) - {group.dataset for group in GROUPS})
    if unknown:
        raise SystemExit(f"gpu_check: --only {','.join(unknown)}: not a dataset of the check "
                         f"(one of {', '.join(sorted({g.dataset for g in GROUPS}))})")  # fmt: skip
    return tuple(group for group in GROUPS if group.dataset in datasets)


def merged(earlier: dict, rerun: dict) -> dict:
    """`earlier`'s results with the rerun's outcomes in place of the same (device, job) ones; the
    rerun's start and budget are kept under "reruns" (the page names them)."""
    from gnnbench.experiments.gpu_doc import job_of

    redone = {(o["device"], job_of(o)) for o in rerun["outcomes"]}
    kept = [o for o in earlier["outcomes"] if (o["device"], job_of(o)) not in redone]
    rerun_record = {"started": rerun["started"], "budget_s": rerun["budget_s"],
                    "device": rerun["facts"].get("device", "no GPU"), "host": rerun["host"],
                    "jobs": sorted({job_of(o) for o in rerun["outcomes"]})}  # fmt: skip
    return {**earlier, "outcomes": kept + rerun["outcomes"],
            "reruns": [*earlier.get("reruns", []), rerun_record]}  # fmt: skip


def check(
    devices: list[str],
    budget_s: float,
    site: str | None,
    raw_dir: Path,
    out: Path,
    only: list[str] | None = None,
    earlier: Path | None = None,
) -> int:
    """Run the check (the wheelhouse installed in `site`, if any; the groups of the `only`
    datasets, without the CUDA tests, when given) and write `out`/gpu_check.json (merged onto
    the `earlier` results file, when given), `out`/gpu.md and the jobs' output in
    `out`/gpu_check.log; exit status 1 when a job or test did not finish."""
    from gnnbench.experiments.gpu_doc import measured_doc, write_doc

    budget = Budget(budget_s)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    groups = groups_of(only)
    with scratch_directory("gpu-check") as scratch:
        env = job_environment(site, raw_dir, scratch)
        with open(out / "gpu_check.log", "w") as log:
            outcomes = run_groups(devices, groups, not only, budget, env, scratch, log)
        figures = logged_figures(f"sqlite:///{scratch}/mlflow.db")
    results = {"started": started, "budget_s": budget_s, "devices": devices, "facts": cuda_facts(),
               "host": {"cores": os.cpu_count(), "python": sys.version.split()[0]},
               "groups": [asdict(group) for group in GROUPS],
               "outcomes": job_outcomes(outcomes, figures)}  # fmt: skip
    if earlier is not None:
        results = merged(json.loads(earlier.read_text()), results)
    atomic_write_bytes(out / RESULTS, json.dumps(results, indent=1).encode())
    write_doc(out / "gpu.md", measured_doc(results))
    print(
        f"gpu_check: wrote {out / RESULTS} and {out / 'gpu.md'} ({budget_s - budget.left():.0f} s)"
    )
    return 0 if all(job["status"] == "finished" for job in results["outcomes"]) else 1
