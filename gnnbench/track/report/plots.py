"""The sweep report's plots: matplotlib Figure objects (no pyplot state, rendered by Agg on
save), each drawn only where its axis took two values or more and its metric was logged."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gnnbench.track.report.query import Sweep, number, sort_key, swept_axes

if TYPE_CHECKING:
    from matplotlib.figure import Figure

LABELS = {
    "replication_factor": "replication factor",
    "edge_cut": "edge cut (fraction of edges)",
    "partition_peak_mb": "heap peak, memray (MB)",
    "partition_rss_mb": "max RSS (MB)",
    "test_f1_micro": "test micro-F1",
    "test_f1_macro": "test macro-F1",
    "epoch_time_s": "epoch time, slowest worker (s)",
    "p": "p (partitions)",
    "sync_interval": "sync interval (epochs between averaging)",
    "num_gpus": "num_gpus (workers)",
}
SHORT = {"dataset.name": "dataset", "partitioner.name": "partitioner", "train.mode": "train"}
SHORT["model.name"] = "model"


def _series(
    rows: Sequence[dict], x: str, y: str, by: Sequence[str], numeric_x: bool = True
) -> dict[str, dict[tuple, list[tuple[Any, float, float, float]]]]:
    """{dataset: {series key: [(x, mean, min, max), ...]}} over FINISHED rows holding x and y.

    Rows sharing dataset, series key and x (jobs differing in the other axes, or seeds) are
    summarised by their mean and range.
    """
    values: dict[tuple, list[float]] = defaultdict(list)
    for row in rows:
        if row.get("status") != "FINISHED":
            continue
        xv, yv = number(row.get(x)) if numeric_x else row.get(x), row.get(y)
        if xv is None or yv is None or (isinstance(yv, float) and math.isnan(yv)):
            continue
        key = tuple(row.get(axis) or "" for axis in by)
        values[(row.get("dataset.name") or "", key, xv)].append(float(yv))
    out: dict[str, dict[tuple, list]] = defaultdict(lambda: defaultdict(list))
    for (dataset, key, xv), ys in sorted(
        values.items(),
        key=lambda item: (item[0][0], tuple(map(sort_key, item[0][1])), sort_key(item[0][2])),
    ):
        out[dataset][key].append((xv, sum(ys) / len(ys), min(ys), max(ys)))
    return out


# Categorical axes that change what is trained: always their own lines, never averaged together.
SPLIT_AXES = ("train.mode", "model.name")


def _series_axes(rows: Sequence[dict], axes: Sequence[str] | None) -> list[str]:
    """Partitioner, then train mode and model where the sweep varies them."""
    axes = list(axes) if axes is not None else swept_axes(rows)
    return ["partitioner.name", *[axis for axis in SPLIT_AXES if axis in axes]]


def _label(key: tuple, by: Sequence[str]) -> str:
    parts = [key[0] or "?"] + [
        f"{SHORT.get(a, a)}={v}" for a, v in zip(by[1:], key[1:], strict=True)
    ]
    return ", ".join(parts)


def _colours(rows: Sequence[dict]) -> dict[str, Any]:
    """One colour per partitioner, the same in every plot of a sweep."""
    from matplotlib import colormaps

    names = sorted({row.get("partitioner.name") or "?" for row in rows})
    palette = colormaps["tab10" if len(names) <= 10 else "tab20"]
    return {name: palette(i % palette.N) for i, name in enumerate(names)}


def _set_x(ax, values: Sequence[float]) -> None:
    values = sorted(set(values))
    if len(values) >= 3 and values[0] > 0 and values[-1] / values[0] >= 4:
        ax.set_xscale("log", base=2)
    ax.set_xticks(values, labels=[f"{v:g}" for v in values])
    ax.minorticks_off()


def _grid(n_rows: int, n_cols: int):
    from matplotlib.figure import Figure

    figure = Figure(figsize=(max(4.8 * n_cols, 7.0), 3.4 * n_rows + 1.4), layout="constrained")
    return figure, figure.subplots(n_rows, n_cols, squeeze=False)


def _legend(figure, axes_grid, title: str) -> None:
    handles: dict[str, Any] = {}
    for ax in axes_grid.flat:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    if handles:
        figure.legend(
            list(handles.values()),
            list(handles.keys()),
            title=title,
            loc="outside lower center",
            ncols=min(len(handles), 5),
        )


def _title(base: str, subtitle: str, note: str = "") -> str:
    return "\n".join(part for part in (base, note, subtitle) if part)


@dataclass
class Plot:
    """A drawn figure (None when nothing is worth drawing) and what report.md says about it: why
    it is not drawn, or which panels a drawn one leaves out."""

    figure: Figure | None
    note: str = ""


RSS_NOTE = (
    "max RSS is the whole partition process's (interpreter, imports and compiled kernels "
    "included): the heap peak is the algorithm's own memory"
)
# Bars of a metric whose values all lie within this fraction of their largest cannot show a
# difference (max RSS of a partition process is mostly the interpreter and its imports).
FLAT_FRACTION = 0.02


def _spread_note(data: dict, averaged: Sequence[str]) -> str:
    """Says which axes a line averages over, where that hides a spread (drawn as a band, or an
    error bar at a lone point)."""
    spread = any(
        point[3] > point[2]
        for per_metric in data.values()
        for d in per_metric.values()
        for points in d.values()
        for point in points
    )
    if not spread:
        return ""
    names = [SHORT.get(a, a) for a in averaged] or ["re-runs"]
    return f"line: mean, band (error bar at a lone point): min to max over {', '.join(names)}"


def _x_values(data: dict) -> set:
    return {
        point[0]
        for per_metric in data.values()
        for d in per_metric.values()
        for points in d.values()
        for point in points
    }


def _one_value(axis: str, values: set) -> str:
    return (
        f"`{axis}` has one value ({', '.join(map(str, sorted(values, key=sort_key)))}) "
        "in the FINISHED jobs: nothing to compare"
    )


def _gap(upper: float, lower: float) -> float:  # an error bar: a mean of equal floats can land
    return max(0.0, upper - lower)  # an ulp outside them, and matplotlib refuses a negative bar


def _draw_series(ax, points: list, colour, style: str, marker: str, label: str) -> None:
    """One line (mean) with its min-to-max range: a band, or an error bar at a lone point."""
    px = [point[0] for point in points]
    mean = [point[1] for point in points]
    ax.plot(px, mean, color=colour, linestyle=style, marker=marker, label=label)
    if not any(point[3] > point[2] for point in points):
        return
    low, high = [point[2] for point in points], [point[3] for point in points]
    if len(points) >= 2:
        ax.fill_between(px, low, high, color=colour, alpha=0.15, linewidth=0)
    else:
        spread = [[_gap(mean[0], low[0])], [_gap(high[0], mean[0])]]
        ax.errorbar(px, mean, yerr=spread, color=colour, capsize=3, linestyle="none")


def _line_panel(ax, series: dict, by: Sequence[str], extras: list, colours: dict) -> None:
    styles = ["-", "--", ":", "-."]
    markers = ["o", "s", "^", "D", "v", "P", "X", "*"]
    xs: list[float] = []
    for key, points in series.items():
        k = extras.index(key[1:])
        colour = colours.get(key[0] or "?")
        label = _label(key, by)
        _draw_series(ax, points, colour, styles[k % len(styles)], markers[k % len(markers)], label)
        xs += [point[0] for point in points]
    if xs:
        _set_x(ax, xs)
    else:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)


def line_figure(
    rows: Sequence[dict],
    x: str,
    metrics: Sequence[str],
    title: str,
    axes: Sequence[str] | None = None,
    subtitle: str = "",
) -> Plot:
    """Metric(s) against a numeric axis: a row of panels per dataset, a column per metric, a line
    per partitioner (and train mode / model where swept) averaged over the other swept axes, with
    their range as a band; not drawn without data or when x has fewer than two values."""
    axes = list(axes) if axes is not None else swept_axes(rows)
    by = _series_axes(rows, axes)
    data = {metric: _series(rows, x, metric, by) for metric in metrics}
    drawn = [metric for metric in metrics if data[metric]]
    if not drawn:
        return Plot(None, f"no FINISHED job with {' or '.join(metrics)}")
    data = {metric: data[metric] for metric in drawn}
    if len(_x_values(data)) < 2:
        return Plot(None, _one_value(x, _x_values(data)))
    averaged = [a for a in axes if a not in (*by, x, "dataset.name")]
    datasets = sorted({d for metric in drawn for d in data[metric]}, key=sort_key)
    colours = _colours(rows)
    keys = {key for metric in drawn for d in data[metric].values() for key in d}
    extras = sorted({key[1:] for key in keys}, key=lambda k: tuple(map(sort_key, k)))
    figure, grid = _grid(len(datasets), len(drawn))
    for i, dataset in enumerate(datasets):
        for j, metric in enumerate(drawn):
            ax = grid[i][j]
            _line_panel(ax, data[metric].get(dataset, {}), by, extras, colours)
            ax.set_xlabel(LABELS.get(x, x))
            ax.set_ylabel(LABELS.get(metric, metric))
            ax.set_title(dataset)
            ax.grid(True, alpha=0.3)
    figure.suptitle(_title(title, subtitle, _spread_note(data, averaged)))
    _legend(figure, grid, " / ".join(SHORT.get(a, a) for a in by))
    return Plot(figure)


def _flat(series: dict) -> float | None:
    """The largest mean of a metric's bars when they all lie within FLAT_FRACTION of it."""
    means = [point[1] for d in series.values() for points in d.values() for point in points]
    top = max(means)
    return top if len(means) >= 2 and top - min(means) <= FLAT_FRACTION * abs(top) else None


