"""Partition stage at scale on generated power-law graphs (scripts/scale.py): import each graph,
run the real partition stage afresh per partitioner, and merge each row into docs/scale.csv as
soon as it is measured; the papers_scale training runs likewise into docs/scale_training.csv."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
from omegaconf import OmegaConf

from gnnbench.composition import sweep_grid
from gnnbench.data.datasets import prepare_dataset
from gnnbench.data.store import read_json
from gnnbench.errors import GnnbenchError, one_line
from gnnbench.experiments import scale_training
from gnnbench.partition.spec import PartitionSpec
from gnnbench.partition.stage.book import FORMAT_VERSION as BOOK_FORMAT
from gnnbench.partition.stage.runner import run_partition_stage
from gnnbench.paths import CONF_DIR

SIZES = (20_000_000, 100_000_000)
BILLION = 1_000_000_000
METRICS = [
    "partition_time_s", "partition_peak_mb", "partition_rss_mb", "replication_factor", "edge_cut",
    "gnn_ready_time_s", "gnn_ready_peak_mb", "gnn_ready_route_s", "gnn_ready_structure_s",
    "gnn_ready_rows_s",
]  # fmt: skip
COLUMNS = [
    "target_edges", "edges", "nodes", "feature_dim", "partitioner", "p", "import_time_s",
    "import_peak_mb", "import_rss_mb", "partition_time_s",
    "partition_peak_mb", "partition_rss_mb", "replication_factor", "edge_cut",
    "gnn_ready_time_s", "gnn_ready_peak_mb", "gnn_ready_route_s", "gnn_ready_structure_s",
    "gnn_ready_rows_s", "stage_wall_s", "error", "measured_utc", "load_1m", "meter",
]  # fmt: skip
IMPORT_FIGURES = ("import_time_s", "import_peak_mb", "import_rss_mb")


def graph_config(num_edges: int, feature_dim: int) -> dict:
    """A synthetic power-law graph of about `num_edges` undirected edges, 10 edges per node."""
    num_nodes = max(1000, num_edges // 10)
    return {
        "name": f"scale-{num_edges}",
        "source": "synthetic",
        "num_nodes": num_nodes,
        "avg_degree": 2 * num_edges / num_nodes * 1.02,  # a little over, for duplicates
        "num_classes": 16,
        "feature_dim": feature_dim,
        "seed": 7,
        "chunk_edges": 1 << 20,
    }


def billion_experiment() -> tuple[dict, int, list[tuple[str, dict]]]:
    """gnnbench/conf/experiment/billion.yaml's dataset (over the synthetic defaults), p, and each swept
    partitioner's config with the experiment's partitioner keys (METIS's memory cap)."""
    experiment = OmegaConf.load(CONF_DIR / "experiment" / "billion.yaml")
    dataset = OmegaConf.merge(
        OmegaConf.load(CONF_DIR / "dataset" / "synthetic.yaml"), experiment.dataset
    )
    shared = OmegaConf.to_container(experiment.get("partitioner", {}))
    runs = [(name, partitioner_config(name, **shared)) for name in swept_partitioners("billion")]
    return OmegaConf.to_container(dataset), int(experiment.p), runs


def swept_partitioners(experiment: str) -> list[str]:
    """The partitioners an experiment config sweeps, in its order."""
    config = OmegaConf.load(CONF_DIR / "experiment" / f"{experiment}.yaml")
    return sweep_grid(sweeper_params=config.hydra.sweeper.params)["partitioner"]


def partitioner_config(name: str, **overrides) -> dict:
    config = OmegaConf.load(CONF_DIR / "partitioner" / f"{name}.yaml")
    return {**OmegaConf.to_container(config), **overrides}


def run_size(
    graph: dict,
    target_edges: int,
    runs: list[tuple[str, dict]],
    p: int,
    csv: Path,
    rerun: bool = False,
) -> None:
    """Import one graph (or reuse it), then run the partition stage afresh for each partitioner
    not yet in `csv` at this size (every one with `rerun`); each row is merged into `csv` as soon
    as it is measured, with the time and the machine's load average when it started."""
    feature_dim = int(graph.get("feature_dim", 0))
    done = set() if rerun else _rows_done(csv, target_edges, feature_dim)
    runs = [(name, config) for name, config in runs if name not in done]
    if not runs:
        return
    store = prepare_dataset(graph)
    meta = read_json(store.path / "meta.json")
    for name, config in runs:
        row = {
            "target_edges": target_edges, "edges": store.num_edges, "nodes": store.num_nodes,
            "feature_dim": feature_dim, "partitioner": name, "p": p,
            **{key: meta.get(key) for key in IMPORT_FIGURES},
            "measured_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
            "load_1m": round(os.getloadavg()[0], 1), "meter": BOOK_FORMAT,
        }  # fmt: skip
        row.update(_measure_stage(store, config, p, feature_dim > 0))
        print(row, flush=True)
        merge(csv, [row]).to_csv(csv, index=False)


def _rows_done(csv: Path, target_edges: int, feature_dim: int) -> set[str]:
    if not csv.is_file():
        return set()
    old = pd.read_csv(csv)
    mine = old[(old.target_edges == target_edges) & (old.feature_dim == feature_dim)]
    return set(mine.partitioner)


def _measure_stage(store, config: dict, p: int, node_data: bool) -> dict:
    """One fresh partition stage: its metrics, or the one-line error it ended with."""
    started = time.perf_counter()
    try:
        spec = PartitionSpec.defaults(**config)  # the YAML's keys, the shared block's, overrides
        book, cached = run_partition_stage(
            store, partitioner=spec, p=p, seed=0, node_data=node_data
        )
        if cached:  # figures must come from this run: drop the cached book and run again
            shutil.rmtree(book.path)
            started = time.perf_counter()
            book, _ = run_partition_stage(store, partitioner=spec, p=p, seed=0, node_data=node_data)
    except GnnbenchError as exc:
        return {"error": one_line(exc), "stage_wall_s": round(time.perf_counter() - started, 3)}
    metrics = book.meta["metrics"]
    shutil.rmtree(book.path)  # books at these sizes are GBs: keep only the figures
    return {
        **{key: metrics.get(key) for key in METRICS},
        "stage_wall_s": round(time.perf_counter() - started, 3),
    }


def merge(csv: Path, rows: list[dict]) -> pd.DataFrame:
    """Previous results with these rows replacing any of the same (size, partitioner, F)."""
    new = pd.DataFrame(rows, columns=COLUMNS)
    if csv.is_file():
        old = pd.read_csv(csv)
        key = ["target_edges", "partitioner", "feature_dim"]
        keep = ~old.set_index(key).index.isin(new.set_index(key).index)
        new = pd.concat([old[keep], new], ignore_index=True)
    return new.sort_values(["feature_dim", "edges", "partitioner"]).reset_index(drop=True)


def training_epochs(num_nodes: int) -> int:
    """About as many optimizer steps at every size: steps per epoch grow with the training nodes."""
    return max(1, round(4e7 / num_nodes))


def run_training(
    num_nodes: int, home: Path, csv: Path, partitioners: list[str] | None = None
) -> None:
    """experiment=papers_scale at `num_nodes`, one of its partitioners (or `partitioners`) at a
    time as a user runs it, into a store of their own; the first partitioner's partitions also
    train the MLP control. Each job's row is merged into `csv` as soon as it finishes, so an
    interrupted size keeps what it measured.

    A partitioner's book is deleted once its jobs are done: at 1 B edges the store (35 GB), one
    book (24 GB) and the next GNN-ready step's spill check (32 GB) exceed this machine's disk. The figures
    are in the MLflow store; a rerun of a finished job is skipped by the job's identity."""
    uri = f"sqlite:///{home / 'scale_training.db'}"
    epochs = training_epochs(num_nodes)
    command = [sys.executable, "-m", "gnnbench", "experiment=papers_scale",
               f"dataset.num_nodes={num_nodes}", f"train.epochs={epochs}",
               f"train.eval_every={epochs}", f"tracking.uri={uri}",
               f"tracking.experiment={scale_training.EXPERIMENT}"]  # fmt: skip
    for index, name in enumerate(partitioners or swept_partitioners("papers_scale")):
        models = ["sage", "mlp"] if index == 0 else ["sage"]
        for model in models:
            load = round(os.getloadavg()[0], 1)
            subprocess.run([*command, f"partitioner={name}", f"model={model}"], check=True)
            merge_training_row(uri, csv, num_nodes, name, model, load)
        shutil.rmtree(home / "partitions", ignore_errors=True)


def merge_training_row(
    uri: str, csv: Path, num_nodes: int, partitioner: str, model: str, load: float
) -> None:
    """The store's row of one training job into `csv`, replacing the same (size, partitioner,
    model), stamped with when it was merged and the load average its job started under."""
    runs = scale_training.runs_frame(uri)
    new = runs[
        (runs.nodes == num_nodes) & (runs.partitioner == partitioner) & (runs.model == model)
    ].assign(measured_utc=time.strftime("%Y-%m-%d %H:%M", time.gmtime()), load_1m=load)
    if csv.is_file():
        old = pd.read_csv(csv)
        same = (old.nodes == num_nodes) & (old.partitioner == partitioner) & (old.model == model)
        new = pd.concat([old[~same], new], ignore_index=True)
    new.sort_values(["edges", "model", "partitioner"]).to_csv(csv, index=False)
