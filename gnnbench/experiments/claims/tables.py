"""What the claims' judges and tables share: seed means, mean ± std tables, spans and shares,
and the keys added later read at their neutral value."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import pandas as pd

from gnnbench.config_values import KEYS_ADDED_LATER, as_text


def has_columns(frame: pd.DataFrame, *columns: str) -> bool:
    """Whether there are runs and they hold every column (a judge's runs are there)."""
    return not frame.empty and all(column in frame for column in columns)


def seed_means(frame: pd.DataFrame, index: Sequence[str], columns: str, value: str) -> pd.DataFrame:
    """Mean of a metric over seeds, one row per index, one column per value of `columns`."""
    return frame.pivot_table(index=list(index), columns=columns, values=value, aggfunc="mean")


def added_key_values(frame: pd.DataFrame, column: str) -> pd.Series:
    """One of the KEYS_ADDED_LATER per run as text (as_text): its neutral value for runs from
    before the key, or that logged it as None (for the runs of one partitioner or mode that has
    it)."""
    values = frame.get(column, pd.Series(index=frame.index, dtype=object)).map(as_text)
    neutral = as_text(KEYS_ADDED_LATER[column])
    return values.replace({"": neutral, "None": neutral})


def mean_std_table(
    frame: pd.DataFrame, index: Sequence[str], columns: str, value: str, order=None
) -> list[str]:
    """Markdown: mean ± std over seeds (n runs) of a metric, one cell per index x column;
    `order` a sort key for the columns (numbers first, then text, by default)."""
    grouped = frame.groupby([*index, columns])[value].agg(["mean", "std", "size"])
    wide = grouped.unstack(columns)
    names = sorted(wide["mean"].columns, key=order or _order)
    short = short_name(columns)
    heads = [*map(short_name, index), *(f"{short} {n}" for n in names)]
    lines = ["| " + " | ".join(heads) + " |"]
    lines.append("|" + "---|" * (len(index) + len(names)))
    for key, row in wide.iterrows():
        key = key if isinstance(key, tuple) else (key,)
        cells = [mean_std(row["mean"][n], row["std"][n], row["size"][n]) for n in names]
        lines.append("| " + " | ".join(map(str, key)) + " | " + " | ".join(cells) + " |")
    return lines


def short_name(column: str) -> str:
    """partitioner.name -> partitioner, train.batching -> batching: table headers stay narrow."""
    head, _, tail = column.rpartition(".")
    return head.rpartition(".")[2] if tail == "name" else tail or column


def _order(value) -> tuple:
    return (0, value, "") if isinstance(value, numbers.Real) else (1, 0, str(value))


def mean_std(mean: float, std: float, size: float) -> str:
    """One cell: the mean, and ± std (n=...) where more than one run made it."""
    if pd.isna(mean):
        return "—"
    text = f"{mean:,.0f}" if abs(mean) >= 1000 else f"{mean:.4g}"
    if pd.isna(size) or size < 2:
        return text
    spread = f"{std:,.0f}" if abs(std) >= 1000 else f"{std:.2g}"
    return f"{text} ± {spread} (n={int(size)})"


def span(values: pd.Series, fmt: str) -> str:
    """`low to high` in `fmt`, or one value where they are the same."""
    low, high = values.min(), values.max()
    return format(low, fmt) if math.isclose(low, high) else f"{low:{fmt}} to {high:{fmt}}"


def share(condition: pd.Series) -> tuple[int, int]:
    """(cases where it holds, cases)."""
    return int(condition.sum()), int(condition.size)


def frame_markdown(table: pd.DataFrame, fmt: str) -> list[str]:
    """A DataFrame (its index as the first columns) as Markdown lines."""
    table = table.reset_index()
    heads = [short_name(str(column)) for column in table.columns]
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * table.shape[1]]
    for row in table.itertuples(index=False):
        cells = ["—" if pd.isna(v) else format(v, fmt) if isinstance(v, float) else str(v)
                 for v in row]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return lines
