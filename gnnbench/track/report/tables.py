"""The report's tables: a whole experiment's newest FINISHED run per axes combination (table
mode), a sweep's rows and report.md, as Markdown and CSV."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from pathlib import Path

from gnnbench.process.atomic import atomic_write_bytes
from gnnbench.track.report.plots import PLOTS, Plot
from gnnbench.track.report.query import (
    AXES,
    JOB_WALL,
    LOAD,
    MACHINE,
    MEASURED,
    SWEEP_METRICS,
    Sweep,
    find_experiment,
    is_bookkeeping,
    open_store,
    search_runs,
    sort_key,
)

DEFAULT_METRICS = (
    "replication_factor",
    "edge_cut",
    "vertex_balance",
    "partition_time_s",
    "partition_peak_mb",
)


def collect(
    tracking_uri: str, experiment: str, axes: Sequence[str], metrics: Sequence[str]
) -> list[dict]:
    """One row per distinct combination of axes (newest FINISHED job run), with the chosen metrics."""
    client = open_store(tracking_uri)
    runs = search_runs(
        client,
        find_experiment(client, experiment, tracking_uri),
        "attributes.status = 'FINISHED'",
    )
    rows: dict[tuple, dict] = {}
    for run in runs:
        if is_bookkeeping(run):  # a sweep's parent, or a link to a run counted on its own
            continue
        key = tuple(run.data.params.get(axis, "") for axis in axes)
        if key in rows:
            continue
        row = dict(zip(axes, key, strict=True))
        row.update({metric: run.data.metrics.get(metric) for metric in metrics})
        rows[key] = row
    return sorted(rows.values(), key=lambda row: tuple(sort_key(row[axis]) for axis in axes))


def _cell(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown(rows: list[dict], columns: Sequence[str]) -> str:
    """A Markdown table of the rows (missing values as –)."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += [
        "| " + " | ".join(_cell(row.get(column)) for column in columns) + " |" for row in rows
    ]
    return "\n".join(lines) + "\n"


def write_csv(rows: list[dict], columns: Sequence[str], path: Path) -> None:
    """The rows as CSV with these columns (others ignored), written whole or not at all."""
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=list(columns), extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_bytes(path, text.getvalue().encode())


def table(sweep: Sweep) -> tuple[list[dict], list[str]]:
    """Rows and columns of the sweep's table: swept axes, status, metrics logged by any job, error."""
    figures = (*SWEEP_METRICS, JOB_WALL)
    metrics = [m for m in figures if any(row.get(m) is not None for row in sweep.rows)]
    columns = [*sweep.axes, "status", *metrics]
    notes = ("epoch_meter", MEASURED, "balance_violation", "error")
    columns += [key for key in notes if any(r.get(key) for r in sweep.rows)]
    return sweep.rows, columns


CSV_COLUMNS = (
    "run_id",
    "status",
    MACHINE,
    *AXES,
    *SWEEP_METRICS,
    JOB_WALL,
    LOAD,
    "epoch_meter",
    MEASURED,
    "balance_violation",
    "error",
    "skipped",
)


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
            f"this sweep are in the table: {', '.join(f'`{r}`' for r in outside)}. They were "
            "measured at another time and load than the rest (column `measured`): compare "
            "their times with care.",
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
        "Plots use FINISHED jobs only. Generated by `python -m gnnbench report "
        f"--sweep-id {sweep.sweep_id}`; data in `report.csv`.",
        "",
    ]
    return "\n".join(lines)