def _bar_panel(ax, series: dict, partitioners: list[str], ps: list) -> None:
    """Grouped bars: one group per partitioner, one bar per p, the range as an error bar."""
    from matplotlib import colormaps

    shades = colormaps["viridis"]
    width = 0.8 / len(ps)
    for k, p in enumerate(ps):
        found = {point[0]: point[1:] for point in series.get((p,), [])}
        xs = [n for n, name in enumerate(partitioners) if name in found]
        stats = [found[partitioners[n]] for n in xs]  # (mean, min, max)
        mean = [stat[0] for stat in stats]
        spread = [[_gap(s[0], s[1]) for s in stats], [_gap(s[2], s[0]) for s in stats]]
        ax.bar(
            [n - 0.4 + width * (k + 0.5) for n in xs],
            mean,
            width=width,
            color=shades(0.15 + 0.7 * k / max(len(ps) - 1, 1)),
            label=f"p={p}",
            yerr=spread if any(map(any, spread)) else None,
            capsize=2,
        )
    ax.set_xticks(range(len(partitioners)), labels=partitioners)
    ax.tick_params(axis="x", labelrotation=30 if len(partitioners) > 5 else 0)


def _bar_data(
    rows: Sequence[dict], metrics: Sequence[str], drop_flat: bool = True
) -> tuple[dict, list[str]]:
    """The metrics per partitioner and p, less those whose bars cannot differ (with a note)
    unless `drop_flat` is False (a quality figure: equal bars are a finding)."""
    data = {
        metric: _series(rows, "partitioner.name", metric, ["p"], numeric_x=False)
        for metric in metrics
    }
    kept, notes = {}, []
    for metric in metrics:
        if not data[metric]:
            continue
        flat = _flat(data[metric]) if drop_flat else None
        if flat is None:
            kept[metric] = data[metric]
        else:
            notes.append(
                f"{LABELS.get(metric, metric)} not drawn: every bar within "
                f"{FLAT_FRACTION:.0%} of {flat:.4g}, nothing to compare"
            )
    return kept, notes


