"""SNAP / CSV edge lists (plain or gzip), streamed block by block; structure only.

One edge per line, `#` and `%` comment lines skipped, whitespace- or `dataset.delimiter`-separated;
further integer columns (weights, timestamps) are ignored. With `dataset.num_nodes` the ids are kept
and must lie in [0, num_nodes); without it the builder relabels them 0..N-1.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from gnnbench.data.builder import GraphStoreBuilder
from gnnbench.data.datasets import SOURCES, raw_path
from gnnbench.data.sources._text import iter_table
from gnnbench.errors import ConfigError, DataError

ROW = "at least 2 integer node ids per line (and the same column count on every line)"


@SOURCES.register("edgelist")
def import_edgelist(builder: GraphStoreBuilder, dataset: Mapping[str, Any]) -> None:
    """Stream the edge list into the builder; ids are range-checked by the builder per chunk."""
    path = raw_path(dataset, "path")
    num_nodes = dataset.get("num_nodes")
    if num_nodes is not None:
        if int(num_nodes) <= 0:
            raise ConfigError(
                f"dataset.num_nodes: expected a positive node count, got {num_nodes!r}"
            )
        builder.set_num_nodes(int(num_nodes))
    delimiter = edge_delimiter(dataset)
    found = 0
    for rows in iter_table(path, np.int64, ROW, delimiter=delimiter, min_columns=2):
        builder.add_edges(rows[:, :2], origin=str(path))
        found += len(rows)
    if not found:
        raise DataError(f"{path}: no edges found (expected lines of 2 integer node ids)")
    builder.add_meta(raw_files=[str(path)], ids_relabelled=num_nodes is None)


def edge_delimiter(dataset: Mapping[str, Any]) -> str | None:
    """`dataset.delimiter`: one character, or unset for any whitespace."""
    delimiter = dataset.get("delimiter")
    if delimiter is None or delimiter == "":
        return None
    if len(str(delimiter)) != 1 or not str(delimiter).isascii():
        raise ConfigError(f"dataset.delimiter: expected one ASCII character, got {delimiter!r}")
    return str(delimiter)
