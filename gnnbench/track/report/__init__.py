"""Reports from MLflow runs: a sweep's metrics grouped by its swept axes, as Markdown, CSV and plots.

query (reading a store: the public API scripts and the notebook use), tables (Markdown and CSV),
plots (the figures), cli (`python -m gnnbench report`, the one report entry point). The modules
behind scripts/, one per generated doc, are gnnbench/experiments/. The names below are
re-exported for callers that import the package.
"""

from gnnbench.track.report.cli import main, report_sweep
from gnnbench.track.report.plots import (
    PLOTS,
    Plot,
    PlotSpec,
    figures,
    plot_epoch_time_vs_gpus,
    plot_f1_vs_sync_interval,
    plot_peak_memory,
    plot_quality_vs_p,
)
from gnnbench.track.report.query import (
    AXES,
    Sweep,
    experiment_runs,
    find_experiment,
    find_parent,
    load_sweep,
    open_store,
    search_runs,
    swept_axes,
)
from gnnbench.track.report.tables import collect, markdown, table, write_csv

__all__ = [
    "AXES",
    "PLOTS",
    "Plot",
    "PlotSpec",
    "Sweep",
    "collect",
    "experiment_runs",
    "figures",
    "find_experiment",
    "find_parent",
    "load_sweep",
    "main",
    "markdown",
    "open_store",
    "plot_epoch_time_vs_gpus",
    "plot_f1_vs_sync_interval",
    "plot_peak_memory",
    "plot_quality_vs_p",
    "report_sweep",
    "search_runs",
    "swept_axes",
    "table",
    "write_csv",
]
