"""The claims' figures: bars over the paper's band, lines per graph, each saved whole as PNG."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd

from gnnbench.config_values import as_text
from gnnbench.process.atomic import atomic_write_bytes


def _figure(ylabel: str, title: str):
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 4), layout="constrained")
    ax = figure.add_subplot()
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    return figure, ax


def bar_figure(
    wide: pd.DataFrame,
    ylabel: str,
    title: str,
    band: tuple[float, float],
    spread: tuple[pd.DataFrame, pd.DataFrame] | None = None,
):
    """Grouped bars (index on x, one bar per column) over the paper's band, shaded; `spread`
    (low, high frames shaped like `wide`) draws whiskers."""
    figure, ax = _figure(ylabel, title)
    width = 0.8 / max(1, len(wide.columns))
    for i, column in enumerate(wide.columns):
        xs = [x + (i - (len(wide.columns) - 1) / 2) * width for x in range(len(wide))]
        heights = wide[column].to_numpy()
        whiskers = None
        if spread is not None:
            low, high = spread[0][column].to_numpy(), spread[1][column].to_numpy()
            whiskers = [heights - low, high - heights]
        ax.bar(xs, heights, width, yerr=whiskers, capsize=3, label=_tick(column))
    ax.axhspan(*band, color="tab:green", alpha=0.12, label="paper", zorder=0)
    ax.set_xticks(range(len(wide)), [_tick(key) for key in wide.index])
    ax.legend(title=str(wide.columns.name or ""), fontsize=8)
    return figure


def case_bars(values: pd.Series, across: str, ylabel: str, title: str, band: tuple[float, float]):
    """bar_figure of one value per case (graph, p, ...): one bar per value of the index level
    `across`; None when there are no cases."""
    if values.empty:
        return None
    return bar_figure(values.unstack(across), ylabel, title, band=band)


def line_figure(wide: pd.DataFrame, ylabel: str, title: str):
    """One line per column over the (numeric) index."""
    figure, ax = _figure(ylabel, title)
    for column in wide.columns:
        ax.plot(wide.index, wide[column].to_numpy(), marker="o", label=str(column))
    ax.set_xlabel(str(wide.index.name))
    ax.set_xticks(list(wide.index))
    ax.legend(fontsize=8)
    return figure


def _tick(key) -> str:
    """A case as a tick label; values as text (p=4 read back as 4.0 is '4')."""
    return " ".join(map(as_text, key)) if isinstance(key, tuple) else as_text(key)


def save_figure(figure, path: Path) -> None:
    """PNG via Agg, written whole (temporary name, then rename)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, buffer.getvalue())
