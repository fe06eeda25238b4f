"""The two side studies of the streaming quality section (docs/partition_quality.md): memory of
every configuration on one generated 10 M-edge graph, and GREM's Walshaw cuts repaired by the
refinement post-pass; each measured into its CSV and rendered as lines of the section."""

from __future__ import annotations

import os
import time

import numpy as np
import pandas as pd

from gnnbench.data.datasets import prepare_dataset
from gnnbench.data.store import GraphStore
from gnnbench.errors import GnnbenchError, one_line
from gnnbench.experiments.streaming_configs import (
    CONFIGS,
    PUBLISHED,
    partitioner_spec,
    peak_labels,
)
from gnnbench.experiments.streaming_quality import COLUMNS, section, write_section
from gnnbench.experiments.walshaw import best_known_cut
from gnnbench.partition.algorithms.grem import grem
from gnnbench.partition.refine import refine
from gnnbench.partition.stage.runner import run_partition_stage
from gnnbench.paths import REPO_ROOT, raw_dir

WALSHAW_CSV = REPO_ROOT / "docs" / "partition_quality_walshaw_refine.csv"
WALSHAW_REFINE = (3, 10)  # refine_passes after GREM on the Walshaw graphs
PEAK_CSV = REPO_ROOT / "docs" / "partition_quality_streaming_peak.csv"
PEAK_COLUMNS = (*COLUMNS, "partition_rss_mb")


def peak_runs(store: GraphStore, p: int = 16) -> pd.DataFrame:
    """PEAK_CONFIGS on `store` (bench's generated power-law graph: the caller builds it, since
    bench/ is no part of the package)."""
    rows = pd.read_csv(PEAK_CSV).to_dict("records") if PEAK_CSV.is_file() else []
    for label in peak_labels():  # rows already there are kept, not re-run
        if any((r["graph"], r["config"], r["p"]) == (store.name, label, p) for r in rows):
            continue
        name, overrides = CONFIGS.get(label, (label, {}))
        spec = partitioner_spec(name, overrides)
        try:
            book, _ = run_partition_stage(store, partitioner=spec, p=p, seed=0, node_data=False)
        except GnnbenchError as exc:  # a baseline whose environment is missing, say
            print(f"{label}: {one_line(exc)}", flush=True)
            continue
        row = {"graph": store.name, "nodes": store.num_nodes, "edges": store.num_edges}
        row |= {"config": label, "p": p}
        row |= {column: book.metrics.get(column) for column in PEAK_COLUMNS}
        row |= {"measured_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
                "load_1m": os.getloadavg()[0]}  # fmt: skip
        print(row, flush=True)
        rows.append(row)
        pd.DataFrame(rows).to_csv(PEAK_CSV, index=False)
    return pd.DataFrame(rows)


def _rss(row) -> str:
    value = getattr(row, "partition_rss_mb", None)
    return "—" if value is None or pd.isna(value) else f"{value:.4g}"


