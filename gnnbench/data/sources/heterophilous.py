"""Heterophilous benchmark graphs (Platonov et al.: roman-empire, actor, chameleon, tolokers, ...).

npz keys: node_features (N, F), node_labels (N,), edges (E, 2), train_masks / val_masks /
test_masks (S, N); `dataset.split` picks one of the S published splits (default 0).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from gnnbench.data.builder import GraphStoreBuilder
from gnnbench.data.datasets import raw_path
from gnnbench.data.sources import SOURCES
from gnnbench.data.sources._io import NpzArrays, add_edge_array, check_node_array
from gnnbench.errors import ConfigError, DataError

EXPECTED = "keys node_features, node_labels, edges, train_masks, val_masks, test_masks"


@SOURCES.register("heterophilous")
def import_heterophilous(builder: GraphStoreBuilder, dataset: Mapping[str, Any]) -> None:
    """Features, labels, edges and the chosen published split."""
    path = raw_path(dataset, "path")
    split_index = int(dataset.get("split", 0))
    with NpzArrays(path, EXPECTED) as npz:
        features = npz.get("node_features", ndim=2)
        num_nodes = features.shape[0]
        builder.set_num_nodes(num_nodes)
        edges = npz.get("edges", ndim=2)
        add_edge_array(builder, edges, str(path))
        builder.set_features(features)
        labels = npz.get("node_labels", ndim=1)
        check_node_array(labels, num_nodes, "'node_labels'", path)
        builder.set_labels(labels)
        builder.set_split(
            **{
                part: split_ids(npz, part, split_index, num_nodes)
                for part in ("train", "val", "test")
            }
        )
    builder.add_meta(raw_files=[str(path)], split_rule=f"published split {split_index}")


# The keys this source reads (gnnbench/data/spec.py rejects any other).
import_heterophilous.config_keys = ("path", "split")


def split_ids(npz: NpzArrays, part: str, split_index: int, num_nodes: int) -> np.ndarray:
    """Node ids of one part (train / val / test) of published split `split_index`."""
    masks = npz.get(f"{part}_masks")
    if masks.ndim == 1:
        masks = masks[None, :]
    if masks.ndim != 2 or masks.shape[1] != num_nodes:
        raise DataError(
            f"{npz.path}: '{part}_masks' must have shape (splits, {num_nodes}), found {masks.shape}"
        )
    if not 0 <= split_index < masks.shape[0]:
        raise ConfigError(
            f"dataset.split: expected a split index in [0, {masks.shape[0]}), got {split_index}"
        )
    return np.flatnonzero(masks[split_index])
