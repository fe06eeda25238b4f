"""The sweep report: table, CSV, plots and artifacts from a small MLflow store built directly."""

from __future__ import annotations

import csv
import itertools
from collections import defaultdict

import pytest
from helpers.figures import bands, bars, lines, whiskers
from helpers.sweep_fixtures import (
    FAILED_JOB,
    NUM_GPUS,
    OLD_SWEEP_ID,
    PARTITIONERS,
    PS,
    RERUN_JOB,
    SYNC_INTERVALS,
    build_small_sweep,
    expected_metrics,
)

from gnnbench.track.report import (
    PLOTS,
    figures,
    load_sweep,
    main,
    plot_peak_memory,
    plot_quality_vs_p,
    report_sweep,
)
from gnnbench.track.report.plots import plot_quality_per_partitioner

PNGS = {spec.filename for spec in PLOTS}


def _axes(row: dict) -> tuple:
    return (row["partitioner.name"], int(row["p"]), int(row["sync_interval"]), int(row["num_gpus"]))


# The small sweep's axes in the order of expected_metrics' arguments (after the partitioner).
AXIS_POSITION = {"p": 1, "sync_interval": 2, "num_gpus": 3}


def expected_points(
    x: str, metric: str, sync_intervals: tuple = SYNC_INTERVALS, training: bool = True
) -> dict[str, list[tuple[float, float, float, float]]]:
    """{partitioner: [(x, mean, min, max), ...]} of a metric over the small sweep's FINISHED jobs
    (every job but FAILED_JOB), computed from sweep_fixtures apart from the report's code."""
    values = defaultdict(list)
    for axes in itertools.product(PARTITIONERS, PS, sync_intervals, NUM_GPUS):
        if axes != FAILED_JOB:
            values[(axes[0], axes[AXIS_POSITION[x]])].append(
                expected_metrics(*axes, training=training)[metric]
            )
    return {
        name: [(float(at), sum(v) / len(v), min(v), max(v))
               for (n, at), v in sorted(values.items()) if n == name]
        for name in PARTITIONERS
    }  # fmt: skip


def check_line_panel(ax, x: str, metric: str, **sweep) -> None:
    """The panel draws, per partitioner, the metric's mean at each x, and a band from its min to
    its max where the jobs averaged there differ."""
    points = expected_points(x, metric, **sweep)
    drawn = lines(ax)
    assert set(drawn) == set(points), (metric, drawn)
    for name, expected in points.items():
        assert drawn[name] == pytest.approx({at: mean for at, mean, _, _ in expected}), metric
    wanted = [
        ({at: low for at, _, low, _ in expected}, {at: high for at, _, _, high in expected})
        for expected in points.values()
        if any(low < high for _, _, low, high in expected)
    ]
    found = bands(ax)
    assert len(found) == len(wanted), metric
    for low, high in wanted:
        assert any(b == (pytest.approx(low), pytest.approx(high)) for b in found), (metric, low)


def check_sweep_figures(plots: dict, **sweep) -> None:
    """Every drawn figure of the small sweep holds its values: the line panels per partitioner,
    the heap peak bars per partitioner and p (max RSS, within 2%, not drawn)."""
    panels = {
        "rf_edge_cut_vs_p.png": ("p", ["replication_factor", "edge_cut"]),
        "f1_vs_sync_interval.png": ("sync_interval", ["test_f1_micro", "test_f1_macro"]),
        "epoch_time_vs_num_gpus.png": ("num_gpus", ["epoch_time_s"]),
    }
    for name, (x, metrics) in panels.items():
        if plots[name].figure is None:
            continue
        assert len(plots[name].figure.axes) == len(metrics), name
        for ax, metric in zip(plots[name].figure.axes, metrics, strict=True):
            check_line_panel(ax, x, metric, **sweep)
    (heap,) = plots["peak_memory.png"].figure.axes
    points = expected_points("p", "partition_peak_mb", **sweep)
    assert bars(heap) == {
        f"p={p}": {name: pytest.approx(points[name][i][1]) for name in PARTITIONERS}
        for i, p in enumerate(PS)
    }


