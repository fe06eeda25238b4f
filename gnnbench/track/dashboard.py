"""Where to look after a run or a sweep: the store, the report, and an `mlflow ui` command with the
URL that opens the runs.

MLflow 3's experiment page opens on its GenAI overview (traces, empty panels) unless the URL asks
for the model-training view (`workflowType=machine_learning`). The runs table's filter and columns
are not URL parameters the page reads on arrival (a `searchFilter` there is dropped); what it does
read is a *shared view*: `?viewStateShareKey=KEY` opens the view stored as JSON in the experiment
tag `mlflow.sharedViewState.KEY` (what the UI's own "Share" button writes). A sweep's URL opens
one written for it: its jobs only, listed flat (the parent filtered out, the table sorted by run
name) with the headline metrics as columns (tests/test_dashboard.py opens it in Chromium).
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote, urlencode

from gnnbench.track.store import is_server, sqlite_path
from gnnbench.track.tags import PARENT, role_filter

UI_PORT = 5000  # `mlflow ui`'s own default
SHARED_VIEW_TAG = "mlflow.sharedViewState."  # + key: an experiment tag holding a view's JSON
# The columns a sweep's view opens with: what a user compares partitioners and systems by.
# (MLflow shows metric columns in name order; five fit beside the run names on a 1600-pixel screen.)
SWEEP_VIEW_METRICS = ("edge_cut", "epoch_time_s", "partition_peak_mb", "replication_factor",
                      "test_f1_micro")  # fmt: skip
# Sorted by run name, the jobs are listed flat: MLflow folds children under their parent (which
# it fetches even when the filter leaves it out) only while the table is sorted by creation time.
SWEEP_VIEW_ORDER = "tags.`mlflow.runName`"


def absolute_uri(uri: str) -> str:
    """A relative `sqlite:///mlflow.db` made absolute, so the printed command works anywhere."""
    path = sqlite_path(uri)
    return f"sqlite:///{Path(path).resolve()}" if path is not None else uri


def ui_command(uri: str) -> tuple[str | None, str]:
    """(the command that serves the store, or None for a tracking server; the UI's base URL)."""
    if is_server(uri):
        return None, uri.rstrip("/")
    command = f"mlflow ui --backend-store-uri {absolute_uri(uri)} --port {UI_PORT}"
    return command, f"http://127.0.0.1:{UI_PORT}"


def runs_url(base: str, experiment_id: str) -> str:
    """The experiment's runs table (the model-training view)."""
    query = {"workflowType": "machine_learning", "compareRunsMode": "TABLE"}
    return f"{base}/#/experiments/{experiment_id}/runs?{urlencode(query, quote_via=quote)}"


def share_sweep_view(client, experiment_id: str, sweep_id: str) -> str:
    """Store the sweep's view (its jobs, SWEEP_VIEW_METRICS as columns) as a shared view of the
    experiment; its key."""
    key = f"gnnbench-sweep-{sweep_id}"
    view = {
        "searchFilter": f"tags.sweep_id = '{sweep_id}' and {role_filter(PARENT, equal=False)}",
        "selectedColumns": [f"metrics.`{metric}`" for metric in SWEEP_VIEW_METRICS],
        "orderByKey": SWEEP_VIEW_ORDER,
        "orderByAsc": True,
    }
    client.set_experiment_tag(experiment_id, SHARED_VIEW_TAG + key, json.dumps(view))
    return key


def shared_view_url(base: str, experiment_id: str, key: str) -> str:
    query = {"viewStateShareKey": key, "workflowType": "machine_learning"}
    return f"{base}/#/experiments/{experiment_id}/runs?{urlencode(query, quote_via=quote)}"


def run_url(base: str, experiment_id: str, run_id: str) -> str:
    return f"{base}/#/experiments/{experiment_id}/runs/{run_id}"


def where_to_look(
    uri: str,
    experiment: str,
    *,
    run_id: str | None = None,
    sweep_id: str | None = None,
    report: str | None = None,
) -> list[str]:
    """The lines printed at the end of a run (run_id) or a sweep (sweep_id, report)."""
    from gnnbench.track.report.query import find_experiment, open_store

    client = open_store(uri)
    experiment_id = find_experiment(client, experiment, uri)
    command, base = ui_command(uri)
    lines = [f"MLflow store: {absolute_uri(uri)}, experiment '{experiment}'"]
    if report:
        lines.append(f"report: {report}")
    if sweep_id:
        url = shared_view_url(
            base, experiment_id, share_sweep_view(client, experiment_id, sweep_id)
        )
    else:
        url = run_url(base, experiment_id, run_id) if run_id else runs_url(base, experiment_id)
    lines.append(f"look at it: {command}, then open {url}" if command else f"open {url}")
    return lines