def peak_lines(frame: pd.DataFrame) -> list[str]:
    metis = frame[frame["config"] == "metis"].iloc[0]
    lines = [
        "",
        f"Memory on {metis.graph} ({metis.nodes} nodes, {metis.edges} edges, bench's generated "
        f"power-law graph) at p = {metis.p}, through the stage (from "
        "docs/partition_quality_streaming_peak.csv), every configuration above and every registered "
        "partitioner at its defaults. One meter for all (docs/design.md, Metrics): time and heap peak "
        "cover everything built beyond the GraphStore, METIS's in-memory CSR and the node-stream "
        "CSR of LDG, Fennel, HeiStream, quotient and the refinement alike; RSS is the resident "
        "peak of the step itself. Structure-only books; the baselines that also load features "
        "(pyg_metis, distdgl_metis) log that second run apart, not here.",
        "",
        "| config | RF | edge cut | vertex balance | time s | heap peak MB | RSS MB | peak / METIS "
        "| time / METIS | measured (UTC, 1-min load) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in frame.itertuples():
        when = getattr(row, "measured_utc", None)
        when = "not recorded" if pd.isna(when) else f"{when} ({row.load_1m:.1f})"
        lines.append(
            f"| {row.config} | {row.replication_factor:.3f} | {row.edge_cut:.4f} | "
            f"{row.vertex_balance:.3f} | {row.partition_time_s:.3g} | "
            f"{row.partition_peak_mb:.4g} | {_rss(row)} | "
            f"{row.partition_peak_mb / metis.partition_peak_mb:.3f} | "
            f"{row.partition_time_s / metis.partition_time_s:.3f} | {when} |"
        )
    within = frame[
        (frame["partition_peak_mb"] <= 0.05 * metis.partition_peak_mb)
        & (frame["partition_time_s"] <= metis.partition_time_s)
    ]
    if len(within):
        best = within.loc[within["replication_factor"].idxmin()]
        lines += [
            "",
            f"Within 5% of METIS's memory and its time: {len(within)} configurations; the lowest "
            f"RF among them is {best.config}'s, {best.replication_factor / metis.replication_factor:.3f}"
            f"x METIS's (edge cut {best.edge_cut / metis.edge_cut:.3f}x).",
        ]
    else:
        lines += ["", "No configuration is within 5% of METIS's memory and within its time."]
    missing = [label for label in peak_labels() if label not in set(frame["config"])]
    if missing:
        lines += ["", f"Not measured yet on this graph: {', '.join(missing)}."]
    return lines


def walshaw_repair() -> pd.DataFrame:
    """GREM (chunk_fraction 0.1) at p=2 on every Walshaw graph, then refined; cut edges.

    In process (the quality is the stage's; only time and memory would differ): GREM's owners,
    then `refine` as the stage's post-pass runs it, against the archive's best-known cut.
    """
    rows = []
    for graph in sorted((raw_dir() / "walshaw" / "graphs").glob("*.graph")):
        store = prepare_dataset({"name": graph.stem, "source": "metis_graph", "path": str(graph)})
        best = best_known_cut(store, raw_dir() / "walshaw" / "partitions" / f"{graph.stem}.2.ptn")
        owner = grem(
            store, 2, 0, chunk_fraction=0.1, seed_method="auto", chunk_refinement=True
        ).owner
        row = {"graph": graph.stem, "nodes": store.num_nodes, "best_known": best}
        done = 0
        owner = owner.astype(np.int32)
        for passes in WALSHAW_REFINE:
            stats = refine(store, owner, 2, passes - done)  # continues where the last stopped
            done = passes
            row.setdefault("grem", stats["refine_cut_0"])
            last = max(int(k.rsplit("_", 1)[1]) for k in stats if k.startswith("refine_cut_"))
            row[f"refine={passes}"] = stats[f"refine_cut_{last}"]
            row[f"balance refine={passes}"] = np.bincount(owner).max() / (store.num_nodes / 2)
        print(row, flush=True)
        rows.append(row)
    frame = pd.DataFrame(rows)
    frame.to_csv(WALSHAW_CSV, index=False)
    return frame


def walshaw_lines(frame: pd.DataFrame) -> list[str]:
    head = "| graph | nodes | best-known cut | GREM cut | ratio |"
    rule = "|---|---|---|---|---|"
    for passes in WALSHAW_REFINE:
        head += f" refine={passes} cut | ratio | balance |"
        rule += "---|---|---|"
    lines = [
        "",
        "GREM's Walshaw results at p = 2 (docs/walshaw_grem.md) repaired by the refinement "
        "post-pass: cut edges after GREM (chunk_fraction 0.1, seed 0) and after r refinement "
        "passes (in process, from docs/partition_quality_walshaw_refine.csv); ratio = cut / the "
        "archive's best-known cut (5% imbalance allowed there; the refinement's bound is "
        "max(GREM's largest side, ceil(1.03 |V| / 2))).",
        "",
        head,
        rule,
    ]
    for row in frame.to_dict("records"):
        best = row["best_known"]
        cells = [row["graph"], str(row["nodes"]), str(best), str(row["grem"])]
        cells.append(f"{row['grem'] / best:.2f}")
        for passes in WALSHAW_REFINE:
            cut, balance = row[f"refine={passes}"], row[f"balance refine={passes}"]
            cells += [str(cut), f"{cut / best:.2f}", f"{balance:.3f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def write_doc(runs: pd.DataFrame) -> None:
    """The doc's streaming section from `runs`, with the side studies their CSVs hold."""
    lines = section(runs)
    if PEAK_CSV.is_file():
        lines += peak_lines(pd.read_csv(PEAK_CSV))
    if WALSHAW_CSV.is_file():
        lines += walshaw_lines(pd.read_csv(WALSHAW_CSV))
    write_section([*lines, "", *PUBLISHED])
