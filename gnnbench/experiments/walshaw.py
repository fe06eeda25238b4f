"""Every partitioner's 2-way edge cut on the Walshaw archive, over the best-known cut
(docs/walshaw.md, scripts/walshaw.py), and GREM's through the partition stage
(docs/walshaw_grem.md, scripts/walshaw_grem.py). The scripts' docstrings say how each is measured.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from gnnbench.data.datasets import prepare_dataset
from gnnbench.data.store import GraphStore
from gnnbench.partition.spec import PartitionSpec
from gnnbench.partition.stage.runner import run_partition_stage
from gnnbench.paths import REPO_ROOT, raw_dir

GREM_DOC = REPO_ROOT / "docs" / "walshaw_grem.md"
DOC = REPO_ROOT / "docs" / "walshaw.md"
CSV = REPO_ROOT / "docs" / "walshaw.csv"
REFINE = {"refine_passes": 10}  # the cut objective: the archive's measure
# label -> (partitioner, overrides of its config file and of the shared keys)
CONFIGS: dict[str, tuple[str, dict]] = {
    "metis": ("metis", {}),
    "kaminpar": ("kaminpar", {}),
    "kaminpar strong": ("kaminpar", {"context": "strong"}),
    "kahip eco": ("kahip", {}),
    "kahip strong": ("kahip", {"mode": "strong"}),
    "spring": ("spring", {}),
    "grem": ("grem", {}),
    "ldg": ("ldg", {}),
    "fennel": ("fennel", {}),
    "heistream": ("heistream", {}),
    "quotient": ("quotient", {}),
    "hdrf": ("hdrf", {}),
    "dbh": ("dbh", {}),
    "greedy": ("greedy", {}),
    "twops": ("twops", {}),
    "grid": ("grid", {}),
    "hash": ("hash", {}),
    "ldg passes=3 refine=10": ("ldg", {"passes": 3, **REFINE}),
    "grem refine=10": ("grem", REFINE),
    "quotient grem refine=10": ("quotient", {"base": "grem", "base_keys": {}, **REFINE}),
    "quotient_best": ("quotient_best", {}),
    "quotient_multilevel": ("quotient_multilevel", {}),
}

CHUNK_FRACTIONS = (0.1, 0.01)


def best_known_cut(store: GraphStore, partition_file) -> int:
    """Cut edges of the archive's partition (one part per line, `%` comment lines skipped)."""
    lines = [
        line
        for line in partition_file.read_text().split("\n")
        if line.strip() and not line.startswith("%")
    ]
    part = np.array([int(line) for line in lines], dtype=np.int64)
    edges = store.edges()
    return int(np.count_nonzero(part[edges[:, 0]] != part[edges[:, 1]]))


def grem_cut(store: GraphStore, chunk_fraction: float) -> tuple[int, float, float]:
    spec = PartitionSpec.defaults("grem", chunk_fraction=chunk_fraction, seed_method="auto")
    book, _ = run_partition_stage(store, partitioner=spec, p=2, seed=0)
    metrics = book.metrics
    return (
        round(metrics["edge_cut"] * store.num_edges),
        metrics["partition_time_s"],
        metrics["vertex_balance"],
    )


def cut_and_balance(store, name: str, overrides: dict) -> tuple[int, float]:
    """Cut edges and vertex balance of one configuration at p = 2."""
    owner = PartitionSpec.defaults(name, **overrides).run_refined(store, 2, 0).owner
    owner = np.asarray(owner, dtype=np.int64)
    edges = store.edges()
    cut = int(np.count_nonzero(owner[edges[:, 0]] != owner[edges[:, 1]]))
    return cut, float(np.bincount(owner, minlength=2).max() / (store.num_nodes / 2))


def measure(labels: list[str] | None = None) -> pd.DataFrame:
    """Every graph under each configuration of `labels` (all of CONFIGS by default); their rows
    replace the same configurations' rows of the committed CSV, whose other rows stay."""
    labels = list(CONFIGS) if labels is None else labels
    rows = []
    for graph in sorted((raw_dir() / "walshaw" / "graphs").glob("*.graph")):
        store = prepare_dataset({"name": graph.stem, "source": "metis_graph", "path": str(graph)})
        partition = raw_dir() / "walshaw" / "partitions" / f"{graph.stem}.2.ptn"
        best = best_known_cut(store, partition)
        for label in labels:
            name, overrides = CONFIGS[label]
            cut, balance = cut_and_balance(store, name, overrides)
            rows.append({"graph": graph.stem, "nodes": store.num_nodes, "best_known": best,
                         "config": label, "cut": cut, "balance": balance})  # fmt: skip
            print(rows[-1], flush=True)
    frame = pd.DataFrame(rows)
    if CSV.is_file():
        kept = pd.read_csv(CSV)
        frame = pd.concat([kept[~kept["config"].isin(labels)], frame], ignore_index=True)
    frame.to_csv(CSV, index=False)
    return frame


