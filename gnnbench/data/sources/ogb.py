"""OGB node-property datasets (ogbn-*) from the raw directory of OGB's zip files, without `ogb`.

Layout: <path>/<ogb_name with '-' → '_'>/raw/ with edge.csv.gz, num-node-list.csv.gz,
node-feat.csv.gz (optional), node-label.csv.gz — or data.npz + node-label.npz for the binary
releases (ogbn-papers100M) — and split/<split_name>/{train,valid,test}.csv.gz. CSVs are streamed in
blocks; data.npz's edge_index and node_feat are read in blocks straight from the zip. A label
with several columns (ogbn-proteins) is multi-label uint8; NaN labels (papers100M's unlabelled
nodes) become -1 and are dropped from the split.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from gnnbench.data.builder import GraphStoreBuilder
from gnnbench.data.datasets import raw_path
from gnnbench.data.npz_stream import NpzMember, edge_index_blocks, open_npz, row_blocks
from gnnbench.data.sources import SOURCES
from gnnbench.data.sources._io import (
    EDGE_CHUNK,
    NpzArrays,
    check_node_array,
    row_chunk,
)
from gnnbench.data.sources._text import iter_table, read_int_column
from gnnbench.errors import ConfigError, DataError

SPLIT_PARTS = {"train": "train", "val": "valid", "test": "test"}


@SOURCES.register("ogb")
def import_ogb(builder: GraphStoreBuilder, dataset: Mapping[str, Any]) -> None:
    """Edges, node features, labels and the official split of one homogeneous ogbn dataset."""
    root = dataset_dir(raw_path(dataset, "path"), dataset.get("ogb_name"))
    raw = root / "raw"
    if (raw / "data.npz").is_file():
        num_nodes = import_binary_graph(builder, raw)
        labels = read_binary_labels(raw / "node-label.npz", num_nodes)
    elif (raw / "edge.csv.gz").is_file() or (raw / "edge.csv").is_file():
        num_nodes = import_csv_graph(builder, raw)
        labels = read_labels(csv_file(raw, "node-label"), num_nodes)
    else:
        raise DataError(
            f"{raw}: expected edge.csv.gz or data.npz (homogeneous ogbn layout; "
            "heterogeneous datasets such as ogbn-mag are not supported)"
        )
    builder.set_labels(labels, multilabel=labels.ndim == 2)
    split_dir = find_split_dir(root, dataset.get("split_name"))
    builder.set_split(**read_split(split_dir, labels, num_nodes))
    builder.add_meta(
        raw_files=[str(root)],
        split_rule=f"ogb split '{split_dir.name}'",
        ogb_name=str(dataset.get("ogb_name") or root.name.replace("_", "-")),
    )


# The keys this source reads (gnnbench/data/spec.py rejects any other).
import_ogb.config_keys = ("path", "ogb_name", "split_name")


def dataset_dir(root: Path, ogb_name: Any) -> Path:
    """`<root>/<ogbn_name>`; a root that already holds raw/ is taken as the dataset directory."""
    if (root / "raw").is_dir():
        return root
    if not ogb_name:
        raise ConfigError("dataset.ogb_name: expected an OGB name such as ogbn-arxiv")
    directory = root / str(ogb_name).replace("-", "_")
    if not (directory / "raw").is_dir():
        raise DataError(
            f"{directory / 'raw'}: not found (expected OGB's raw layout for {ogb_name})"
        )
    return directory


def csv_file(raw: Path, stem: str) -> Path:
    """`<stem>.csv.gz`, or an uncompressed `<stem>.csv`."""
    for name in (f"{stem}.csv.gz", f"{stem}.csv"):
        if (raw / name).is_file():
            return raw / name
    raise DataError(f"{raw / (stem + '.csv.gz')}: file not found")


def import_csv_graph(builder: GraphStoreBuilder, raw: Path) -> int:
    """Node count, edges (streamed) and node features (streamed into the store) of a CSV release."""
    num_nodes = read_single_count(csv_file(raw, "num-node-list"))
    builder.set_num_nodes(num_nodes)
    edge_path = csv_file(raw, "edge")
    for rows in iter_table(
        edge_path, np.int64, "2 comma-separated node ids", delimiter=",", min_columns=2
    ):
        if rows.shape[1] != 2:
            raise DataError(
                f"{edge_path}: expected 2 columns (source, target), found {rows.shape[1]}"
            )
        builder.add_edges(rows, origin=str(edge_path))
    feature_path = raw / "node-feat.csv.gz"
    if feature_path.is_file():
        write_csv_features(builder, feature_path, num_nodes)
    return num_nodes


def read_single_count(path: Path) -> int:
    """num-node-list: one count per graph; a node-property dataset holds exactly one graph."""
    counts = read_int_column(path, "one node count per line")
    if len(counts) != 1 or counts[0] < 0:
        raise DataError(
            f"{path}: expected one non-negative node count (a single graph), found {len(counts)} values"
        )
    return int(counts[0])


def write_csv_features(builder: GraphStoreBuilder, path: Path, num_nodes: int) -> None:
    """Stream node-feat.csv.gz into the store's feature matrix without holding it all in memory."""
    out = None
    row = 0
    for rows in iter_table(path, np.float32, "comma-separated feature values", delimiter=","):
        if out is None:
            out = builder.open_features(num_nodes, rows.shape[1])
        if row + len(rows) > num_nodes:
            raise DataError(f"{path}: more than {num_nodes} feature rows (one per node expected)")
        out[row : row + len(rows)] = rows
        row += len(rows)
    if row != num_nodes:
        raise DataError(f"{path}: {row} feature rows, expected {num_nodes} (one per node)")
    out.flush()