def bar_figure(
    rows: Sequence[dict],
    metrics: Sequence[str],
    title: str,
    subtitle: str = "",
    explain: Mapping[str, str] | None = None,
    drop_flat: bool = True,
) -> Plot:
    """Metric(s) per partitioner as grouped bars, one bar per p (mean over the other axes, range
    as an error bar where they differ); a row of panels per dataset, a column per metric. A
    metric whose bars all lie within FLAT_FRACTION of each other is left out, with a note;
    `explain` adds a note for a metric that is drawn."""
    data, notes = _bar_data(rows, metrics, drop_flat)
    if not data:
        return Plot(None, "; ".join(notes) or f"no FINISHED job with {' or '.join(metrics)}")
    datasets = sorted({d for per in data.values() for d in per}, key=sort_key)
    partitioners = sorted({row.get("partitioner.name") or "?" for row in rows})
    ps = sorted({key[0] for per in data.values() for d in per.values() for key in d}, key=sort_key)
    figure, grid = _grid(len(datasets), len(data))
    for i, dataset in enumerate(datasets):
        for j, (metric, per) in enumerate(data.items()):
            ax = grid[i][j]
            _bar_panel(ax, per.get(dataset, {}), partitioners, ps)
            ax.set_xlabel("partitioner")
            ax.set_ylabel(LABELS.get(metric, metric))
            ax.set_title(dataset)
            ax.grid(True, axis="y", alpha=0.3)
    figure.suptitle(_title(title, subtitle))
    _legend(figure, grid, "partitions")
    notes += [(explain or {})[metric] for metric in data if metric in (explain or {})]
    return Plot(figure, "; ".join(notes))