BALANCED = 1.10  # cells above are flagged and left out of the geometric mean


def document(frame: pd.DataFrame) -> str:
    frame = frame.assign(ratio=frame["cut"] / frame["best_known"])
    frame = frame.assign(balanced=frame["balance"] <= BALANCED)
    cell = frame["ratio"].map("{:.2f}".format).where(frame["balanced"], frame["ratio"].map(
        "{:.2f}*".format))  # fmt: skip
    wide = frame.assign(cell=cell).pivot(index="graph", columns="config", values="cell")
    wide = wide.reindex(columns=list(CONFIGS), fill_value="—")  # configs the CSV lacks yet
    balanced = frame[frame["balanced"]]
    summary = pd.DataFrame({
        "geomean": balanced.groupby("config")["ratio"].agg(lambda r: float(np.exp(np.log(r).mean()))),
        "worst": balanced.groupby("config")["ratio"].max(),
        "cells": balanced.groupby("config").size(),
        "balance": frame.groupby("config")["balance"].max(),
    }).reindex(list(CONFIGS))  # fmt: skip
    graphs = frame["graph"].nunique()
    lines = [
        "# Every partitioner on the Walshaw archive, p = 2",
        "",
        "Generated by `python scripts/walshaw.py` (seed 0) from docs/walshaw.csv. Each cell: "
        "cut edges / the archive's best-known cut (5% imbalance allowed there). `refine=10`: ten "
        "passes of the cut refinement (gnnbench/partition/refine.py); METIS is the in-memory "
        f"baseline (pymetis). `*`: vertex balance above {BALANCED:.2f} (a side holding more than "
        "its share cuts less for it: balance 2.0 is one side holding every node, cut 0); such "
        "cells are left out of the geometric mean and the worst ratio.",
        "",
        f"| config | geometric mean | worst | balanced graphs (of {graphs}) | worst vertex balance |",
        "|---|---|---|---|---|",
    ]
    for config, row in summary.iterrows():
        cells = 0 if pd.isna(row.cells) else int(row.cells)
        mean = "—" if cells == 0 else f"{row.geomean:.2f}"
        worst = "—" if cells == 0 else f"{row.worst:.1f}"
        lines.append(f"| {config} | {mean} | {worst} | {cells} | {row.balance:.3f} |")
    lines += ["", "Per graph (cut / best-known):", ""]
    lines += ["| graph | " + " | ".join(CONFIGS) + " |", "|---" * (len(CONFIGS) + 1) + "|"]
    for graph, row in wide[list(CONFIGS)].iterrows():
        lines.append(f"| {graph} | " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def write_grem_doc() -> int:
    """GREM at p = 2 on every Walshaw graph, for each chunk fraction, into GREM_DOC; 2 without graphs."""
    graphs = sorted((raw_dir() / "walshaw" / "graphs").glob("*.graph"))
    if not graphs:
        print(f"no Walshaw graphs under {raw_dir() / 'walshaw' / 'graphs'}", file=sys.stderr)
        return 2
    rows = []
    for graph in graphs:
        store = prepare_dataset({"name": graph.stem, "source": "metis_graph", "path": str(graph)})
        best = best_known_cut(store, raw_dir() / "walshaw" / "partitions" / f"{graph.stem}.2.ptn")
        cells = [graph.stem, str(store.num_nodes), str(store.num_edges), str(best)]
        for fraction in CHUNK_FRACTIONS:
            cut, seconds, balance = grem_cut(store, fraction)
            cells += [str(cut), f"{cut / best:.2f}", f"{balance:.3f}", f"{seconds:.3f}"]
        rows.append("| " + " | ".join(cells) + " |")
        print(rows[-1], flush=True)
    header = ["| graph | nodes | edges | best-known cut |"]
    for fraction in CHUNK_FRACTIONS:
        header[0] += f" GREM cut ({fraction}) | ratio | balance | time (s) |"
    header.append("|" + "---|" * (4 + 4 * len(CHUNK_FRACTIONS)))
    text = [
        "# GREM on the Walshaw archive, p = 2",
        "",
        "Generated by `python scripts/walshaw_grem.py` (seed 0, pymetis seed of the first chunk).",
        "ratio = GREM's cut edges / the best-known partition's cut edges (the archive allows 5%",
        "imbalance; GREM keeps each side within ceil(n/2)). Time is `partition_time_s`.",
        "",
        *header,
        *rows,
        "",
    ]
    out = GREM_DOC
    out.write_text("\n".join(text))
    print(f"wrote {out}")
    return 0
