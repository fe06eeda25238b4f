"""Partition quality and memory at scale on the random geometric graph (issue 30):
docs/rgg_scale.md (+ .csv) from the MLflow runs of experiment=rgg_scale
(scripts/rgg_scale.py sweeps it; its docstring says what each figure is)."""

from __future__ import annotations

import math
from functools import cache

import pandas as pd

from gnnbench.config_values import as_text
from gnnbench.experiments.experiment_docs import write_table_doc
from gnnbench.paths import CONF_DIR, REPO_ROOT
from gnnbench.track.report.query import experiment_runs, newest_per_job
from gnnbench.track.tags import JOB, ROLE_TAG

DOC = REPO_ROOT / "docs" / "rgg_scale.md"
EXPERIMENT = "rgg_scale"
IN_MEMORY = ("metis", "kaminpar", "kahip")  # the whole graph in memory, under the cap
TARGET = "quotient_multilevel"  # the streaming configuration the targets are for
# issue 30: the target's peak / METIS's at about 10 M edges, its cut / the best in-memory cut
PEAK_TARGET, CUT_TARGET = 0.05, 1.10
MODE_KEYS = {"kaminpar": "context", "kahip": "mode"}  # the key that names a baseline's mode


@cache
def _presets() -> dict[str, tuple[str, dict]]:
    """{preset: (the partitioner it extends, the keys it sets)} of gnnbench/conf/partitioner."""
    import yaml

    found = {}
    for path in sorted((CONF_DIR / "partitioner").glob("*.yaml")):
        config = yaml.safe_load(path.read_text()) or {}
        extends = [entry for entry in config.pop("defaults", []) if entry != "_self_"]
        if len(extends) == 1:
            found[path.stem] = (extends[0], config)
    return found


# The metrics of a run that the doc shows (a run that did not finish has none of them).
FIGURES = (
    "import_time_s",
    "import_peak_mb",
    "partition_time_s",
    "partition_peak_mb",
    "partition_rss_mb",
    "edge_cut",
    "replication_factor",
    "vertex_balance",
    "partition_load_1m",
)


def label(params: dict) -> str:
    """A run's configuration: the preset whose keys it carries, the baseline with its mode
    (`kaminpar terapart`), else the partitioner's name."""
    name = params.get("partitioner.name", "?")
    for preset, (base, keys) in _presets().items():
        if base == name and all(
            as_text(params.get(f"partitioner.{key}")) == as_text(value)
            for key, value in keys.items()
        ):
            return preset
    if name in MODE_KEYS:
        return f"{name} {params.get(f'partitioner.{MODE_KEYS[name]}')}"
    return name


def runs_frame(tracking_uri: str) -> pd.DataFrame:
    """The newest run of each job: size, configuration, status, the partition stage's figures."""
    rows = []
    for run in newest_per_job(experiment_runs(tracking_uri, EXPERIMENT)):
        if run.data.tags.get(ROLE_TAG) != JOB:
            continue
        params, metrics = run.data.params, run.data.metrics
        rows.append({
            "nodes": int(params.get("dataset.num_nodes", 0)),
            "edges": int(params.get("graph.num_edges", 0)) or None,
            "config": label(params),
            "p": int(params.get("p", 0)),
            "status": run.info.status,
            "cap_gb": params.get("partitioner.memory_limit_gb"),
            **{key: metrics.get(key) for key in FIGURES},
            "error": run.data.tags.get("error", ""),
        })  # fmt: skip
    return pd.DataFrame(rows)


def _number(value, digits: int = 1) -> str:
    return "—" if value is None or pd.isna(value) else f"{value:,.{digits}f}"


