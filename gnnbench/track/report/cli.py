"""Reports from MLflow runs: a sweep's metrics grouped by its swept axes, as Markdown, CSV and plots.

    python -m gnnbench report                                   # the latest sweep, into reports/
    python -m gnnbench report --sweep-id 3f2a9c0d1e2b4a5f --out-dir reports/x
    python -m gnnbench report --experiment partition_quality --out docs/partition_quality.md

The one report entry point. Sweep mode (`--sweep-id`, `--latest-sweep`, `--out-dir`; the default)
finds the sweep's parent run, takes the newest run of each of its jobs (its children, and the
FINISHED runs of jobs resume skipped), and writes `report.md`, `report.csv` and up to four PNG plots
(RF and edge cut vs p, peak memory per partitioner, F1 vs sync interval, epoch time vs num_gpus;
one only where its axis took two values or more) to reports/<sweep_id> (the place the end of a
sweep writes it too), and logs them as artifacts of the parent run under `report/`. Table mode
(`--table` prints it, `--out` writes it too) tabulates the newest FINISHED run per axes combination of a whole experiment. Every figure comes from a
logged run; nothing is typed by hand.
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

from gnnbench.errors import GnnbenchError
from gnnbench.process.atomic import atomic_write_bytes
from gnnbench.schema import TrackingKeys
from gnnbench.track.report.plots import figures
from gnnbench.track.report.query import DEFAULT_AXES, load_sweep, open_store
from gnnbench.track.report.tables import (
    CSV_COLUMNS,
    DEFAULT_METRICS,
    collect,
    markdown,
    report_markdown,
    write_csv,
)


def report_sweep(
    tracking_uri: str,
    experiment: str = TrackingKeys.experiment,
    sweep_id: str | None = None,
    out_dir: Path | None = None,
    log_artifacts: bool = True,
) -> Path:
    """Write report.md, report.csv and the plots of a sweep (the latest if sweep_id is None) to
    out_dir (default reports/<sweep_id>), log them under `report/` on the parent run, and return
    the path of report.md."""

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
        buffer = io.BytesIO()
        plot.figure.savefig(buffer, format="png", dpi=110)
        atomic_write_bytes(path, buffer.getvalue())  # no half-written PNG on disk
        written.append(path)
    csv_path = out_dir / "report.csv"
    write_csv(sweep.rows, CSV_COLUMNS, csv_path)
    md_path = out_dir / "report.md"
    atomic_write_bytes(md_path, report_markdown(sweep, plots).encode())
    if log_artifacts:
        client = open_store(tracking_uri)
        for path in (md_path, csv_path, *written):
            client.log_artifact(sweep.parent_run_id, str(path), artifact_path="report")
    return md_path


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gnnbench report",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--tracking-uri", default=TrackingKeys.uri)
    parser.add_argument("--experiment", default=TrackingKeys.experiment)
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
    tab.add_argument("--table", action="store_true", help="print the experiment's table")
    tab.add_argument("--axes", default=",".join(DEFAULT_AXES), help="comma-separated param names")
    tab.add_argument(
        "--metrics", default=",".join(DEFAULT_METRICS), help="comma-separated metric names"
    )
    tab.add_argument(
        "--out",
        type=Path,
        help="write the Markdown table here (and a .csv beside it); the file's `## ` sections "
        "after it are kept",
    )
    tab.add_argument("--title", default="")
    return parser


def _table_mode(args: argparse.Namespace) -> None:
    """Print the experiment's table; with --out, write it (and a .csv beside it) too."""
    axes, metrics = args.axes.split(","), args.metrics.split(",")
    rows = collect(args.tracking_uri, args.experiment, axes, metrics)
    text = markdown(rows, [*axes, *metrics])
    print(text)
    if args.out:
        header = f"# {args.title}\n\n" if args.title else ""
        source = (
            f"Generated from MLflow experiment `{args.experiment}` by "
            "`python -m gnnbench report`.\n\n"
        )
        args.out.parent.mkdir(parents=True, exist_ok=True)
        later = _later_sections(args.out)
        atomic_write_bytes(args.out, (header + source + text + later).encode())
        write_csv(rows, [*axes, *metrics], args.out.with_suffix(".csv"))


def _later_sections(doc: Path) -> str:
    """The `## ` sections of an existing doc, which other scripts generate below the table
    (docs/partition_quality.md): kept as they are."""
    if not doc.is_file():
        return ""
    text = doc.read_text()
    start = text.find("\n## ")
    return "" if start < 0 else "\n" + text[start + 1 :]


def main(argv: list[str] | None = None) -> int:
    """The report command: sweep mode (a sweep's report files) or table mode (an experiment's
    table); exit status 2 with one line for a missing store, experiment or sweep."""
    parser = _parser()
    args = parser.parse_args(argv)
    sweep_mode = args.sweep_id or args.latest_sweep or args.out_dir is not None
    table_mode = args.table or args.out is not None
    if sweep_mode and table_mode:
        parser.error("--table/--out are table mode; use --out-dir with --sweep-id/--latest-sweep")
    try:
        if not table_mode:
            path = report_sweep(
                args.tracking_uri,
                args.experiment,
                args.sweep_id,
                args.out_dir,
                log_artifacts=not args.no_log,
            )
            print(path.read_text())
            print(f"report written to {path.parent}", file=sys.stderr)
        else:
            _table_mode(args)
    except GnnbenchError as exc:
        print(f"gnnbench report: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
