"""Tables from MLflow runs: metrics grouped by the swept axes, as Markdown and CSV.

    python -m gnnbench.track.report --experiment partition_quality --out docs/partition_quality.md

Every figure comes from a logged run; nothing is typed by hand. Where several FINISHED runs share
the same axes (re-runs), the newest one is shown.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Sequence
from pathlib import Path

DEFAULT_AXES = ("dataset.name", "partitioner.name", "p")
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
    """One row per distinct combination of axes (newest FINISHED run), with the chosen metrics."""
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=tracking_uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        raise SystemExit(f"gnnbench report: error: no experiment '{experiment}' in {tracking_uri}")
    runs = client.search_runs(
        [found.experiment_id],
        filter_string="attributes.status = 'FINISHED'",
        order_by=["attributes.start_time DESC"],
    )
    rows: dict[tuple, dict] = {}
    for run in runs:
        key = tuple(run.data.params.get(axis, "") for axis in axes)
        if key in rows:
            continue
        row = dict(zip(axes, key, strict=True))
        row.update({metric: run.data.metrics.get(metric) for metric in metrics})
        rows[key] = row
    return sorted(rows.values(), key=lambda row: tuple(_sort_key(row[axis]) for axis in axes))


def _sort_key(value: str):
    return (0, int(value), "") if value.lstrip("-").isdigit() else (1, 0, value)


def _cell(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


def markdown(rows: list[dict], columns: Sequence[str]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(row[column]) for column in columns) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def write_csv(rows: list[dict], columns: Sequence[str], path: Path) -> None:
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(columns))
        writer.writeheader()
        writer.writerows(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tracking-uri", default="sqlite:///mlflow.db")
    parser.add_argument("--experiment", default="gnnbench")
    parser.add_argument(
        "--axes", default=",".join(DEFAULT_AXES), help="comma-separated param names"
    )
    parser.add_argument(
        "--metrics", default=",".join(DEFAULT_METRICS), help="comma-separated metric names"
    )
    parser.add_argument(
        "--out", type=Path, help="write the Markdown table here (and a .csv beside it)"
    )
    parser.add_argument("--title", default="")
    args = parser.parse_args(argv)
    axes = args.axes.split(",")
    metrics = args.metrics.split(",")
    rows = collect(args.tracking_uri, args.experiment, axes, metrics)
    table = markdown(rows, [*axes, *metrics])
    print(table)
    if args.out:
        header = f"# {args.title}\n\n" if args.title else ""
        source = f"Generated from MLflow experiment `{args.experiment}` by `python -m gnnbench.track.report`.\n\n"
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(header + source + table)
        write_csv(rows, [*axes, *metrics], args.out.with_suffix(".csv"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
