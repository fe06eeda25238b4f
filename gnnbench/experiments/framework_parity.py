"""Accuracy parity and epoch time of gnnbench, PyG and DGL (scripts/framework_parity.py): the
GraphSAGE recipe all three train (bench/ shares it), each framework's run, the rows saved as
measured, and the generated section of docs/training_speed.md."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import yaml

from gnnbench.data.datasets import prepare_dataset
from gnnbench.data.store import GraphStore
from gnnbench.errors import ConfigError
from gnnbench.paths import CONF_DIR, REPO_ROOT
from gnnbench.process.atomic import atomic_write_bytes
from gnnbench.setup.baseline_envs import distdgl_env, torch_sparse_with_metis
from gnnbench.train.runner import run_training
from gnnbench.train.spec import spec_from_conf

FANOUTS = [25, 10]
BATCH_SIZE = 512
HIDDEN = 256
DROPOUT = 0.5
LR = 0.01
RESULTS = REPO_ROOT / ".benchmarks" / "framework_parity"
BEGIN, END = "<!-- framework_parity:begin -->", "<!-- framework_parity:end -->"
PARITY_TOLERANCE = 0.01
INITIALISATION = {
    "gnnbench": "PyG SAGEConv's: weights kaiming-uniform (a=sqrt 5), bias U(+-1/sqrt(in))",
    "pyg": "PyG SAGEConv's: weights kaiming-uniform (a=sqrt 5), bias U(+-1/sqrt(in))",
    "dgl": "DGL SAGEConv's: weights xavier-uniform (gain sqrt 2), bias U(+-1/sqrt(in))",
    "dgl_pyg_init": "DGL SAGEConv, weights re-drawn as PyG's (kaiming-uniform, a=sqrt 5)",
}


def gnnbench_run(store: GraphStore, epochs: int, seed: int) -> dict:
    """gnnbench's centralized trainer; evaluated once, after the last epoch."""
    train = {"mode": "centralized", "epochs": epochs, "fanouts": FANOUTS, "batch_size": BATCH_SIZE,
             "lr": LR, "eval_every": epochs, "timeout_s": 3600}  # fmt: skip
    model = {"name": "sage", "layers": 2, "hidden": HIDDEN, "dropout": DROPOUT}
    spec = spec_from_conf(train, model, num_gpus=1, sync_interval=1, seed=seed)
    result = run_training(store_path=store.path, book_path=None, spec=spec)
    return {"test_f1_micro": result.test_f1_micro, "epoch_s": result.epoch_time_s}


def pyg_run(store: GraphStore, epochs: int, seed: int) -> dict:
    """PyG's documented recipe (NeighborLoader subgraphs, loss on the seed rows), then one
    full-graph forward for the test split."""
    import torch
    import torch.nn.functional as F
    from torch_geometric.data import Data
    from torch_geometric.loader import NeighborLoader
    from torch_geometric.nn import SAGEConv

    torch.manual_seed(seed)
    edges = torch.from_numpy(store.edges().astype(np.int64)).t()
    split = store.split()
    data = Data(
        x=torch.from_numpy(np.ascontiguousarray(store.features(), dtype=np.float32)),
        y=torch.from_numpy(store.labels().astype(np.int64)),
        edge_index=torch.cat([edges, edges.flip(0)], dim=1),
        num_nodes=store.num_nodes,
    )
    loader = NeighborLoader(
        data,
        num_neighbors=FANOUTS,
        batch_size=BATCH_SIZE,
        input_nodes=torch.from_numpy(split["train"].astype(np.int64)),
        shuffle=True,
    )
    convs = torch.nn.ModuleList(
        [SAGEConv(store.feature_dim, HIDDEN), SAGEConv(HIDDEN, store.num_classes)]
    )

    def forward(x: torch.Tensor, edge_index: torch.Tensor, training: bool) -> torch.Tensor:
        h = F.dropout(convs[0](x, edge_index).relu(), DROPOUT, training=training)
        return convs[1](h, edge_index)

    optimiser = torch.optim.Adam(convs.parameters(), lr=LR)
    seconds = []
    for _ in range(epochs):
        start = time.perf_counter()
        for batch in loader:
            out = forward(batch.x, batch.edge_index, True)[: batch.batch_size]
            loss = F.cross_entropy(out, batch.y[: batch.batch_size])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        seconds.append(time.perf_counter() - start)
    with torch.no_grad():
        test = torch.from_numpy(split["test"].astype(np.int64))
        predicted = forward(data.x, data.edge_index, False)[test].argmax(1)
    f1 = float((predicted == data.y[test]).float().mean())
    return {"test_f1_micro": f1, "epoch_s": statistics.fmean(seconds)}


def dgl_run(
    store: GraphStore, epochs: int, seed: int, threads: int, init: str, driver: Callable
) -> dict:
    """DGL 2.1 through the bench driver (bench/dgl_driver.run_dgl_driver) in the distdgl
    environment (its own torch)."""
    result = driver(
        distdgl_env(),
        store.path,
        epochs=epochs,
        threads=threads,
        seed=seed,
        extra=["--init", init, "--evaluate"],
    )
    return {
        "test_f1_micro": result["test_f1_micro"],
        "epoch_s": statistics.fmean(result["epoch_s"]),
    }


