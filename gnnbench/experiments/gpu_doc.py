"""docs/gpu.md from a GPU check's results file (gnnbench/experiments/gpu_check.py writes both;
`scripts/gpu_check.py --render docs/gpu_check.json` rewrites the page from the committed file)."""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path

from gnnbench.process.atomic import atomic_write_bytes

MEASURED = "<!-- gpu_check: measured -->"
F1_TOLERANCE = 0.01  # GPU against CPU, same seeds (issue 45)


def job_of(outcome: dict) -> str:
    """The job an outcome is of (the CUDA tests' entry was keyed `group` in the first device
    run's file, docs/gpu_check.json)."""
    return outcome.get("job") or outcome["group"]


def _figure(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _metric(outcome: dict | None, name: str) -> float | None:
    return None if outcome is None else outcome.get("metrics", {}).get(name)


def _batch_share(outcome: dict | None) -> float | None:
    """The share of the epoch spent waiting for batches (sampling and gathering, sampler_workers=0)."""
    wait, epoch = _metric(outcome, "batch_wait_s"), _metric(outcome, "epoch_time_s")
    return None if wait is None or not epoch else wait / epoch


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    return None if numerator is None or not denominator else numerator / denominator


def job_rows(results: dict) -> list[str]:
    """One row per job: both devices' epoch time, the GPU/CPU ratio, gpu_peak_mb, batch share,
    test F1 on each and their difference."""
    by_key = {(o["device"], job_of(o)): o for o in results["outcomes"]}
    rows = ["| job | status GPU / CPU | epoch s GPU | epoch s CPU | GPU/CPU | gpu_peak_mb | "
            "batch share GPU / CPU | test F1 GPU | test F1 CPU | F1 GPU−CPU |",
            "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    names = [f"{g['dataset']}/{mode}/p={g['p']}" for g in results["groups"] for mode in g["modes"]]
    for name in names:
        gpu, cpu = by_key.get(("cuda", name)), by_key.get(("cpu", name))
        f1_gpu, f1_cpu = _metric(gpu, "test_f1_micro"), _metric(cpu, "test_f1_micro")
        gap = None if f1_gpu is None or f1_cpu is None else f1_gpu - f1_cpu
        status = " / ".join(o["status"] if o else "-" for o in (gpu, cpu))
        rows.append(
            f"| {name} | {status} | {_figure(_metric(gpu, 'epoch_time_s'), 3)} | "
            f"{_figure(_metric(cpu, 'epoch_time_s'), 3)} | "
            f"{_figure(_ratio(_metric(gpu, 'epoch_time_s'), _metric(cpu, 'epoch_time_s')), 2)} | "
            f"{_figure(_metric(gpu, 'gpu_peak_mb'), 0)} | {_figure(_batch_share(gpu), 2)} / "
            f"{_figure(_batch_share(cpu), 2)} | {_figure(f1_gpu, 4)} | {_figure(f1_cpu, 4)} | "
            f"{'-' if gap is None else f'{gap:+.4f}'} |"
        )
    return rows


def f1_verdict(results: dict) -> str:
    by_key = {(o["device"], job_of(o)): o for o in results["outcomes"]}
    gaps = []
    for (device, name), outcome in by_key.items():
        other = by_key.get(("cpu", name))
        if device == "cuda" and other is not None:
            f1_gpu, f1_cpu = _metric(outcome, "test_f1_micro"), _metric(other, "test_f1_micro")
            if f1_gpu is not None and f1_cpu is not None:
                gaps.append((abs(f1_gpu - f1_cpu), name))
    if not gaps:
        return "No job finished on both devices: test F1 not compared."
    worst = max(gaps)
    within = sum(gap <= F1_TOLERANCE for gap, _ in gaps)
    return (f"Test F1 on the GPU is within {F1_TOLERANCE} of the CPU's (same seeds) for {within} "
            f"of {len(gaps)} jobs; the largest gap is {worst[0]:.4f} ({worst[1]}).")  # fmt: skip


def facts_lines(results: dict) -> list[str]:
    facts, host = results.get("facts") or {}, results["host"]
    if not facts:
        return [f"No CUDA device: the CPU half alone ({host['cores']} cores, Python "
                f"{host['python']}), a rehearsal of the check, not GPU figures."]  # fmt: skip
    return [f"- device: {facts['device']} ({facts['gpu_memory_gb']} GB), driver {facts['driver']}",
            f"- torch {facts['torch']}, CUDA {facts['cuda']}, NCCL {facts['nccl']}",
            f"- host: {host['cores']} CPU cores, Python {host['python']}; the CPU columns ran on "
            "this same machine's CPU"]  # fmt: skip


def other_lines(results: dict) -> list[str]:
    lines = []
    for outcome in results["outcomes"]:
        if job_of(outcome).startswith("pytest"):
            lines.append(f"CUDA tests (`{outcome['command']}`): {outcome['status']}, "
                         f"`{outcome['last_line']}`.")  # fmt: skip
    unfinished = [o for o in results["outcomes"] if o["status"] != "finished"]
    if unfinished:
        lines += ["", f"{len(unfinished)} of {len(results['outcomes'])} entries did not finish "
                  f"within the {results['budget_s']:.0f} s budget or failed:", ""]  # fmt: skip
    for outcome in unfinished:
        lines.append(f"- {outcome['device']} {job_of(outcome)}: {outcome['status']} (its sweep: "
                     f"{outcome.get('group_status', outcome['status'])} after {outcome['wall_s']} s "
                     f"of its {outcome['share_s']} s share, last line `{outcome['last_line']}`)")  # fmt: skip
    return lines


def rerun_lines(results: dict) -> list[str]:
    """One line per rerun merged into the results (`--only ... --merge`): when, its budget, its jobs."""
    return [f"Rerun {rerun['started']} on {rerun['device']} and {rerun['host']['cores']} CPU "
            f"cores within {rerun['budget_s']:.0f} s (`--only`, merged into the file): "
            f"{', '.join(rerun['jobs'])}; their rows are the rerun's.\n"
            for rerun in results.get("reruns", [])]  # fmt: skip


def measured_doc(results: dict) -> str:
    commands = sorted({o["command"].replace("train.device=cuda", "train.device=<cuda|cpu>")
                       .replace("train.device=cpu", "train.device=<cuda|cpu>")
                       for o in results["outcomes"] if not job_of(o).startswith("pytest")})  # fmt: skip
    return "\n".join([
        "# GPU check", "", MEASURED, "",
        f"`make gpu-check` (scripts/gpu_check.py), {results['started']}, within a budget of "
        f"{results['budget_s']:.0f} s. Regenerate this page from its results file with "
        "`python scripts/gpu_check.py --render docs/gpu_check.json`.", "",
        *rerun_lines(results), *facts_lines(results), "",
        "GraphSAGE 2x256, fanouts 25/10, batches of 512, one worker (num_gpus=1), the hash "
        "partitioner, each mode's defaults (Adam, lr 0.01); NCCL on CUDA, gloo on the CPU. "
        "Epoch time is the wall clock of an epoch (docs/design.md, Metrics); the batch share is "
        "batch_wait_s / epoch_time_s, the part of the epoch spent sampling and gathering batches "
        "(sampler_workers=0: in the trainer); gpu_peak_mb is torch.cuda.max_memory_allocated.", "",
        *job_rows(results), "", f1_verdict(results), "", *other_lines(results), "",
        "The jobs, as `python -m gnnbench` sweeps (one process start per line) logged to a "
        "private MLflow store:", "",
        *[f"    {command}" for command in commands], "",
    ])  # fmt: skip


def not_run_doc() -> str:
    return "\n".join([
        "# GPU check", "",
        "**No CUDA device: not run.** No GPU was available to the session that wrote this page "
        f"({platform.node()}, {time.strftime('%Y-%m-%d', time.gmtime())} UTC).", "",
        "On a CUDA machine, `make gpu-check` (scripts/gpu_check.py) trains the three modes with "
        "num_gpus=1 on cora, amazon_cs and a 1 M-node synthetic graph, on the GPU and then on "
        "the same machine's CPU, runs the tests marked `gpu` and rewrites this page.", "",
    ])  # fmt: skip


def write_doc(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def render(results_file: Path, doc: Path) -> None:
    write_doc(doc, measured_doc(json.loads(results_file.read_text())))