QUALITY = ["replication_factor", "edge_cut"]


def plot_quality_vs_p(rows, axes=None, subtitle: str = "") -> Plot:
    """Replication factor and edge cut against p, a line per partitioner."""
    title = "Replication factor and edge cut vs p"
    return line_figure(rows, "p", QUALITY, title, axes=axes, subtitle=subtitle)


def plot_quality_per_partitioner(rows, axes=None, subtitle: str = "") -> Plot:
    """RF and edge cut as bars per partitioner, for a sweep at one p (no line against p)."""
    measured = [row for row in rows if row.get("replication_factor") is not None]
    if len({row.get("p") for row in measured}) >= 2:
        return Plot(None, "`p` has several values: the lines against p show them")
    names = {row.get("partitioner.name") for row in measured}
    if len(names) < 2:
        return Plot(None, _one_value("partitioner.name", names))
    title = "Replication factor and edge cut per partitioner"
    return bar_figure(rows, QUALITY, title, subtitle, drop_flat=False)


def plot_peak_memory(rows, axes=None, subtitle: str = "") -> Plot:
    """Partitioning memory (memray heap peak and process max RSS) per partitioner and p."""
    memory, title = ["partition_peak_mb", "partition_rss_mb"], "Partitioning memory per partitioner"
    return bar_figure(rows, memory, title, subtitle, explain={"partition_rss_mb": RSS_NOTE})


def plot_f1_vs_sync_interval(rows, axes=None, subtitle: str = "") -> Plot:
    """Test micro- and macro-F1 against the model-averaging interval."""
    return line_figure(
        rows,
        "sync_interval",
        ["test_f1_micro", "test_f1_macro"],
        "Test F1 vs sync interval",
        axes=axes,
        subtitle=subtitle,
    )


def plot_epoch_time_vs_gpus(rows, axes=None, subtitle: str = "") -> Plot:
    """Per-epoch time of the slowest worker against the number of workers."""
    return line_figure(
        rows, "num_gpus", ["epoch_time_s"], "Epoch time vs num_gpus", axes=axes, subtitle=subtitle
    )


@dataclass(frozen=True)
class PlotSpec:
    filename: str
    caption: str
    draw: Callable[..., Plot]


PLOTS = (
    PlotSpec("rf_edge_cut_vs_p.png", "Replication factor and edge cut vs p", plot_quality_vs_p),
    PlotSpec("rf_edge_cut.png", "RF and edge cut per partitioner", plot_quality_per_partitioner),
    PlotSpec("peak_memory.png", "Partitioning memory per partitioner", plot_peak_memory),
    PlotSpec("f1_vs_sync_interval.png", "Test F1 vs sync interval", plot_f1_vs_sync_interval),
    PlotSpec("epoch_time_vs_num_gpus.png", "Epoch time vs num_gpus", plot_epoch_time_vs_gpus),
)


def figures(sweep: Sweep) -> dict[str, Plot]:
    """Every plot of the sweep by file name (its figure None where there is nothing to draw)."""
    subtitle = f"sweep {sweep.sweep_id}, FINISHED jobs"
    return {spec.filename: spec.draw(sweep.rows, sweep.axes, subtitle) for spec in PLOTS}
