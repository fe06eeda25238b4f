"""The GPU path in one command (`make gpu-check`): train every mode on CUDA and write docs/gpu.md.

On a CUDA machine: `python -m gnnbench -m train=model_avg,grad_avg,centralized num_gpus=1` on cora
(and amazon_cs when its raw file is present), logged to a private MLflow store, then the CUDA
tests (`pytest -m gpu`); docs/gpu.md gets each run's epoch time, gpu_peak_mb and test F1 and the
tests' outcome. Without a CUDA device it prints "no CUDA device: not run" and says so in the doc
(a doc holding measured figures is kept). `--device cpu` runs the same procedure on the CPU, to
check this script, writing only to --doc.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

from gnnbench.atomic import atomic_write_bytes

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "gpu.md"
MEASURED = "<!-- gpu_check: measured -->"
MODES = ("model_avg", "grad_avg", "centralized")
RAW_DIR = Path(os.environ.get("GNNBENCH_RAW_DIR", REPO.parent / "shared" / "datasets"))
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
        cwd=REPO, capture_output=True, text=True, check=False,
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


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--doc", type=Path, default=DOC)
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    args = parser.parse_args(argv)
    if args.device == "cuda":
        device = cuda_summary()
        if device is None:
            print("no CUDA device: not run")
            if args.doc.is_file() and MEASURED in args.doc.read_text():
                print(f"{args.doc} holds measured figures: kept")
            else:
                atomic_write_bytes(args.doc, not_run_doc().encode())
                print(f"wrote {args.doc}")
            return 0
    else:
        if args.doc == DOC:
            parser.error("--device cpu checks the script: give --doc a path outside docs/")
        device = f"CPU ({os.cpu_count()} cores), not a GPU check"
    present = [name for name in args.datasets if DATASETS.get(name, Path("/")).is_file()]
    failed = 0
    with tempfile.TemporaryDirectory(prefix="gnnbench-gpu-check-") as scratch:
        for dataset in present:
            failed |= train_all_modes(dataset, args.device, args.epochs, Path(scratch)) != 0
        rows = logged_runs(f"sqlite:///{scratch}/mlflow.db")
    tests = run_gpu_tests() if args.device == "cuda" else (0, "not run on the CPU")
    atomic_write_bytes(
        args.doc,
        measured_doc(
            device, "NCCL" if args.device == "cuda" else "gloo", args.epochs, rows, tests
        ).encode(),
    )
    print(args.doc.read_text())
    return 1 if failed or tests[0] not in (0, 5) else 0  # 5: no tests collected


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