def size_table(frame: pd.DataFrame) -> list[str]:
    """One row per configuration at one size, sorted by cut; a failed run shows its error."""
    lines = [
        "| config | status | partition peak MB | resident peak MB | time s | load | edge cut | RF "
        "| vertex balance | cut / best in-memory | peak / METIS | error |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    figures = [column for column in FIGURES if column in frame]
    # a killed run logs no figures: MLflow gives None, which pandas keeps as an object column
    frame = frame.assign(**{column: pd.to_numeric(frame[column]) for column in figures})
    done = frame[frame.status == "FINISHED"]
    best = done[done.config.str.split().str[0].isin(IN_MEMORY)]["edge_cut"].min()
    metis = done[done.config == "metis"]["partition_peak_mb"]
    metis_peak = metis.iloc[0] if len(metis) else float("nan")
    for row in frame.sort_values(["status", "edge_cut"]).itertuples():
        lines.append(
            f"| {row.config} | {row.status} | {_number(row.partition_peak_mb)} "
            f"| {_number(row.partition_rss_mb)} | {_number(row.partition_time_s)} "
            f"| {_number(getattr(row, 'partition_load_1m', None))} "  # none in older CSVs
            f"| {_number(row.edge_cut, 4)} | {_number(row.replication_factor, 3)} "
            f"| {_number(row.vertex_balance, 3)} | {_number(row.edge_cut / best, 3)} "
            f"| {_number(row.partition_peak_mb / metis_peak, 4)} | {row.error} |"
        )
    return lines


def swept() -> list[str]:
    """The partitioners experiment=rgg_scale sweeps (its hydra.sweeper.params)."""
    import yaml

    config = yaml.safe_load((CONF_DIR / "experiment" / f"{EXPERIMENT}.yaml").read_text())
    return str(config["hydra"]["sweeper"]["params"]["partitioner"]).split(",")


def missing_line(frame: pd.DataFrame) -> str | None:
    """The swept partitioners without a run at this size (left out by --partitioners)."""
    names = {label.split()[0] for label in frame["config"]} | set(frame["config"])
    absent = [name for name in swept() if name not in names]
    return f"Not run at this size: {', '.join(absent)}." if absent else None


def target_line(frame: pd.DataFrame) -> str:
    """The TARGET configuration against the issue's two targets at this size."""
    done = frame[frame.status == "FINISHED"].set_index("config")
    if TARGET not in done.index:
        return f"`{TARGET}` did not finish at this size."
    row = done.loc[TARGET]
    fitting = done[done.index.str.split().str[0].isin(IN_MEMORY)]
    parts = []
    if len(fitting):
        best = fitting["edge_cut"].idxmin()
        ratio = row.edge_cut / fitting.loc[best, "edge_cut"]
        verdict = "met" if ratio <= CUT_TARGET else "missed"
        parts.append(f"cut {ratio:.3f}x {best}'s, the best in-memory cut that fit "
                     f"(target <= {CUT_TARGET}: {verdict})")  # fmt: skip
    if "metis" in done.index:
        ratio = row.partition_peak_mb / done.loc["metis", "partition_peak_mb"]
        if abs(math.log10(frame["edges"].max() / 1e7)) < 0.5:  # the issue sets it at ~10 M edges
            verdict = "met" if ratio <= PEAK_TARGET else "missed"
            parts.append(f"peak {ratio:.4f}x METIS's (target <= {PEAK_TARGET}: {verdict})")
        else:
            parts.append(f"peak {ratio:.4f}x METIS's")
    return f"`{TARGET}`: " + "; ".join(parts or ["no in-memory run finished to compare with"]) + "."


def merged_runs(committed: pd.DataFrame, fresh: pd.DataFrame) -> pd.DataFrame:
    """The committed rows with the store's on top: a store run replaces the committed row of
    the same size, configuration and p, so a doc regenerates from the repository's CSV alone
    and a rerun of some configurations keeps the others' rows."""
    frames = [frame for frame in (committed, fresh) if len(frame)]
    if not frames:
        return fresh
    both = pd.concat(frames, ignore_index=True)
    return both.drop_duplicates(["nodes", "config", "p"], keep="last").reset_index(drop=True)


def write_doc(tracking_uri: str | None, not_run: dict[int, str] | None = None) -> None:
    """The doc and its CSV from the committed CSV and experiment=rgg_scale's runs in the store
    (none: the CSV alone)."""
    csv = DOC.with_suffix(".csv")
    committed = pd.read_csv(csv, keep_default_na=False, na_values=[""]) if csv.is_file() else None
    fresh = runs_frame(tracking_uri) if tracking_uri else pd.DataFrame()
    frame = merged_runs(committed if committed is not None else pd.DataFrame(), fresh)
    frame["error"] = frame["error"].fillna("") if "error" in frame else ""
    text = [
        "# Partitioning at scale on a graph with locality (`dataset=rgg`)",
        "",
        "Generated by `python scripts/rgg_scale.py` from the MLflow runs of",
        "`experiment=rgg_scale` (gnnbench/conf/experiment/rgg_scale.yaml): the random geometric",
        "graph, mean degree 20, structure only, p = 16, seed 0, the partition stage only, every",
        "algorithm in a fresh process under `partitioner.memory_limit_gb=16` (RLIMIT_DATA: an",
        "algorithm that does not fit ends FAILED with its one-line error). `partition peak MB`",
        "is memray's heap high-water mark of the measured step, which covers everything the",
        'algorithm reads beyond the GraphStore (its CSR included; docs/design.md, "Metrics");',
        "`resident peak` is the process's own peak RSS (interpreter and libraries included).",
        "KaMinPar and KaHIP run single-threaded. `load`: the larger 1-minute load average at the",
        "measured step's start and end (`partition_load_1m`; 2 cores: near 1 is the run alone,",
        "near 2 a shared machine; — for runs from before it was logged). `cut / best in-memory`",
        "divides by the lowest cut of METIS, KaMinPar and KaHIP that finished at that size.",
        "",
    ]
    for nodes, group in frame.groupby("nodes", sort=True) if len(frame) else []:
        edges = group["edges"].max()
        text += [f"## {nodes:,} nodes, {edges:,.0f} edges", "", *size_table(group), "",
                 target_line(group), ""]  # fmt: skip
        text += [line, ""] if (line := missing_line(group)) else []
    for nodes, reason in sorted((not_run or {}).items()):
        if frame.empty or nodes not in set(frame["nodes"]):
            text += [f"## {nodes:,} nodes: not run", "", reason, ""]
    write_table_doc(DOC, text, frame)