def read_labels(path: Path, num_nodes: int) -> np.ndarray:
    """Labels as int64 (one column, NaN → -1) or uint8 multi-label (several columns)."""
    labels = np.concatenate(
        list(iter_table(path, np.float64, "comma-separated label values", delimiter=","))
    )
    check_node_array(labels, num_nodes, "labels", path)
    return labels_from_float(labels, path)


def labels_from_float(labels: np.ndarray, path: Path) -> np.ndarray:
    labels = labels.reshape(len(labels), -1)
    if labels.shape[1] > 1:
        if np.isnan(labels).any() or not np.isin(labels, (0, 1)).all():
            raise DataError(f"{path}: multi-label columns must hold 0 or 1")
        return labels.astype(np.uint8)
    labels = labels[:, 0]
    missing = np.isnan(labels)
    if (labels[~missing] < 0).any() or (labels[~missing] % 1).any():
        raise DataError(
            f"{path}: class labels must be non-negative integers (or NaN for unlabelled)"
        )
    return np.where(missing, -1, labels).astype(np.int64)


def import_binary_graph(builder: GraphStoreBuilder, raw: Path) -> int:
    """Binary release (data.npz: edge_index (2, E), num_nodes_list, optional node_feat).

    Members are read in blocks straight from the zip (gnnbench/data/npz_stream.py): papers100M's
    edge_index alone is 26 GB.
    """
    path = raw / "data.npz"
    with open_npz(path) as archive:
        node_counts = NpzMember(archive, path, "num_nodes_list").whole()
        if node_counts.ndim != 1 or len(node_counts) != 1:
            raise DataError(f"{path}: expected a single graph, found {node_counts.size}")
        num_nodes = int(node_counts[0])
        builder.set_num_nodes(num_nodes, origin=f"{path}: num_nodes_list")
        for edges in edge_index_blocks(NpzMember(archive, path, "edge_index"), EDGE_CHUNK):
            builder.add_edges(edges, origin=str(path))
        if "node_feat.npy" in archive.namelist():
            write_member_features(builder, NpzMember(archive, path, "node_feat"), num_nodes)
    return num_nodes


def write_member_features(builder: GraphStoreBuilder, member: NpzMember, num_nodes: int) -> None:
    """Copy node_feat into the store's float32 feat.npy a row block at a time."""
    if len(member.shape) != 2:
        raise DataError(f"{member.path}: 'node_feat' must be 2-D, found shape {member.shape}")
    if member.shape[0] != num_nodes:
        raise DataError(
            f"{member.path}: 'node_feat' has {member.shape[0]} rows, expected {num_nodes} "
            "(one per node)"
        )
    out = builder.open_features(num_nodes, member.shape[1])
    row = 0
    for rows in row_blocks(member, row_chunk(member.shape[1])):
        out[row : row + len(rows)] = rows
        row += len(rows)
    out.flush()
    del out


def read_binary_labels(path: Path, num_nodes: int) -> np.ndarray:
    with NpzArrays(path, "OGB key node_label") as npz:
        labels = npz.get("node_label").astype(np.float64)
    check_node_array(labels, num_nodes, "'node_label'", path)
    return labels_from_float(labels, path)


def find_split_dir(root: Path, split_name: Any) -> Path:
    """split/<split_name>, or the only folder under split/ when no name is configured."""
    split_root = root / "split"
    if split_name:
        directory = split_root / str(split_name)
        if not directory.is_dir():
            raise DataError(f"{directory}: not found (dataset.split_name)")
        return directory
    found = sorted(p for p in split_root.glob("*") if p.is_dir()) if split_root.is_dir() else []
    if len(found) != 1:
        names = ", ".join(p.name for p in found) or "none"
        raise DataError(
            f"{split_root}: expected one split folder, found {names} (set dataset.split_name)"
        )
    return found[0]


def read_split(directory: Path, labels: np.ndarray, num_nodes: int) -> dict[str, np.ndarray]:
    """train / val / test node ids; nodes without a label (-1) are dropped."""
    split = {}
    for part, stem in SPLIT_PARTS.items():
        path = csv_file(directory, stem)
        ids = read_int_column(path, "one node id per line")
        if len(ids) and (ids.min() < 0 or ids.max() >= num_nodes):
            raise DataError(f"{path}: node ids must lie in [0, {num_nodes})")
        if labels.ndim == 1:
            ids = ids[labels[ids] >= 0]
        split[part] = ids
    return split
