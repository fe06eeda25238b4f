"""The GPU path in one command (scripts/gpu_check.py, `make gpu-check`): every training mode on
one CUDA worker logged to a private MLflow store, the CUDA tests, and docs/gpu.md from both (the
script's docstring says what each step runs)."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

from gnnbench.atomic import atomic_write_bytes
from gnnbench.paths import REPO_ROOT, raw_dir

DOC = REPO_ROOT / "docs" / "gpu.md"
MEASURED = "<!-- gpu_check: measured -->"
MODES = ("model_avg", "grad_avg", "centralized")
RAW_DIR = raw_dir()
DATASETS = {
    "cora": RAW_DIR / "planetoid" / "ind.cora.x",
    "amazon_cs": RAW_DIR / "npz" / "amazon_cs.npz",
}


def cuda_summary() -> str | None:
    """'<n> x <device name>, torch <v>, CUDA <v>', or None without a usable CUDA device."""
    import torch

    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        return None
    names = sorted({torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())})
    return (f"{torch.cuda.device_count()} x {', '.join(names)}, torch {torch.__version__}, "
            f"CUDA {torch.version.cuda}")  # fmt: skip


def train_all_modes(dataset: str, device: str, epochs: int, scratch: Path) -> int:
    """One gnnbench sweep over the three modes on one worker, run in `scratch` (its Hydra
    outputs and sweep report stay there); returns its exit code."""
    tracking = f"sqlite:///{scratch}/mlflow.db"
    command = [sys.executable, "-m", "gnnbench", "-m", f"dataset={dataset}",
               f"train={','.join(MODES)}", "num_gpus=1", "p=1", "partitioner=hash",
               f"train.epochs={epochs}", f"train.device={device}", f"tracking.uri={tracking}",
               "tracking.experiment=gpu_check", "resume=false"]  # fmt: skip
    print("+", " ".join(command[1:]), flush=True)
    return subprocess.run(command, cwd=scratch, check=False).returncode


def logged_runs(tracking: str) -> list[dict]:
    """Dataset, mode, status and the figures of every run in the private store."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking)
    experiment = client.get_experiment_by_name("gpu_check")
    if experiment is None:
        return []
    rows = []
    for run in client.search_runs([experiment.experiment_id], order_by=["attributes.start_time"]):
        params, metrics = run.data.params, run.data.metrics
        if "train.mode" not in params:  # a sweep's parent run
            continue
        rows.append({
            "dataset": params.get("dataset.name", "?"), "mode": params["train.mode"],
            "status": run.info.status, "epoch_time_s": metrics.get("epoch_time_s"),
            "gpu_peak_mb": metrics.get("gpu_peak_mb"), "test_f1": metrics.get("test_f1_micro"),
        })  # fmt: skip
    return rows


def run_gpu_tests() -> tuple[int, str]:
    """`pytest -m gpu` (the CUDA tests); its exit code and summary line."""
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=REPO_ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    lines = completed.stdout.strip().splitlines()
    return completed.returncode, lines[-1] if lines else completed.stderr.strip()[-300:]


def figure(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def measured_doc(
    device: str, backend: str, epochs: int, rows: list[dict], tests: tuple[int, str]
) -> str:
    table = ["| dataset | mode | status | epoch s | gpu_peak_mb | test micro-F1 |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for row in rows:
        table.append(
            f"| {row['dataset']} | {row['mode']} | {row['status']} | "
            f"{figure(row['epoch_time_s'], 3)} | {figure(row['gpu_peak_mb'], 0)} | "
            f"{figure(row['test_f1'], 4)} |"
        )
    return "\n".join([
        "# GPU check", "", MEASURED, "",
        f"`make gpu-check` (scripts/gpu_check.py) on {platform.node()}, "
        f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC: {device}.", "",
        f"GraphSAGE 2x256, fanouts 25/10, batch 512, {epochs} epochs, one worker (num_gpus=1, "
        f"p=1, hash partitioner), {backend} for the distributed modes.", "", *table, "",
        f"CUDA tests (`pytest -m gpu`): exit {tests[0]}, `{tests[1]}`.", "",
    ])  # fmt: skip


def not_run_doc() -> str:
    return "\n".join([
        "# GPU check", "",
        "**No CUDA device: not run.** No GPU was available to the session that wrote this page "
        f"({platform.node()}, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d} UTC), so "
        "the GPU figures (epoch time and gpu_peak_mb of model_avg, grad_avg and centralized on "
        "cora and amazon_cs) and the CUDA tests' outcome are missing.", "",
        "On a CUDA machine, `make gpu-check` (scripts/gpu_check.py) trains the three modes with "
        "num_gpus=1 on cora (and amazon_cs when its raw file is present), runs the tests marked "
        "`gpu` and rewrites this page with the measured table.", "",
    ])  # fmt: skip


def check(device: str, epochs: int, doc: Path, datasets: list[str]) -> int:
    """Train every mode on each present dataset on `device` (cuda or cpu) and write `doc`; the
    exit status (0 also without a CUDA device: the doc then says so, unless it holds measured
    figures)."""
    if device == "cuda":
        summary = cuda_summary()
        if summary is None:
            print("no CUDA device: not run")
            if doc.is_file() and MEASURED in doc.read_text():
                print(f"{doc} holds measured figures: kept")
            else:
                atomic_write_bytes(doc, not_run_doc().encode())
                print(f"wrote {doc}")
            return 0
    else:
        summary = f"CPU ({os.cpu_count()} cores), not a GPU check"
    present = [name for name in datasets if DATASETS.get(name, Path("/")).is_file()]
    failed = 0
    with tempfile.TemporaryDirectory(prefix="gnnbench-gpu-check-") as scratch:
        for dataset in present:
            failed |= train_all_modes(dataset, device, epochs, Path(scratch)) != 0
        rows = logged_runs(f"sqlite:///{scratch}/mlflow.db")
    tests = run_gpu_tests() if device == "cuda" else (0, "not run on the CPU")
    backend = "NCCL" if device == "cuda" else "gloo"
    atomic_write_bytes(doc, measured_doc(summary, backend, epochs, rows, tests).encode())
    print(doc.read_text())
    return 1 if failed or tests[0] not in (0, 5) else 0  # 5: no tests collected
