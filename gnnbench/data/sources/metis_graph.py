"""METIS .graph text files (Walshaw archive, gpmetis input); structure only.

Header `n m [fmt [ncon]]` after optional `%` comment lines, then exactly n adjacency lines of
1-based neighbour ids (an empty line is an isolated vertex). fmt's digits say whether each line
starts with a vertex size (100) and ncon vertex weights (010), and whether every neighbour is
followed by an edge weight (001); weights are skipped. Like gpmetis, the adjacency entries must
add up to 2m.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gnnbench.data.builder import GraphStoreBuilder
from gnnbench.data.datasets import raw_path
from gnnbench.data.sources import SOURCES
from gnnbench.data.sources._text import ParsedBlock, iter_parsed_blocks, line_of_value
from gnnbench.errors import DataError


@dataclass(frozen=True)
class MetisHeader:
    """The header line: sizes and which per-line weights to skip."""

    num_nodes: int
    num_edges: int
    leading_tokens: int  # vertex size + vertex weights before the neighbours of each line
    edge_weights: bool

    @classmethod
    def parse(cls, path: Path, line: int, tokens: np.ndarray) -> MetisHeader:
        if not 2 <= len(tokens) <= 4 or tokens.min() < 0:
            raise DataError(
                f"{path}: line {line}: expected header 'n m [fmt [ncon]]', found {_show(tokens)}"
            )
        fmt = f"{int(tokens[2]):03d}" if len(tokens) > 2 else "000"
        if len(fmt) != 3 or set(fmt) - {"0", "1"}:
            raise DataError(
                f"{path}: line {line}: fmt must be 3 binary digits (e.g. 011), found {fmt}"
            )
        ncon = int(tokens[3]) if len(tokens) > 3 else 1
        if len(tokens) > 3 and fmt[1] == "0":
            raise DataError(f"{path}: line {line}: ncon given but fmt {fmt} has no vertex weights")
        leading = int(fmt[0]) + (ncon if fmt[1] == "1" else 0)
        return cls(int(tokens[0]), int(tokens[1]), leading, fmt[2] == "1")


@SOURCES.register("metis_graph")
def import_metis_graph(builder: GraphStoreBuilder, dataset: Mapping[str, Any]) -> None:
    """Stream the adjacency lines into the builder as (vertex, neighbour) pairs, 0-based."""
    path = raw_path(dataset, "path")
    reader = MetisReader(path)
    for edges in reader.edge_chunks():
        if builder.num_nodes is None:
            builder.set_num_nodes(reader.header.num_nodes)
        builder.add_edges(edges, origin=str(path))
    builder.add_meta(raw_files=[str(path)], metis_header_edges=reader.header.num_edges)


# The keys this source reads (gnnbench/data/spec.py rejects any other).
import_metis_graph.config_keys = ("path",)


class MetisReader:
    """Streams a METIS file; `header` is known once the first chunk has been produced."""

    def __init__(self, path: Path):
        self.path = path
        self._header: MetisHeader | None = None
        self.vertices_read = 0
        self.entries_read = 0

    @property
    def header(self) -> MetisHeader:
        if self._header is None:
            raise DataError(f"{self.path}: no header line 'n m [fmt [ncon]]' found")
        return self._header

    def edge_chunks(self) -> Iterator[np.ndarray]:
        """(k, 2) 0-based edges per block of lines; checks line count and 2m at the end."""
        for parsed in iter_parsed_blocks(self.path, np.int64, comment_chars=b"%"):
            parsed = self._consume_header(parsed)
            if parsed is not None:
                yield self._block_edges(parsed)
        self._check_totals()

    def _consume_header(self, parsed: ParsedBlock) -> ParsedBlock | None:
        """Read the header from the first block holding it; return the lines after it."""
        if self._header is not None:
            return parsed
        data_lines = np.flatnonzero(parsed.counts > 0)
        if len(data_lines) == 0:
            return None
        at = int(data_lines[0])
        start = int(parsed.line_starts()[at])
        tokens = parsed.values[start : start + int(parsed.counts[at])]
        self._header = MetisHeader.parse(self.path, parsed.first_line + at, tokens)
        return ParsedBlock(
            parsed.first_line + at + 1,
            parsed.values[start + len(tokens) :],
            parsed.counts[at + 1 :],
            parsed.is_comment[at + 1 :],
        )

    def _block_edges(self, parsed: ParsedBlock) -> np.ndarray:
        """Edges of the adjacency lines of one block: token positions say which are neighbours."""
        header = self.header
        vertex_lines = ~parsed.is_comment
        room = header.num_nodes - self.vertices_read
        vertex_lines &= np.cumsum(vertex_lines) <= room
        self._check_extra_lines(parsed, vertex_lines)
        counts = np.where(vertex_lines, parsed.counts, 0)
        self._check_line_lengths(parsed, counts, vertex_lines)
        vertex_of_line = self.vertices_read + np.cumsum(vertex_lines) - 1
        starts = np.cumsum(counts) - counts
        position = np.arange(counts.sum()) - np.repeat(starts, counts)
        stride = 2 if header.edge_weights else 1
        keep = (position >= header.leading_tokens) & (
            (position - header.leading_tokens) % stride == 0
        )
        neighbours = parsed.values[keep] - 1  # comment and trailing blank lines hold no tokens
        self._check_ids(parsed, neighbours, np.flatnonzero(keep))
        sources = np.repeat(vertex_of_line, counts)[keep]
        self.vertices_read += int(vertex_lines.sum())
        self.entries_read += len(neighbours)
        return np.stack([sources, neighbours], axis=1)

    def _check_extra_lines(self, parsed: ParsedBlock, vertex_lines: np.ndarray) -> None:
        """Non-empty lines beyond the n adjacency lines are an error (trailing blanks are fine)."""
        extra = ~vertex_lines & (parsed.counts > 0)
        if extra.any():
            line = parsed.first_line + int(np.argmax(extra))
            raise DataError(
                f"{self.path}: line {line}: more adjacency lines than the {self.header.num_nodes} "
                "vertices the header declares"
            )

    def _check_line_lengths(
        self, parsed: ParsedBlock, counts: np.ndarray, vertex_lines: np.ndarray
    ) -> None:
        header = self.header
        neighbours = counts - header.leading_tokens
        bad = vertex_lines & ((neighbours < 0) | (header.edge_weights & (neighbours % 2 == 1)))
        if bad.any():
            what = f"{header.leading_tokens} vertex size/weight value(s), then "
            what += "(neighbour, edge weight) pairs" if header.edge_weights else "neighbour ids"
            line = parsed.first_line + int(np.argmax(bad))
            raise DataError(f"{self.path}: line {line}: expected {what}")

    def _check_ids(
        self, parsed: ParsedBlock, neighbours: np.ndarray, value_index: np.ndarray
    ) -> None:
        bad = (neighbours < 0) | (neighbours >= self.header.num_nodes)
        if bad.any():
            first = int(np.argmax(bad))
            line = line_of_value(parsed, int(value_index[first]))
            raise DataError(
                f"{self.path}: line {line}: neighbour id {int(neighbours[first]) + 1} outside "
                f"[1, {self.header.num_nodes}]"
            )

    def _check_totals(self) -> None:
        header = self.header
        if self.vertices_read != header.num_nodes:
            raise DataError(
                f"{self.path}: expected {header.num_nodes} adjacency lines (header), found {self.vertices_read}"
            )
        if self.entries_read != 2 * header.num_edges:
            raise DataError(
                f"{self.path}: header declares {header.num_edges} edges (so {2 * header.num_edges} "
                f"adjacency entries), found {self.entries_read} entries"
            )


def _show(tokens: np.ndarray) -> str:
    return "'" + " ".join(str(int(value)) for value in tokens) + "'"
