"""Reports from MLflow runs: a sweep's metrics grouped by its swept axes, as Markdown, CSV and plots.

    python -m gnnbench.report                                   # the latest sweep, into reports/
    python -m gnnbench.report --sweep-id 3f2a9c0d1e2b4a5f --out-dir reports/x
    python -m gnnbench.track.report --experiment partition_quality --out docs/partition_quality.md

Sweep mode (`--sweep-id`, `--latest-sweep`, `--out-dir`; the default of `python -m gnnbench.report`)
finds the sweep's parent run, takes its newest child per combination of axes, and writes
`report.md`, `report.csv` and four PNG plots (RF and edge cut vs p, peak memory per partitioner,
F1 vs sync interval, epoch time vs num_gpus), which it also logs as artifacts of the parent run
under `report/`. Table mode (`--out`, the default of `python -m gnnbench.track.report`) tabulates
the newest FINISHED run per axes combination of a whole experiment. Every figure comes from a
logged run; nothing is typed by hand.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gnnbench.errors import GnnbenchError
from gnnbench.track.mlflow_run import HEADLINE_METRICS

if TYPE_CHECKING:
    from matplotlib.figure import Figure

DEFAULT_AXES = ("dataset.name", "partitioner.name", "p")
DEFAULT_METRICS = (
    "replication_factor",
    "edge_cut",
    "vertex_balance",
    "partition_time_s",
    "partition_peak_mb",
)
# The params a sweep may vary; the report's axes are those whose values differ across its jobs.
AXES = (
    "dataset.name",
    "partitioner.name",
    "p",
    "sync_interval",
    "num_gpus",
    "train.mode",
    "model.name",
    "seed",
)
SWEEP_METRICS = HEADLINE_METRICS
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
ROLE_TAG = "gnnbench.role"


# ---------------------------------------------------------------------------------------------
# Table mode: one experiment, newest FINISHED run per axes combination.


def collect(
    tracking_uri: str, experiment: str, axes: Sequence[str], metrics: Sequence[str]
) -> list[dict]:
    """One row per distinct combination of axes (newest FINISHED job run), with the chosen metrics."""
    client = _client(tracking_uri)
    runs = _search_all(
        client,
        _experiment_id(client, experiment, tracking_uri),
        "attributes.status = 'FINISHED'",
    )
    rows: dict[tuple, dict] = {}
    for run in runs:
        if run.data.tags.get(ROLE_TAG) == "parent":  # a sweep's bookkeeping run, no metrics
            continue
        key = tuple(run.data.params.get(axis, "") for axis in axes)
        if key in rows:
            continue
        row = dict(zip(axes, key, strict=True))
        row.update({metric: run.data.metrics.get(metric) for metric in metrics})
        rows[key] = row
    return sorted(rows.values(), key=lambda row: tuple(_sort_key(row[axis]) for axis in axes))


def _sort_key(value: Any):
    text = "" if value is None else str(value)
    number = _number(text)
    return (0, number, "") if number is not None else (1, 0, text)


def _number(value: Any) -> float | int | None:
    """A param's text as a number (int where it is one), or None."""
    if value is None:
        return None
    text = str(value).strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _cell(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown(rows: list[dict], columns: Sequence[str]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += [
        "| " + " | ".join(_cell(row.get(column)) for column in columns) + " |" for row in rows
    ]
    return "\n".join(lines) + "\n"


def write_csv(rows: list[dict], columns: Sequence[str], path: Path) -> None:
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


# ---------------------------------------------------------------------------------------------
# Sweep mode: the children of one parent run.


@dataclass
class Sweep:
    """One sweep as the report sees it: the parent run and one row per job (newest per axes)."""

    sweep_id: str
    parent_run_id: str
    overrides: str
    status: str
    rows: list[dict] = field(default_factory=list)
    axes: list[str] = field(default_factory=list)
    tracking_uri: str = ""
    experiment: str = ""


def _client(tracking_uri: str):
    """A client of an existing store (MLflow would create an empty SQLite file for a wrong path)."""
    import mlflow

    if tracking_uri.startswith("sqlite:///"):
        path = Path(tracking_uri.removeprefix("sqlite:///").split("?", 1)[0])
        if str(path) != ":memory:" and not path.is_file():
            raise GnnbenchError(f"{tracking_uri}: no MLflow store at {path.resolve()}")
    return mlflow.MlflowClient(tracking_uri=tracking_uri)


def _experiment_id(client, experiment: str, tracking_uri: str) -> str:
    from gnnbench.track.mlflow_run import retrying

    found = retrying(client.get_experiment_by_name, experiment)
    if found is None:
        raise GnnbenchError(f"no experiment '{experiment}' in {tracking_uri}")
    return found.experiment_id


def _search_all(
    client, experiment_id: str, filter_string: str, max_results: int | None = None
) -> list:
    """Every run matching the filter, newest first (MLflow pages at 1000 runs)."""
    from gnnbench.track.mlflow_run import retrying

    runs: list = []
    token = None
    while True:
        page = retrying(
            client.search_runs,
            [experiment_id],
            filter_string=filter_string,
            order_by=["attributes.start_time DESC"],
            max_results=min(max_results or 1000, 1000),
            page_token=token,
        )
        runs.extend(page)
        token = page.token
        if not token or (max_results and len(runs) >= max_results):
            return runs[:max_results] if max_results else runs


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def find_parent(client, experiment_id: str, sweep_id: str | None, tracking_uri: str = ""):
    """The sweep's parent run; the most recently started parent when sweep_id is None."""
    where = f"tags.`{ROLE_TAG}` = 'parent'"
    if sweep_id:
        where += f" and tags.sweep_id = {_quote(sweep_id)}"
    found = _search_all(client, experiment_id, where, max_results=1)
    if not found:
        what = f"sweep '{sweep_id}'" if sweep_id else "sweep"
        raise GnnbenchError(f"no parent run of a {what} in {tracking_uri or 'the store'}")
    return found[0]


def newest_per_job(runs: Iterable) -> list:
    """The newest run of each job (its `run_key` tag; a run without one stands alone)."""
    newest: dict[str, Any] = {}
    for run in sorted(runs, key=lambda run: run.info.start_time or 0, reverse=True):
        newest.setdefault(run.data.tags.get("run_key", run.info.run_id), run)
    return list(newest.values())


def skipped_runs(client, parent) -> list:
    """The FINISHED runs the sweep's jobs repeated, where resume skipped them (tags
    `skipped.<run_key>` on the parent); a run deleted since is left out."""
    from mlflow.exceptions import MlflowException

    from gnnbench.track.mlflow_run import retrying
    from gnnbench.track.sweep import SKIPPED_TAG

    found = []
    for tag, run_id in parent.data.tags.items():
        if tag.startswith(SKIPPED_TAG):
            try:
                found.append(retrying(client.get_run, run_id))
            except MlflowException:
                continue
    return found


def run_row(run, metrics: Sequence[str] = SWEEP_METRICS) -> dict:
    """A job as a flat row: run id, status, axes (param text), metrics (None if absent), error."""
    row: dict[str, Any] = {"run_id": run.info.run_id, "status": run.info.status}
    row.update({axis: run.data.params.get(axis) for axis in AXES})
    row.update({metric: run.data.metrics.get(metric) for metric in metrics})
    error = run.data.tags.get("error")
    if error is None and run.info.status != "FINISHED":
        error = run.data.tags.get("error_type")
    row["error"] = error
    return row


def swept_axes(rows: Sequence[dict], candidates: Sequence[str] = AXES) -> list[str]:
    """The candidate axes whose values differ across rows; dataset, partitioner, p if none do."""
    varying = [axis for axis in candidates if len({row.get(axis) for row in rows}) > 1]
    return varying or [axis for axis in DEFAULT_AXES if axis in candidates]


def load_sweep(
    tracking_uri: str, experiment: str = "gnnbench", sweep_id: str | None = None
) -> Sweep:
    """Read one sweep (the latest when sweep_id is None): its parent and its jobs' rows."""
    client = _client(tracking_uri)
    experiment_id = _experiment_id(client, experiment, tracking_uri)
    parent = find_parent(client, experiment_id, sweep_id, tracking_uri)
    sweep_id = parent.data.tags["sweep_id"]
    children = _search_all(
        client,
        experiment_id,
        f"tags.sweep_id = {_quote(sweep_id)} and tags.`{ROLE_TAG}` = 'job'",
    )
    own = {run.info.run_id for run in children}
    others = [run for run in skipped_runs(client, parent) if run.info.run_id not in own]
    rows = [run_row(run) for run in newest_per_job([*children, *others])]
    outside = {run.info.run_id for run in others}
    for row in rows:
        row["skipped"] = row["run_id"] in outside
    axes = swept_axes(rows)
    rows.sort(key=lambda row: tuple(_sort_key(row.get(axis)) for axis in axes))
    return Sweep(
        sweep_id=sweep_id,
        parent_run_id=parent.info.run_id,
        overrides=parent.data.params.get("overrides", ""),
        status=parent.info.status,
        rows=rows,
        axes=axes,
        tracking_uri=tracking_uri,
        experiment=experiment,
    )


def table(sweep: Sweep) -> tuple[list[dict], list[str]]:
    """Rows and columns of the sweep's table: swept axes, status, metrics logged by any job, error."""
    metrics = [m for m in SWEEP_METRICS if any(row.get(m) is not None for row in sweep.rows)]
    columns = [*sweep.axes, "status", *metrics]
    if any(row.get("error") for row in sweep.rows):
        columns.append("error")
    return sweep.rows, columns


CSV_COLUMNS = ("run_id", "status", *AXES, *SWEEP_METRICS, "error", "skipped")


# ---------------------------------------------------------------------------------------------
# Plots: matplotlib Figure objects (no pyplot state, rendered by Agg on save), None when no data.


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
        xv, yv = _number(row.get(x)) if numeric_x else row.get(x), row.get(y)
        if xv is None or yv is None or (isinstance(yv, float) and math.isnan(yv)):
            continue
        key = tuple(row.get(axis) or "" for axis in by)
        values[(row.get("dataset.name") or "", key, xv)].append(float(yv))
    out: dict[str, dict[tuple, list]] = defaultdict(lambda: defaultdict(list))
    for (dataset, key, xv), ys in sorted(
        values.items(),
        key=lambda item: (item[0][0], tuple(map(_sort_key, item[0][1])), _sort_key(item[0][2])),
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
        f"`{axis}` has one value ({', '.join(map(str, sorted(values, key=_sort_key)))}) "
        "in the FINISHED jobs: nothing to compare"
    )


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
        spread = [[mean[0] - low[0]], [high[0] - mean[0]]]
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
    datasets = sorted({d for metric in drawn for d in data[metric]}, key=_sort_key)
    colours = _colours(rows)
    keys = {key for metric in drawn for d in data[metric].values() for key in d}
    extras = sorted({key[1:] for key in keys}, key=lambda k: tuple(map(_sort_key, k)))
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
        spread = [[stat[0] - stat[1] for stat in stats], [stat[2] - stat[0] for stat in stats]]
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


def _bar_data(rows: Sequence[dict], metrics: Sequence[str]) -> tuple[dict, list[str]]:
    """The metrics per partitioner and p, less those whose bars cannot differ (with a note)."""
    data = {
        metric: _series(rows, "partitioner.name", metric, ["p"], numeric_x=False)
        for metric in metrics
    }
    kept, notes = {}, []
    for metric in metrics:
        if not data[metric]:
            continue
        flat = _flat(data[metric])
        if flat is None:
            kept[metric] = data[metric]
        else:
            notes.append(
                f"{LABELS.get(metric, metric)} not drawn: every bar within "
                f"{FLAT_FRACTION:.0%} of {flat:.4g}, nothing to compare"
            )
    return kept, notes


def bar_figure(
    rows: Sequence[dict], metrics: Sequence[str], title: str, subtitle: str = ""
) -> Plot:
    """Metric(s) per partitioner as grouped bars, one bar per p (mean over the other axes, range
    as an error bar where they differ); a row of panels per dataset, a column per metric. A
    metric whose bars all lie within FLAT_FRACTION of each other is left out, with a note."""
    data, notes = _bar_data(rows, metrics)
    if not data:
        return Plot(None, "; ".join(notes) or f"no FINISHED job with {' or '.join(metrics)}")
    datasets = sorted({d for per in data.values() for d in per}, key=_sort_key)
    partitioners = sorted({row.get("partitioner.name") or "?" for row in rows})
    ps = sorted({key[0] for per in data.values() for d in per.values() for key in d}, key=_sort_key)
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
    return Plot(figure, "; ".join(notes))


def plot_quality_vs_p(rows, axes=None, subtitle: str = "") -> Plot:
    """Replication factor and edge cut against p, a line per partitioner."""
    return line_figure(
        rows,
        "p",
        ["replication_factor", "edge_cut"],
        "Replication factor and edge cut vs p",
        axes=axes,
        subtitle=subtitle,
    )


def plot_peak_memory(rows, axes=None, subtitle: str = "") -> Plot:
    """Partitioning memory (memray heap peak and process max RSS) per partitioner and p."""
    return bar_figure(
        rows,
        ["partition_peak_mb", "partition_rss_mb"],
        "Partitioning memory per partitioner",
        subtitle=subtitle,
    )


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
    PlotSpec("peak_memory.png", "Partitioning memory per partitioner", plot_peak_memory),
    PlotSpec("f1_vs_sync_interval.png", "Test F1 vs sync interval", plot_f1_vs_sync_interval),
    PlotSpec("epoch_time_vs_num_gpus.png", "Epoch time vs num_gpus", plot_epoch_time_vs_gpus),
)


def figures(sweep: Sweep) -> dict[str, Plot]:
    """Every plot of the sweep by file name (its figure None where there is nothing to draw)."""
    subtitle = f"sweep {sweep.sweep_id}, FINISHED jobs"
    return {spec.filename: spec.draw(sweep.rows, sweep.axes, subtitle) for spec in PLOTS}


def report_markdown(sweep: Sweep, plots: dict[str, Plot]) -> str:
    """report.md: the sweep, its table, its plots (or why one is not drawn)."""
    rows, columns = table(sweep)
    failed = sum(row["status"] != "FINISHED" for row in rows)
    lines = [
        f"# Sweep `{sweep.sweep_id}`",
        "",
        f"Parent run `{sweep.parent_run_id}` ({sweep.status}) in MLflow experiment "
        f"`{sweep.experiment}` at `{sweep.tracking_uri}`: {len(rows)} job(s), {failed} not FINISHED "
        "(newest run per job).",
        "",
    ]
    if sweep.overrides:
        lines += [f"Overrides: `{sweep.overrides}`", ""]
    lines += [f"Swept axes: {', '.join(f'`{a}`' for a in sweep.axes)}", ""]
    outside = [row["run_id"] for row in rows if row.get("skipped")]
    if outside:
        lines += [
            f"{len(outside)} job(s) skipped by resume (already FINISHED): their runs from outside "
            f"this sweep are in the table: {', '.join(f'`{r}`' for r in outside)}.",
            "",
        ]
    lines += [markdown(rows, columns) if rows else "*No job runs in this sweep.*\n", "## Plots", ""]
    for spec in PLOTS:
        plot = plots.get(spec.filename) or Plot(None, "not drawn")
        if plot.figure is None:
            lines += [f"*{spec.caption}: skipped, {plot.note}.*", ""]
            continue
        lines += [f"![{spec.caption}]({spec.filename})", ""]
        lines += [f"*{plot.note}.*", ""] if plot.note else []
    lines += [
        "Plots use FINISHED jobs only. Generated by `python -m gnnbench.report "
        f"--sweep-id {sweep.sweep_id}`; data in `report.csv`.",
        "",
    ]
    return "\n".join(lines)


def report_sweep(
    tracking_uri: str,
    experiment: str = "gnnbench",
    sweep_id: str | None = None,
    out_dir: Path | None = None,
    log_artifacts: bool = True,
) -> Path:
    """Write report.md, report.csv and the plots of a sweep (the latest if sweep_id is None) to
    out_dir (default reports/<sweep_id>), log them under `report/` on the parent run, and return
    the path of report.md."""
    from gnnbench.track.mlflow_run import retrying

    sweep = load_sweep(tracking_uri, experiment, sweep_id)
    out_dir = Path(out_dir) if out_dir is not None else Path("reports") / sweep.sweep_id
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    plots = figures(sweep)
    for name, plot in plots.items():
        path = out_dir / name
        if plot.figure is None:
            path.unlink(missing_ok=True)  # a stale plot of an earlier report of the same sweep
            continue
        plot.figure.savefig(path, dpi=110)
        written.append(path)
    csv_path = out_dir / "report.csv"
    write_csv(sweep.rows, CSV_COLUMNS, csv_path)
    md_path = out_dir / "report.md"
    md_path.write_text(report_markdown(sweep, plots))
    if log_artifacts:
        client = _client(tracking_uri)
        for path in (md_path, csv_path, *written):
            retrying(client.log_artifact, sweep.parent_run_id, str(path), artifact_path="report")
    return md_path


# ---------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None, sweep_by_default: bool = False) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gnnbench.report" if sweep_by_default else "python -m gnnbench.track.report",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--tracking-uri", default="sqlite:///mlflow.db")
    parser.add_argument("--experiment", default="gnnbench")
    sweep = parser.add_argument_group("sweep mode")
    sweep.add_argument("--sweep-id", help="the sweep to report (tag sweep_id of its parent run)")
    sweep.add_argument(
        "--latest-sweep", action="store_true", help="report the most recently started sweep"
    )
    sweep.add_argument(
        "--out-dir", type=Path, help="where report.md/.csv and the plots go (reports/<sweep_id>)"
    )
    sweep.add_argument(
        "--no-log", action="store_true", help="do not log the report on the parent run"
    )
    tab = parser.add_argument_group("table mode (a whole experiment)")
    tab.add_argument("--axes", default=",".join(DEFAULT_AXES), help="comma-separated param names")
    tab.add_argument(
        "--metrics", default=",".join(DEFAULT_METRICS), help="comma-separated metric names"
    )
    tab.add_argument(
        "--out", type=Path, help="write the Markdown table here (and a .csv beside it)"
    )
    tab.add_argument("--title", default="")
    args = parser.parse_args(argv)
    sweep_mode = args.sweep_id or args.latest_sweep or args.out_dir is not None
    if sweep_mode and args.out:
        parser.error("--out is table mode; use --out-dir with --sweep-id/--latest-sweep")
    try:
        if sweep_mode or (sweep_by_default and not args.out):
            path = report_sweep(
                args.tracking_uri,
                args.experiment,
                args.sweep_id,
                args.out_dir,
                log_artifacts=not args.no_log,
            )
            print(path.read_text())
            print(f"report written to {path.parent}", file=sys.stderr)
            return 0
        axes = args.axes.split(",")
        metrics = args.metrics.split(",")
        rows = collect(args.tracking_uri, args.experiment, axes, metrics)
    except GnnbenchError as exc:
        print(f"gnnbench report: error: {exc}", file=sys.stderr)
        return 2
    text = markdown(rows, [*axes, *metrics])
    print(text)
    if args.out:
        header = f"# {args.title}\n\n" if args.title else ""
        source = f"Generated from MLflow experiment `{args.experiment}` by `python -m gnnbench.track.report`.\n\n"
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(header + source + text)
        write_csv(rows, [*axes, *metrics], args.out.with_suffix(".csv"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
