"""The partition documents' committed runs, as the partition claims read them: one row per
(graph, partitioner, p) measurement, from the small real graphs to the scale runs.

- docs/partition_quality_kway.csv: every partitioner on the small real graphs, p = 4, 8, 16
  (`python scripts/partition_quality_kway.py`);
- docs/baseline_memory.csv: SPRING and the in-memory METIS baselines, p = 4, on the small graphs
  and on synthetic_large (10.4 M edges) (`python scripts/baseline_memory.py`);
- docs/scale.csv: the streaming partitioners on synthetic power-law graphs of 20 M to 1 B edges,
  p = 8 (16 at 1 B) (`python scripts/scale.py`);
- docs/rgg_scale.csv: the random geometric graph at 10 M to 1 B edges, p = 16
  (`python scripts/rgg_scale.py`).

Columns: graph, edges (undirected, as the store holds them; from baseline_memory.csv for the
small graphs, whose kway rows do not log it), partitioner, p, partition_time_s,
partition_peak_mb (memray's heap peak of the partition step), edge_cut, load_1m, doc.
"""

from __future__ import annotations

import pandas as pd
from omegaconf import OmegaConf

from gnnbench.experiments.claims.tables import frame_markdown
from gnnbench.paths import CONF_DIR, REPO_ROOT

DOCS = REPO_ROOT / "docs"
# "at scale": a partition claim's largest graph has 10 M edges or more; the RGG generator's
# nominal 10 M-edge graph holds 9.97 M
SCALE_EDGES = 9_500_000
COLUMNS = ["graph", "edges", "partitioner", "p", "partition_time_s", "partition_peak_mb",
           "partition_with_features_peak_mb", "replication_factor", "edge_cut", "load_1m", "doc"]  # fmt: skip
# partition_runs' columns as the claims' own runs name them (claim_frame)
CLAIM_COLUMNS = {"graph": "dataset.name", "partitioner": "partitioner.name",
                 "edges": "graph.num_edges"}  # fmt: skip
COMMANDS = (
    "python scripts/partition_quality_kway.py",
    "python scripts/baseline_memory.py",
    "python scripts/scale.py",
    "python scripts/rgg_scale.py",
)


def _read(name: str) -> pd.DataFrame:
    path = DOCS / name
    return pd.read_csv(path).assign(doc=name) if path.is_file() else pd.DataFrame()


def _kway(edges: dict[str, float]) -> pd.DataFrame:
    frame = _read("partition_quality_kway.csv")
    if frame.empty:
        return frame
    frame = frame.rename(columns={"dataset": "graph", "config": "partitioner"})
    return frame.assign(edges=frame["graph"].map(edges))


def _baseline_memory() -> pd.DataFrame:
    frame = _read("baseline_memory.csv")
    if frame.empty:
        return frame
    frame = frame[frame["status"] == "FINISHED"]
    renamed = {"dataset": "graph", "peak_mb": "partition_peak_mb", "time_s": "partition_time_s",
               "with_features_peak_mb": "partition_with_features_peak_mb"}  # fmt: skip
    return frame.rename(columns=renamed).assign(p=4, load_1m=float("nan"))


def _scale() -> pd.DataFrame:
    frame = _read("scale.csv")
    if frame.empty:
        return frame
    frame = frame[frame["error"].isna() & (frame["feature_dim"] == 0)]
    graph = frame["target_edges"].map(lambda e: f"synthetic {e / 1e6:g} M edges")
    return frame.assign(graph=graph)


def _rgg() -> pd.DataFrame:
    frame = _read("rgg_scale.csv")
    if frame.empty:
        return frame
    frame = frame[frame["status"] == "FINISHED"]
    graph = frame["edges"].map(lambda e: f"rgg {round(e / 1e6):g} M edges")
    return frame.rename(columns={"config": "partitioner", "partition_load_1m": "load_1m"}).assign(
        graph=graph
    )


def partition_runs() -> pd.DataFrame:
    """Every committed partition measurement, small graphs first; empty without any file."""
    memory = _baseline_memory()
    edges = dict(zip(memory["graph"], memory["edges"], strict=False)) if not memory.empty else {}
    frames = [_kway(edges), memory, _scale(), _rgg()]
    frames = [frame.reindex(columns=COLUMNS) for frame in frames if not frame.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)


def at_scale(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows (measurements, or a claim's per-graph table) of graphs with >= SCALE_EDGES."""
    return frame[frame["edges"] >= SCALE_EDGES]


def scale_claim_rows() -> pd.DataFrame:
    """The measurements at scale as rows of a claim's own runs (dataset.name, partitioner.name,
    p, graph.num_edges, the metrics): what Claim.scale_rows appends. The documents ran each
    partitioner with its config's defaults, so those become its partitioner.* params."""
    rows = at_scale(partition_runs()).rename(columns=CLAIM_COLUMNS)
    for name in rows["partitioner.name"].unique():
        path = CONF_DIR / "partitioner" / f"{name}.yaml"
        if not path.is_file():  # a label of several settings ("kaminpar terapart")
            continue
        defaults = OmegaConf.to_container(OmegaConf.load(path))
        chosen = rows["partitioner.name"] == name
        for key, value in defaults.items():
            if key not in ("name", "defaults") and not isinstance(value, (dict, list)):
                rows.loc[chosen, f"partitioner.{key}"] = value
    return rows


def size_note(frame: pd.DataFrame, graphs: pd.Index | None = None) -> str:
    """'; largest graph judged: synthetic 100 M edges (101.6 M edges)' over a claim frame's
    rows (only `graphs`, the ones a comparison used, when given); '' without edge counts."""
    if "graph.num_edges" not in frame:
        return ""
    rows = frame if graphs is None else frame[frame["dataset.name"].isin(graphs)]
    edges = pd.to_numeric(rows["graph.num_edges"], errors="coerce")
    if edges.dropna().empty:
        return ""
    name = rows.loc[edges.idxmax(), "dataset.name"]
    return f"; largest graph judged: {name} ({edges.max() / 1e6:.1f} M edges)"


def by_size_markdown(table: pd.DataFrame, names: dict[str, str], fmt: str) -> list[str]:
    """A claim's per-graph table as Markdown: smallest graph first, edges in millions, columns
    renamed by `names`."""
    table = table.sort_index().sort_values("edges", kind="stable")
    table = table.assign(edges=table["edges"].map(lambda e: f"{e / 1e6:.3g} M"))
    return frame_markdown(table.rename(columns=names), fmt)
