"""SNAP / CSV edge lists (plain or gzip), streamed block by block, with optional node files.

One edge per line, `#` and `%` comment lines skipped, whitespace- or `dataset.delimiter`-separated
(`.csv` → comma and `.tsv` → tab when unset); a first line of column names (`id_1,id_2`) is skipped;
further numeric columns (weights, timestamps) are ignored. With `dataset.num_nodes` the ids are kept
and must lie in [0, num_nodes); without it and without node files the builder relabels them 0..N-1.

`dataset.features_path` / `dataset.labels_path` (see _nodefiles.py) name nodes by the edge list's
own ids, so with either of them the ids are kept as they are: the node count is max id + 1 over the
edges and both files (or `dataset.num_nodes`). Keeping ids rather than relabelling the file rows
keeps a node's features, label and edges under one id that the user can look up in the raw files;
ids missing from every file become isolated nodes with zero features (a label file must still
cover every node).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from gnnbench.data.builder import GraphStoreBuilder
from gnnbench.data.datasets import raw_path
from gnnbench.data.sources import SOURCES
from gnnbench.data.sources._nodefiles import (
    NodeFeatures,
    NodeLabels,
    read_node_features,
    read_node_labels,
)
from gnnbench.data.sources._text import iter_table, resolve_delimiter
from gnnbench.errors import ConfigError, DataError

ROW = "at least 2 integer node ids per line (and the same column count on every line)"


@SOURCES.register("edgelist")
def import_edgelist(builder: GraphStoreBuilder, dataset: Mapping[str, Any]) -> None:
    """Stream the edge list into the builder, then the node files if any (ids kept for them)."""
    path = raw_path(dataset, "path")
    num_nodes = configured_num_nodes(dataset)
    if num_nodes is not None:
        builder.set_num_nodes(num_nodes)
    max_id = stream_edges(builder, path, edge_delimiter(dataset, path))
    raw_files = [str(path)]
    if dataset.get("features_path") or dataset.get("labels_path"):
        raw_files += import_node_files(builder, dataset, num_nodes, max_id)
        num_nodes = builder.num_nodes
    builder.add_meta(raw_files=raw_files, ids_relabelled=num_nodes is None)


# The keys this source reads (gnnbench/data/spec.py rejects any other).
import_edgelist.config_keys = (
    "path",
    "delimiter",
    "num_nodes",
    "features_path",
    "labels_path",
    "labels_column",
)


def configured_num_nodes(dataset: Mapping[str, Any]) -> int | None:
    num_nodes = dataset.get("num_nodes")
    if num_nodes is None:
        return None
    if int(num_nodes) <= 0:
        raise ConfigError(f"dataset.num_nodes: expected a positive node count, got {num_nodes!r}")
    return int(num_nodes)


def stream_edges(builder: GraphStoreBuilder, path: Path, delimiter: str | None) -> int:
    """Hand every block of edges to the builder; returns the largest node id seen."""
    found = 0
    max_id = -1
    for rows in iter_table(path, np.int64, ROW, delimiter=delimiter, min_columns=2, header=True):
        edges = rows[:, :2]
        builder.add_edges(edges, origin=str(path))
        max_id = max(max_id, int(edges.max(initial=-1)))
        found += len(rows)
    if not found:
        raise DataError(f"{path}: no edges found (expected lines of 2 integer node ids)")
    return max_id


def import_node_files(
    builder: GraphStoreBuilder, dataset: Mapping[str, Any], num_nodes: int | None, max_id: int
) -> list[str]:
    """Features and labels keyed by the edge list's ids; fixes the node count (ids kept)."""
    delimiter = dataset.get("delimiter")
    node_files: list[NodeFeatures | NodeLabels] = []
    if dataset.get("features_path"):
        node_files.append(read_node_features(raw_path(dataset, "features_path"), delimiter))
    if dataset.get("labels_path"):
        labels_path = raw_path(dataset, "labels_path")
        node_files.append(read_node_labels(labels_path, delimiter, dataset.get("labels_column")))
    for node_file in node_files:
        if num_nodes is not None and node_file.max_id() >= num_nodes:
            raise DataError(
                f"{node_file.path}: node id {node_file.max_id()} out of range"
                f" (dataset.num_nodes={num_nodes})"
            )
        max_id = max(max_id, node_file.max_id())
    num_nodes = num_nodes if num_nodes is not None else max_id + 1
    builder.set_num_nodes(num_nodes)
    for node_file in node_files:
        node_file.write(builder, num_nodes)
    return [str(node_file.path) for node_file in node_files]


def edge_delimiter(dataset: Mapping[str, Any], path: Path) -> str | None:
    """`dataset.delimiter`: a name (comma, tab, space, semicolon) or one character; unset → by
    suffix (.csv, .tsv), else any whitespace."""
    return resolve_delimiter(dataset.get("delimiter"), path)
