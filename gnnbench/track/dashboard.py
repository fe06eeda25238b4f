"""Where to look after a run or a sweep: the store, the report, and an `mlflow ui` command with the
URL that opens the runs.

MLflow 3's experiment page opens on its GenAI overview (traces, empty panels) unless the URL asks
for the model-training view (`workflowType=machine_learning`); a sweep's URL also filters the runs
table to the sweep's jobs (`searchFilter`). The metric columns a table shows are kept by the
browser, not the URL, so the report (report.md) is where the headline figures sit side by side.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote, urlencode

from gnnbench.track.store import is_server, sqlite_path

UI_PORT = 5000  # `mlflow ui`'s own default


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


def runs_url(base: str, experiment_id: str, search_filter: str | None = None) -> str:
    """The experiment's runs table (the model-training view), filtered when asked."""
    query = {"workflowType": "machine_learning", "compareRunsMode": "TABLE"}
    if search_filter:
        query["searchFilter"] = search_filter
    return f"{base}/#/experiments/{experiment_id}?{urlencode(query, quote_via=quote)}"


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

    experiment_id = find_experiment(open_store(uri), experiment, uri)
    command, base = ui_command(uri)
    lines = [f"MLflow store: {absolute_uri(uri)}, experiment '{experiment}'"]
    if report:
        lines.append(f"report: {report}")
    if sweep_id:
        url = runs_url(base, experiment_id, f"tags.sweep_id = '{sweep_id}'")
    else:
        url = run_url(base, experiment_id, run_id) if run_id else runs_url(base, experiment_id)
    lines.append(f"look at it: {command}, then open {url}" if command else f"open {url}")
    return lines
