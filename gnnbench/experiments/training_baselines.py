"""Training systems side by side (issue 41): docs/training_baselines.md, its CSV and its Fig. 10
PNG from the runs of experiment=training_baselines_{gnnbench,distdgl,pyg} (scripts/training_baselines.py).

A row of the CSV is one FINISHED job: its dataset, book, system and seed, every figure of the
one meter (docs/design.md, "Metrics") and its validation F1 per epoch (`val_curve`, JSON). The
doc is rebuilt from that CSV alone, so it regenerates from the repository.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from gnnbench.paths import REPO_ROOT
from gnnbench.process.atomic import atomic_write_bytes
from gnnbench.track.tags import JOB, role_filter

EXPERIMENT = "training_baselines"
CONFIGS = ("training_baselines_gnnbench", "training_baselines_distdgl", "training_baselines_pyg")
DOC = REPO_ROOT / "docs" / "training_baselines.md"
CSV = DOC.with_suffix(".csv")
PNG = REPO_ROOT / "docs" / "training_baselines_curves.png"
PARAMS = {"dataset": "dataset.name", "partitioner": "partitioner.name", "train": "train.mode",
          "seed": "seed", "p": "p", "num_gpus": "num_gpus", "epochs": "train.epochs"}  # fmt: skip
METRICS = (
    "epoch_time_s", "compute_time_s", "batch_wait_s", "sync_time_s", "sync_wait_s",
    "load_time_s", "eval_time_s", "train_peak_rss_mb", "train_rss_sum_mb", "prepare_time_s",
    "partition_time_s", "partition_peak_mb", "partition_with_features_peak_mb", "test_f1_micro",
    "edge_cut",
)  # fmt: skip
# A system: its training mode and, where it trains a book, the book's partitioner
SYSTEMS = {"model_avg": "gnnbench model_avg", "grad_avg": "gnnbench grad_avg",
           "distdgl": "DistDGL", "pyg_ddp": "PyG DDP", "pyg_cluster": "PyG Cluster-GCN"}  # fmt: skip
UNPARTITIONED = ("pyg_ddp", "pyg_cluster")


def export(tracking_uri: str, path: Path = CSV) -> pd.DataFrame:
    """Every FINISHED job of the experiment (its newest run) as a row, written to `path`."""
    from gnnbench.track.mlflow_run import PRESET_TAG
    from gnnbench.track.report.query import (
        experiment_runs,
        newest_per_job,
        open_store,
        read_epoch_meter,
    )

    where = f"attributes.status = 'FINISHED' and {role_filter(JOB)}"
    client = open_store(tracking_uri)
    rows = []
    for run in newest_per_job(experiment_runs(tracking_uri, EXPERIMENT, where)):
        row = {name: run.data.params.get(key) for name, key in PARAMS.items()}
        row["partitioner"] = run.data.tags.get(PRESET_TAG) or row["partitioner"]
        row = read_epoch_meter({**row, **{m: run.data.metrics.get(m) for m in METRICS}})
        row["val_curve"] = json.dumps(_curve(client, run.info.run_id))
        rows.append(row)
    frame = pd.DataFrame(rows, columns=[*PARAMS, *METRICS, "val_curve"])
    atomic_write_bytes(path, frame.to_csv(index=False).encode())
    return frame


def _curve(client, run_id: str) -> list[float]:
    """Validation micro-F1 per epoch (the per-epoch points, not the summary logged after them)."""
    points: dict[int, tuple[int, float]] = {}
    for metric in client.get_metric_history(run_id, "val_f1_micro"):
        if metric.step not in points or metric.timestamp < points[metric.step][0]:
            points[metric.step] = (metric.timestamp, metric.value)
    return [points[step][1] for step in sorted(points)]


def read(path: Path = CSV) -> pd.DataFrame:
    return pd.read_csv(path) if path.is_file() else pd.DataFrame(columns=[*PARAMS, *METRICS])


def system(row) -> str:
    """`DistDGL on spring`, `PyG DDP`: the training system and the book it trains."""
    name = SYSTEMS.get(row["train"], row["train"])
    return name if row["train"] in UNPARTITIONED else f"{name} on {row['partitioner']}"


def _cell(value: float, digits: int = 3) -> str:
    return (
        "—"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else f"{value:.{digits}f}"
    )


def table_lines(frame: pd.DataFrame) -> list[str]:
    """Per graph and system, means over seeds: the wall-clock epoch split into its parts, its
    ratio to DistDGL's (on its METIS) and to PyG DDP's, memory, partition time, test F1."""
    if frame.empty:
        return ["(no finished runs yet: `python scripts/training_baselines.py --run`)"]
    missing = [metric for metric in METRICS if metric not in frame]  # a figure no run logged
    frame = frame.assign(system=frame.apply(system, axis=1), **dict.fromkeys(missing, math.nan))
    epochs = frame["epochs"].astype(float)
    frame = frame.assign(sync_per_epoch=frame["sync_time_s"] / epochs,
                         wait_per_epoch=frame["sync_wait_s"] / epochs)  # fmt: skip
    lines = [
        "| graph | system | seeds | epoch s (wall) | vs DistDGL | vs PyG DDP | compute | batch wait "
        "| sync | rank wait | load | eval s | largest peak MB | summed peak MB | partition s "
        "| partition peak MB | prepare s | test F1 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for dataset, rows in frame.groupby("dataset", sort=True):
        means = rows.groupby("system").mean(numeric_only=True)
        spread = rows.groupby("system")["test_f1_micro"].std()
        seeds = rows.groupby("system").size()
        reference = {name: means["epoch_time_s"].get(label) for name, label in
                     (("distdgl", "DistDGL on distdgl_metis"), ("pyg", "PyG DDP"))}  # fmt: skip
        for label in means.index:
            row = means.loc[label]
            ratios = [row["epoch_time_s"] / ref if ref else math.nan for ref in reference.values()]
            lines.append(
                f"| {dataset} | {label} | {seeds[label]} | {_cell(row['epoch_time_s'])} | "
                f"{_cell(ratios[0], 2)} | {_cell(ratios[1], 2)} | {_cell(row['compute_time_s'])} | "
                f"{_cell(row['batch_wait_s'])} | {_cell(row['sync_per_epoch'])} | "
                f"{_cell(row['wait_per_epoch'])} | {_cell(row['load_time_s'])} | "
                f"{_cell(row['eval_time_s'])} | {_cell(row['train_peak_rss_mb'], 0)} | "
                f"{_cell(row['train_rss_sum_mb'], 0)} | {_cell(row['partition_time_s'], 2)} | "
                f"{_cell(row['partition_peak_mb'], 1)} | {_cell(row['prepare_time_s'], 2)} | "
                f"{_cell(row['test_f1_micro'], 4)} ± {_cell(spread.get(label), 4)} |"
            )
    return lines


def plot_curves(frame: pd.DataFrame, path: Path | None = None, graphs: int = 2) -> bool:
    """Fig. 10's analogue: validation F1 per epoch of every system (mean over seeds) on the
    graphs with most systems; False (nothing written) without runs."""
    if frame.empty:
        return False
    path = path or PNG
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frame = frame.assign(system=frame.apply(system, axis=1))
    counts = frame.groupby("dataset")["system"].nunique()  # most systems first, then by name
    chosen = sorted(counts.index, key=lambda name: (-counts[name], name))[:graphs]
    figure, axes = plt.subplots(1, len(chosen), figsize=(6 * len(chosen), 4), squeeze=False)
    for axis, dataset in zip(axes[0], sorted(chosen), strict=True):
        for label, rows in frame[frame["dataset"] == dataset].groupby("system"):
            curves = [json.loads(curve) for curve in rows["val_curve"]]
            length = min(len(curve) for curve in curves)
            mean = [sum(curve[i] for curve in curves) / len(curves) for i in range(length)]
            axis.plot(range(1, length + 1), mean, label=label)
        axis.set(title=dataset, xlabel="epoch", ylabel="validation micro-F1")
        axis.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(figure)
    return True


def write_doc(frame: pd.DataFrame) -> None:
    """docs/training_baselines.md (and the curves' PNG) from the rows."""
    plotted = plot_curves(frame)
    datasets = ", ".join(sorted(frame["dataset"].unique())) if not frame.empty else "none yet"
    lines = [
        "# Training systems side by side",
        "",
        "Generated by `python scripts/training_baselines.py` from `docs/training_baselines.csv`",
        "(`--run` sweeps `experiment=training_baselines_{gnnbench,distdgl,pyg}` first and exports their",
        "runs into MLflow experiment `training_baselines`). p = num_gpus = 2",
        "CPU processes on one 2-core machine (gloo), GraphSAGE (2 layers, 256 hidden, fanouts 25/10),",
        "batch 512, Adam 0.01, 20 epochs; test micro-F1 at the best validation epoch; means over the",
        f"seeds shown. Graphs run so far: {datasets}.",
        "Every system's GraphSAGE starts from the same initialisation (PyG's SAGEConv, that is",
        "torch.nn.Linear's; DistDGL's dgl.nn.SAGEConv is re-initialised so: with DGL's own, ~3x",
        "larger weights, its validation F1 rose two epochs before the others').",
        "",
        'The meter is the same for every system (docs/design.md, "Metrics"): `epoch s` is the slowest',
        "trainer's wall clock of an epoch, from its first batch to its last synchronisation; beside it",
        "its parts: compute (forward, backward, step; for DistDGL and PyG, DDP's all-reduce happens",
        "inside backward and is counted there), batch wait (sampling and feature fetches: DistDGL's",
        "from its graph servers, remote ones for cut edges), sync and rank wait (gnnbench's",
        "all-reduces and barriers, per epoch) and partition loads. Memory: the largest training",
        "process's resident peak and the sum over every training process (DistDGL's graph servers",
        "included; shared pages a process maps count in each). `partition` is the book's partition",
        "stage (none for PyG's recipes, which train the whole graph); `prepare` is what a baseline",
        "does before training (DistDGL: the book in its format; PyG: loading the graph, Cluster-GCN's",
        "METIS clustering). `vs DistDGL` and `vs PyG DDP` are epoch-time ratios to DistDGL on its",
        "own METIS partitions and to PyG's DDP recipe on the same graph.",
        "",
        *table_lines(frame),
        "",
    ]
    if plotted:
        lines += ["## Validation F1 per epoch (SDT-GNN Fig. 10's analogue)", "",
                  f"![validation F1 per epoch]({PNG.name})", ""]  # fmt: skip
    atomic_write_bytes(DOC, "\n".join(lines).encode())
    print(f"wrote {DOC}")
