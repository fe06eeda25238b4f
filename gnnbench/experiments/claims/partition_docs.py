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

from gnnbench.paths import REPO_ROOT

DOCS = REPO_ROOT / "docs"
SCALE_EDGES = 10_000_000  # "at scale": the bar for a partition claim's largest graph
COLUMNS = ["graph", "edges", "partitioner", "p", "partition_time_s", "partition_peak_mb",
           "edge_cut", "load_1m", "doc"]  # fmt: skip
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
    return frame.rename(columns={"dataset": "graph", "peak_mb": "partition_peak_mb",
                                 "time_s": "partition_time_s"}).assign(p=4, load_1m=float("nan"))  # fmt: skip


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


def largest(frame: pd.DataFrame) -> str:
    """The largest graph of the frame, as a verdict names it: 'synthetic 100 M edges (101.6 M)'."""
    row = frame.loc[frame["edges"].idxmax()]
    return f"{row['graph']} ({row['edges'] / 1e6:.1f} M edges)"


def at_scale(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["edges"] >= SCALE_EDGES]
