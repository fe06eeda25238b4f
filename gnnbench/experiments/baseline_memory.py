"""Peak memory of SPRING against the in-memory METIS baselines: docs/baseline_memory.md (+ .csv)
from the MLflow runs of experiment=baseline_memory and baseline_memory_cap
(scripts/baseline_memory.py sweeps them; its docstring says what each figure is)."""

from __future__ import annotations

import pandas as pd

from gnnbench.experiments.experiment_docs import write_table_doc
from gnnbench.paths import REPO_ROOT
from gnnbench.track.report.query import experiment_runs, one_meter_peaks
from gnnbench.track.tags import JOB, ROLE_TAG

DOC = REPO_ROOT / "docs" / "baseline_memory.md"
BASELINES = ("metis", "pyg_metis", "distdgl_metis")
WITH_FEATURES = ("pyg_metis", "distdgl_metis")  # their runs loading node data as users do
PARTITIONERS = ("spring", *BASELINES)


def runs_frame(tracking_uri: str, experiment: str) -> pd.DataFrame:
    """Newest job run per (dataset, partitioner): status, sizes, memory metrics, error."""
    rows, seen = [], set()
    for run in experiment_runs(tracking_uri, experiment):
        params, metrics = run.data.params, run.data.metrics
        key = (params.get("dataset.name"), params.get("partitioner.name"))
        if run.data.tags.get(ROLE_TAG) != JOB or key in seen:
            continue
        seen.add(key)
        rows.append(
            {
                "dataset": key[0],
                "partitioner": key[1],
                "status": run.info.status,
                "nodes": int(params.get("graph.num_nodes", 0)),
                "edges": int(params.get("graph.num_edges", 0)),
                "feature_dim": int(params.get("graph.feature_dim", 0)),
                "cap_gb": params.get("partitioner.memory_limit_gb"),
                "peak_mb": metrics.get("partition_peak_mb"),
                "with_features_peak_mb": metrics.get("partition_with_features_peak_mb"),
                "with_features_time_s": metrics.get("partition_with_features_time_s"),
                "gnn_ready_peak_mb": metrics.get("gnn_ready_peak_mb"),
                "rss_mb": metrics.get("partition_rss_mb"),
                "time_s": metrics.get("partition_time_s"),
                "replication_factor": metrics.get("replication_factor"),
                "edge_cut": metrics.get("edge_cut"),
                "error": run.data.tags.get("error", ""),
            }
        )
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    return one_meter_peaks(frame, "partitioner", "peak_mb", "with_features_peak_mb")


def _mb(value) -> str:
    return "—" if value is None or pd.isna(value) else f"{value:,.1f}"


def memory_table(frame: pd.DataFrame) -> list[str]:
    done = frame[frame.status == "FINISHED"]
    peak = done.pivot_table(index="dataset", columns="partitioner", values="peak_mb")
    features = done.pivot_table(
        index="dataset", columns="partitioner", values="with_features_peak_mb"
    )
    for name in WITH_FEATURES:
        if name in features:
            peak[f"{name} with features"] = features[name]
    columns = (*PARTITIONERS, *(f"{name} with features" for name in WITH_FEATURES))
    sizes = frame.groupby("dataset")[["nodes", "edges", "feature_dim"]].max()
    ready = done[done.partitioner == "spring"].set_index("dataset")["gnn_ready_peak_mb"]
    order = sizes.sort_values("edges").index
    head = "| dataset | nodes | edges | F | " + " | ".join(f"{p} peak MB" for p in columns)
    head += (
        " | " + " | ".join(f"spring / {b}" for b in columns[1:]) + " | spring GNN-ready peak MB |"
    )
    lines = [head, "|" + "---|" * (4 + 2 * len(columns))]
    for dataset in order:
        row = peak.loc[dataset] if dataset in peak.index else pd.Series(dtype=float)
        cells = [_mb(row.get(name)) for name in columns]
        ratios = []
        for name in columns[1:]:
            spring, other = row.get("spring"), row.get(name)
            ok = spring is not None and other is not None and not pd.isna(spring * other)
            ratios.append(f"{spring / other:.3f}" if ok else "—")
        size = sizes.loc[dataset]
        lines.append(
            f"| {dataset} | {size.nodes:,} | {size.edges:,} | {size.feature_dim} | "
            + " | ".join([*cells, *ratios, _mb(ready.get(dataset))])
            + " |"
        )
    return lines


def detail_table(frame: pd.DataFrame) -> list[str]:
    lines = [
        "| dataset | partitioner | status | peak MB | with features peak MB | resident peak MB | "
        "time s | with features time s | RF | edge cut | error |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in frame.sort_values(["edges", "dataset", "partitioner"]).itertuples():
        rf = "—" if pd.isna(row.replication_factor) else f"{row.replication_factor:.3f}"
        cut = "—" if pd.isna(row.edge_cut) else f"{row.edge_cut:.3f}"
        lines.append(
            f"| {row.dataset} | {row.partitioner} | {row.status} | {_mb(row.peak_mb)} | "
            f"{_mb(row.with_features_peak_mb)} | {_mb(row.rss_mb)} | {_mb(row.time_s)} | "
            f"{_mb(row.with_features_time_s)} | {rf} | {cut} | {row.error} |"
        )
    return lines


def write_doc(tracking_uri: str) -> None:
    """The doc and its CSV from the two experiments' runs in the store."""
    frame = runs_frame(tracking_uri, "baseline_memory")
    capped = runs_frame(tracking_uri, "baseline_memory_cap")
    text = [
        "# Peak memory: SPRING against the in-memory METIS baselines",
        "",
        "Generated by `python scripts/baseline_memory.py` (p=4, partition stage only, seed 0).",
        "`peak MB` is memray's heap high-water mark of the partition step in a fresh process,",
        'on the structure, the work every partitioner does (docs/design.md, "Metrics"): for',
        "SPRING the streaming algorithm; for metis the in-memory CSR plus pymetis; for pyg_metis",
        "a `Data` of the edges plus `ClusterData`; for distdgl_metis a `DGLGraph` with the",
        "training mask it balances plus `partition_graph`, measured in DistDGL's own environment.",
        "`with features`: pyg_metis and distdgl_metis run again loading node features, labels",
        "and masks as their users do (runs from before that split logged only this figure).",
        "Only JIT compilation and imports are outside every measurement.",
        "Every partitioner's owners then go through the same GNN-ready step (partition-only runs",
        "write structure-only books); SPRING's step is shown in the last column, measured",
        "separately. `resident peak` counts the process's interpreter and libraries, never the",
        "launcher's memory.",
        "Target from the papers: spring <= 0.05 of DistDGL's peak on graphs of >= 1 M edges.",
        "",
        *memory_table(frame),
        "",
        "## Under a memory cap",
        "",
        "`experiment=baseline_memory_cap`: the generated graph with `partitioner.memory_limit_gb`",
        "(RLIMIT_DATA of the partition process: heap and anonymous memory, imports included).",
        "",
        *detail_table(capped),
        "",
        "## Every job",
        "",
        *detail_table(frame),
        "",
    ]
    write_table_doc(DOC, text, frame)