def test_report_sweep_writes_table_csv_plots_and_logs_them(small_sweep_store, tmp_path):
    store = small_sweep_store
    out = tmp_path / "report"
    md = report_sweep(store.tracking_uri, store.experiment, None, out)  # None: the latest sweep

    assert md == out / "report.md"
    with open(out / "report.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    # One row per job of this sweep (newest run per axes): not the older sweep, not the lone run.
    assert len(rows) == store.jobs
    assert len({_axes(row) for row in rows}) == store.jobs
    assert {row["partitioner.name"] for row in rows} == {"spring", "hash"}
    by_axes = {_axes(row): row for row in rows}
    failed = by_axes[FAILED_JOB]
    assert failed["status"] == "FAILED"
    assert failed["error"] == "edges.bin: truncated (p=8)"
    assert failed["replication_factor"] == ""
    rerun = by_axes[RERUN_JOB]  # FAILED first, then FINISHED: the newest run wins
    assert rerun["status"] == "FINISHED" and rerun["error"] == ""
    assert [row["status"] for row in rows].count("FINISHED") == store.jobs - 1
    for axes, row in by_axes.items():
        if axes == FAILED_JOB:
            continue
        for metric, value in expected_metrics(*axes, training=True).items():
            assert float(row[metric]) == pytest.approx(value), (axes, metric)

    text = md.read_text()
    assert f"# Sweep `{store.sweep_id}`" in text
    assert "Swept axes: `partitioner.name`, `p`, `sync_interval`, `num_gpus`" in text
    assert "| hash | 8 | 4 | 2 | FAILED |" in text
    assert "skipped" not in text.split("## Plots")[0]  # no job skipped (a plot may be)
    drawn = PNGS - {"rf_edge_cut.png"}  # the bars per partitioner: for a sweep at one p
    for name in drawn:
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({name})" in text
    assert "*RF and edge cut per partitioner: skipped, `p` has several" in text
    plots = figures(load_sweep(store.tracking_uri, store.experiment, store.sweep_id))
    assert all(plots[name].figure is not None for name in drawn)
    check_sweep_figures(plots)

    import mlflow

    client = mlflow.MlflowClient(tracking_uri=store.tracking_uri)
    logged = {a.path for a in client.list_artifacts(store.parent_run_id, "report")}
    assert logged == {f"report/{name}" for name in {"report.md", "report.csv", *drawn}}


def test_partition_only_sweep_skips_training_plots_with_a_note(tmp_path):
    store = build_small_sweep(tmp_path / "store", training=False)
    md = report_sweep(store.tracking_uri, store.experiment, store.sweep_id, tmp_path / "out")
    text = md.read_text()
    assert "*Test F1 vs sync interval: skipped, no FINISHED job with test_f1_micro" in text
    assert "*Epoch time vs num_gpus: skipped, no FINISHED job with epoch_time_s.*" in text
    assert "test_f1_micro |" not in text.split("## Plots")[0]  # no empty metric columns
    assert (tmp_path / "out" / "rf_edge_cut_vs_p.png").is_file()
    assert (tmp_path / "out" / "peak_memory.png").is_file()
    assert not (tmp_path / "out" / "f1_vs_sync_interval.png").exists()
    assert not (tmp_path / "out" / "epoch_time_vs_num_gpus.png").exists()
    plots = figures(load_sweep(store.tracking_uri, store.experiment, store.sweep_id))
    assert plots["f1_vs_sync_interval.png"].figure is None
    assert plots["epoch_time_vs_num_gpus.png"].figure is None
    check_sweep_figures(plots, training=False)


def test_an_axis_with_one_value_is_not_plotted(tmp_path):
    """sync_interval=1 only: no "F1 vs sync interval" with a single x, and report.md says why;
    the axes that were swept are still drawn."""
    store = build_small_sweep(tmp_path / "store", sync_intervals=(1,))
    md = report_sweep(store.tracking_uri, store.experiment, store.sweep_id, tmp_path / "out")
    text = md.read_text()
    assert not (tmp_path / "out" / "f1_vs_sync_interval.png").exists()
    assert (
        "*Test F1 vs sync interval: skipped, `sync_interval` has one value (1) in the FINISHED "
        "jobs: nothing to compare.*" in text
    )
    for drawn in ("rf_edge_cut_vs_p.png", "epoch_time_vs_num_gpus.png", "peak_memory.png"):
        assert (tmp_path / "out" / drawn).is_file(), drawn
    plots = figures(load_sweep(store.tracking_uri, store.experiment, store.sweep_id))
    assert plots["f1_vs_sync_interval.png"].figure is None
    check_sweep_figures(plots, sync_intervals=(1,))


def _job_row(partitioner: str, p: int, **metrics) -> dict:
    return {"status": "FINISHED", "dataset.name": "g", "partitioner.name": partitioner,
            "p": str(p), **metrics}  # fmt: skip


def test_a_sweep_at_one_p_draws_rf_and_edge_cut_as_bars_per_partitioner():
    """A partitioner-only sweep at one p has no line against p; its RF and edge cut are bars,
    one per partitioner (a preset under its own name), the range over seeds as error bars."""
    rows = [
        _job_row(name, 8, replication_factor=rf + seed / 100, edge_cut=cut)
        for name, rf, cut in (
            ("spring", 1.4, 0.30),
            ("hash", 3.1, 0.87),
            ("quotient_best", 1.2, 0.1),
        )
        for seed in (0, 1)
    ]
    assert plot_quality_vs_p(rows).figure is None
    plot = plot_quality_per_partitioner(rows)
    rf, cut = plot.figure.axes
    assert bars(rf) == {
        "p=8": pytest.approx({"hash": 3.105, "quotient_best": 1.205, "spring": 1.405})
    }
    assert bars(cut) == {"p=8": pytest.approx({"hash": 0.87, "quotient_best": 0.1, "spring": 0.30})}
    several = rows + [_job_row("hash", 4, replication_factor=2.0, edge_cut=0.7)]
    assert plot_quality_per_partitioner(several).figure is None


def test_equal_values_over_seeds_draw_a_bar_without_an_error_bar():
    """Three seeds at 0.1: their float mean is an ulp above 0.1, which once made a negative error
    bar that matplotlib refused, and the sweep's report was not written."""
    rows = [
        _job_row(name, 2, replication_factor=1.1, edge_cut=0.1)
        for name in ("a", "b")
        for _ in range(3)
    ]
    plot = plot_quality_per_partitioner(rows)
    assert bars(plot.figure.axes[1]) == {"p=2": pytest.approx({"a": 0.1, "b": 0.1})}


def test_bars_that_cannot_differ_are_left_out_with_a_note():
    """Max RSS within 2% for every partitioner (the interpreter dominates it): that panel is
    dropped and the note says so; with the heap peak also flat nothing is drawn."""
    rows = [
        _job_row(name, p, partition_peak_mb=peak, partition_rss_mb=500.0 + p / 4)
        for name, peak in (("spring", 40.0), ("hash", 4.0), ("ldg", 9.0))
        for p in (2, 4)
    ]
    plot = plot_peak_memory(rows)
    assert plot.figure is not None and len(plot.figure.axes) == 1  # the heap peak alone
    assert plot.figure.axes[0].get_ylabel() == "heap peak, memray (MB)"
    heap = {"hash": 4.0, "ldg": 9.0, "spring": 40.0}
    assert bars(plot.figure.axes[0]) == {"p=2": heap, "p=4": heap}
    assert plot.note == "max RSS (MB) not drawn: every bar within 2% of 501, nothing to compare"

    flat = [dict(row, partition_peak_mb=10.0) for row in rows]
    nothing = plot_peak_memory(flat)
    assert nothing.figure is None and "heap peak, memray (MB) not drawn" in nothing.note

    apart = [
        dict(row, partition_rss_mb=300.0 * row_number) for row_number, row in enumerate(rows, 1)
    ]
    drawn = plot_peak_memory(apart)
    assert len(drawn.figure.axes) == 2  # RSS that differs is drawn, with what it measures
    assert bars(drawn.figure.axes[1]) == {  # rows: spring p2, p4, hash p2, p4, ldg p2, p4
        "p=2": {"spring": 300.0, "hash": 900.0, "ldg": 1500.0},
        "p=4": {"spring": 600.0, "hash": 1200.0, "ldg": 1800.0},
    }
    assert drawn.note.startswith("max RSS is the whole partition process's (interpreter")


def test_a_band_is_drawn_where_the_subtitle_promises_one():
    """Rows differing only in an averaged axis (seed) spread: a band over a line of two points,
    an error bar at a lone point, and the subtitle names the band."""
    rows = [
        _job_row(
            name, p, replication_factor=1.0 + p / 10 + seed / 100, edge_cut=0.1, seed=str(seed)
        )
        for name, ps in (("spring", (2, 4)), ("hash", (4,)))
        for p in ps
        for seed in (0, 1)
    ]
    plot = plot_quality_vs_p(rows, axes=["partitioner.name", "p", "seed"])
    rf_panel = plot.figure.axes[0]
    assert lines(rf_panel) == {
        "spring": pytest.approx({2.0: 1.205, 4.0: 1.405}),
        "hash": pytest.approx({4.0: 1.405}),
    }
    ((low, high),) = bands(rf_panel)  # spring's: seed 0 to seed 1
    assert (low, high) == (pytest.approx({2: 1.2, 4: 1.4}), pytest.approx({2: 1.21, 4: 1.41}))
    assert whiskers(rf_panel) == [pytest.approx((4.0, 1.4, 1.41))]  # hash's lone point
    assert "band (error bar at a lone point): min to max over seed" in plot.figure.get_suptitle()
    steady = [dict(row, replication_factor=1.0 + int(row["p"]) / 10) for row in rows]
    assert (
        "band"
        not in plot_quality_vs_p(
            steady, axes=["partitioner.name", "p", "seed"]
        ).figure.get_suptitle()
    )


def test_sweep_by_id_and_errors(small_sweep_store, tmp_path, capsys):
    store = small_sweep_store
    old = load_sweep(store.tracking_uri, store.experiment, OLD_SWEEP_ID)
    assert [row["partitioner.name"] for row in old.rows] == ["grem"]
    assert old.axes == ["dataset.name", "partitioner.name", "p"]  # nothing varies: the fallback

    assert main(["--tracking-uri", store.tracking_uri, "--sweep-id", "nope"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("gnnbench report: error: no parent run of a sweep 'nope'")
    assert "\n" not in err
    assert main(["--tracking-uri", store.tracking_uri, "--experiment", "missing", "--table"]) == 2
    assert "no experiment 'missing'" in capsys.readouterr().err
    missing = tmp_path / "nowhere.db"
    assert main(["--tracking-uri", f"sqlite:///{missing}", "--latest-sweep"]) == 2
    assert "no MLflow store at" in capsys.readouterr().err
    assert not missing.exists()  # not created empty by MLflow


def test_cli_modes(small_sweep_store, tmp_path, capsys, monkeypatch):
    store = small_sweep_store
    monkeypatch.chdir(tmp_path)
    # `python -m gnnbench report`: the latest sweep, into reports/<sweep_id>, table on stdout.
    assert main(["--tracking-uri", store.tracking_uri, "--no-log"]) == 0
    assert "| spring | 2 | 1 | 1 | FINISHED |" in capsys.readouterr().out
    assert (tmp_path / "reports" / store.sweep_id / "report.csv").is_file()

    # Table mode of the whole experiment (docs/partition_quality.md): parent runs are left out,
    # the lone run and the older sweep's job are in.
    argv = ["--tracking-uri", store.tracking_uri, "--experiment", store.experiment]
    assert main([*argv, "--table"]) == 0  # printed only
    printed = capsys.readouterr().out
    assert "| ldg |" in printed and "| grem |" in printed
    assert not (tmp_path / "docs").exists()
    with pytest.raises(SystemExit):  # table and sweep mode at once: a usage error
        main([*argv, "--table", "--sweep-id", store.sweep_id])
    out = tmp_path / "docs" / "table.md"
    argv = [*argv, "--out"]
    assert main([*argv, str(out)]) == 0
    with open(out.with_suffix(".csv"), newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert all(row["partitioner.name"] for row in rows)
    assert {row["partitioner.name"] for row in rows} == {"spring", "hash", "grem", "ldg"}
    assert out.read_text().startswith("Generated from MLflow experiment `gnnbench`")
    # Rewritten, the table replaces itself and keeps the sections other scripts write below it.
    out.write_text(out.read_text() + "\n## Another script's section\n\nits text\n")
    assert main([*argv, str(out), "--title", "Table"]) == 0
    text = out.read_text()
    assert text.startswith("# Table\n\nGenerated from") and text.count("Generated from") == 1
    assert text.endswith("\n\n## Another script's section\n\nits text\n")


def test_scale_training_control_is_the_rows_own_partitions_first():
    """docs/scale.md's MLP column: the control on the row's own partitions where it ran, else the
    size's first control; two controls at one size once broke the table (a Series, not a value)."""
    import pandas as pd

    from gnnbench.experiments.scale_training import control_f1

    frame = pd.DataFrame(
        {"nodes": [10, 10, 10, 20, 20], "partitioner": ["spring", "ldg", "ldg", "spring", "ldg"],
         "model": ["mlp", "mlp", "sage", "mlp", "sage"], "test_f1_micro": [0.1, 0.2, 0.7, 0.3, 0.8]}
    )  # fmt: skip
    controls = frame[frame.model == "mlp"]
    rows = {(row.nodes, row.partitioner): row for row in frame[frame.model == "sage"].itertuples()}
    assert control_f1(controls, rows[(10, "ldg")]) == 0.2
    assert control_f1(controls, rows[(20, "ldg")]) == 0.3
    assert control_f1(controls[controls.nodes == 10], rows[(20, "ldg")]) is None