def runners(threads: int, dgl_driver: Callable) -> tuple[dict, dict[str, str]]:
    """Framework name -> run(store, epochs, seed), and the frameworks left out with why;
    `dgl_driver` runs DGL in its environment (bench/dgl_driver.py: bench is no part of the
    package)."""
    available = {"gnnbench": gnnbench_run}
    missing = {}
    if torch_sparse_with_metis():
        available["pyg"] = pyg_run
    else:
        missing["pyg"] = "torch-sparse not built (python -m gnnbench setup pyg_metis)"
    if (distdgl_env() / ".complete").is_file():
        available["dgl"] = lambda s, e, seed: dgl_run(s, e, seed, threads, "dgl", dgl_driver)
        available["dgl_pyg_init"] = lambda s, e, seed: dgl_run(
            s, e, seed, threads, "pyg", dgl_driver
        )
    else:
        missing["dgl"] = f"no DGL environment at {distdgl_env()} (setup distdgl_metis)"
    return available, missing


def load_store(dataset: str) -> GraphStore:
    config_path = CONF_DIR / "dataset" / f"{dataset}.yaml"
    if not config_path.is_file():
        raise ConfigError(f"--dataset {dataset}: no {config_path}")
    return prepare_dataset(yaml.safe_load(config_path.read_text()))


def mean_std(values: list[float]) -> str:
    spread = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.fmean(values):.4f} ± {spread:.4f}"


def table(rows: list[dict], seeds: list[int]) -> list[str]:
    """Markdown rows: per framework F1 mean ± std, per-seed F1, median epoch time, ratio."""
    names = [name for name in INITIALISATION if any(row["framework"] == name for row in rows)]
    by_name = {name: [row for row in rows if row["framework"] == name] for name in names}
    epoch = {name: statistics.median(row["epoch_s"] for row in by_name[name]) for name in names}
    lines = [
        "| framework | test micro-F1 (mean ± std) | per seed " + " / ".join(map(str, seeds))
        + " | median s/epoch | gnnbench / it | initialisation |",
        "|---|---|---|---|---|---|",
    ]  # fmt: skip
    for name in names:
        f1 = [row["test_f1_micro"] for row in sorted(by_name[name], key=lambda r: r["seed"])]
        ratio = epoch["gnnbench"] / epoch[name] if "gnnbench" in epoch else float("nan")
        lines.append(
            f"| {name} | {mean_std(f1)} | {' / '.join(f'{v:.4f}' for v in f1)} "
            f"| {epoch[name]:.3f} | {ratio:.2f} | {INITIALISATION[name]} |"
        )
    return lines


def verdict(rows: list[dict]) -> str:
    """Which framework means differ from gnnbench's by more than PARITY_TOLERANCE."""
    means = {}
    for row in rows:
        means.setdefault(row["framework"], []).append(row["test_f1_micro"])
    reference = statistics.fmean(means["gnnbench"])
    gaps = {
        name: statistics.fmean(v) - reference for name, v in means.items() if name != "gnnbench"
    }
    outside = [f"{name} ({gap:+.4f})" for name, gap in gaps.items() if abs(gap) > PARITY_TOLERANCE]
    if not outside:
        return f"Every framework's mean is within {PARITY_TOLERANCE} of gnnbench's."
    return f"Means further than {PARITY_TOLERANCE} from gnnbench's: " + ", ".join(outside) + "."


def write_section(doc: Path, section: list[str]) -> None:
    """Replace the text between the markers (appended at the end the first time)."""
    text = doc.read_text() if doc.is_file() else ""
    block = "\n".join([BEGIN, *section, END])
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    atomic_write_bytes(doc, text.encode())


def measure(store: GraphStore, args: argparse.Namespace, available: dict, saved: Path) -> list:
    """Every (framework, seed) not yet in the saved rows, seeds in turn (interleaved); each row
    is saved as soon as measured, with the UTC time and 1-minute load at its start."""
    rows = [] if args.fresh or not saved.is_file() else json.loads(saved.read_text())
    for seed in [] if args.table_only else args.seeds:
        for name, run in available.items():
            if any(r["framework"] == name and r["seed"] == seed for r in rows):
                continue
            utc, load = time.strftime("%Y-%m-%d %H:%M", time.gmtime()), os.getloadavg()[0]
            row = {"framework": name, "seed": seed, **run(store, args.epochs, seed)}
            rows.append({**row, "utc": utc, "load_1min": round(load, 1)})
            print(json.dumps(rows[-1]), flush=True)
            saved.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(saved, json.dumps(rows, indent=1).encode())
    return [r for r in rows if r["seed"] in args.seeds and r["framework"] in available]


def section(rows: list[dict], args: argparse.Namespace, argv: list[str], missing: dict) -> list:
    """The doc's generated section: how it was made, the table, the verdict."""
    command = " ".join(["nice -n 10 .venv/bin/python scripts/framework_parity.py", *argv])
    times = sorted(r["utc"] for r in rows if "utc" in r)
    loads = [r["load_1min"] for r in rows if "load_1min" in r]
    when = f"{times[0]} to {times[-1]} UTC" if times else "times not recorded"
    load = f"{min(loads):.1f}-{max(loads):.1f}" if loads else "not recorded"
    return [
        f"### Parity run: {args.dataset}, {args.epochs} epochs, seeds "
        f"{', '.join(map(str, args.seeds))}",
        "",
        f"Generated by `{command}` (runs started {when}; torch threads {args.threads}; 1-minute "
        f"load at the start of each run {load} on {os.cpu_count()} cores). GraphSAGE 2x{HIDDEN}, "
        f"fanouts {FANOUTS[0]}/{FANOUTS[1]}, batch {BATCH_SIZE}, Adam {LR}, dropout {DROPOUT}; "
        "test micro-F1 of the last model with every neighbour; s/epoch is the framework's own "
        "epoch loop (sampling, gathering, forward, backward, step), seeds run interleaved.",
        "",
        *table(rows, args.seeds),
        "",
        verdict(rows),
        *[f"Not run: {name}: {why}." for name, why in missing.items()],
    ]
