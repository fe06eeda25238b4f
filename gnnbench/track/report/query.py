"""Reading runs back from an MLflow store: the public API of the report, the scripts and the
notebook (open a store, find an experiment, search all its runs, load one sweep)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gnnbench.errors import GnnbenchError
from gnnbench.schema import TrackingKeys
from gnnbench.track.mlflow_run import HEADLINE_METRICS, PRESET_TAG
from gnnbench.track.store import HOST_TAG
from gnnbench.track.tags import (
    BOOKKEEPING_ROLES,
    JOB,
    PARENT,
    ROLE_TAG,
    SKIPPED_TAG,
    role_filter,
    skipped_aliases,
)

# On a job's run: the run keys earlier versions gave the same job, comma-separated (run_keys)
ALIASES_TAG = "run_key_aliases"

if TYPE_CHECKING:
    from mlflow import MlflowClient

DEFAULT_AXES = ("dataset.name", "partitioner.name", "p")
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
# A sweep's columns: the headline figures, then what explains a job's time (the epoch's compute
# beside its wall clock, an evaluation's seconds, the job's own wall clock from its run's start
# to its end)
SWEEP_METRICS = (*HEADLINE_METRICS, "compute_time_s", "eval_time_s")
JOB_WALL = "job_wall_s"
STARTED, LOAD = "started_ms", "partition_load_1m"  # when and under what load a run was measured


def is_bookkeeping(run) -> bool:
    return run.data.tags.get(ROLE_TAG) in BOOKKEEPING_ROLES


# The host a job ran on (its `gnnbench.host` tag): the first axis of a sweep spanning machines,
# so the report groups its rows by machine.
MACHINE = "machine"


@dataclass
class Sweep:
    """One sweep as the report sees it: the parent run and one row per job (its newest run)."""

    sweep_id: str
    parent_run_id: str
    overrides: str
    status: str
    rows: list[dict] = field(default_factory=list)
    axes: list[str] = field(default_factory=list)
    tracking_uri: str = ""
    experiment: str = ""


def open_store(tracking_uri: str) -> MlflowClient:
    """A client of an existing store (MLflow would create an empty SQLite file for a wrong path)."""
    import mlflow

    from gnnbench.track.store import check_store, sqlite_path, with_busy_timeout

    path = sqlite_path(tracking_uri)
    if path is not None and not path.is_file():
        raise GnnbenchError(f"{tracking_uri}: no MLflow store at {path.resolve()}")
    check_store(tracking_uri)  # a server that answers; a file that is an MLflow store
    return mlflow.MlflowClient(tracking_uri=with_busy_timeout(tracking_uri))


def find_experiment(client, experiment: str, tracking_uri: str) -> str:
    """The id of the named experiment; a one-line error naming the store when it is absent."""
    found = client.get_experiment_by_name(experiment)
    if found is None:
        raise GnnbenchError(f"no experiment '{experiment}' in {tracking_uri}")
    return found.experiment_id


def search_runs(
    client, experiment_id: str, filter_string: str, max_results: int | None = None
) -> list:
    """Every run matching the filter, newest first (MLflow pages at 1000 runs)."""
    runs: list = []
    token = None
    while True:
        page = client.search_runs(
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


def experiment_runs(tracking_uri: str, experiment: str, filter_string: str = "") -> list:
    """Every run of an experiment of an existing store matching the filter, newest first."""
    client = open_store(tracking_uri)
    return search_runs(client, find_experiment(client, experiment, tracking_uri), filter_string)


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def find_parent(client, experiment_id: str, sweep_id: str | None, tracking_uri: str = ""):
    """The sweep's parent run; the most recently started parent when sweep_id is None."""
    where = role_filter(PARENT)
    if sweep_id:
        where += f" and tags.sweep_id = {_quote(sweep_id)}"
    found = search_runs(client, experiment_id, where, max_results=1)
    if not found:
        what = f"sweep '{sweep_id}'" if sweep_id else "sweep"
        raise GnnbenchError(f"no parent run of a {what} in {tracking_uri or 'the store'}")
    return found[0]


def key_aliases(runs: Iterable) -> dict[str, str]:
    """{older run key: run key} from the runs' ALIASES_TAG (the keys earlier versions gave their
    job, gnnbench.identity.run_keys)."""
    return {
        alias: run.data.tags["run_key"]
        for run in runs
        if "run_key" in run.data.tags
        for alias in run.data.tags.get(ALIASES_TAG, "").split(",")
        if alias
    }


def job_of(run, aliases: Mapping[str, str]) -> str:
    """A run's job: its run key, an older one mapped to today's; a run without one stands alone."""
    key = run.data.tags.get("run_key", run.info.run_id)
    return aliases.get(key, key)


def newest_per_job(runs: Iterable, aliases: Mapping[str, str] | None = None) -> list:
    """The newest run of each job (job_of, with the runs' own aliases and `aliases`)."""
    runs = sorted(runs, key=lambda run: run.info.start_time or 0, reverse=True)
    every_alias = {**key_aliases(runs), **(aliases or {})}
    newest: dict[str, Any] = {}
    for run in runs:
        newest.setdefault(job_of(run, every_alias), run)
    return list(newest.values())


def skipped_runs(client, parent) -> list:
    """The FINISHED runs the sweep's jobs repeated, where resume skipped them (tags
    `skipped.<run_key>` on the parent); a run deleted since is left out."""
    from mlflow.exceptions import MlflowException

    found = []
    for tag, run_id in parent.data.tags.items():
        if tag.startswith(SKIPPED_TAG):
            try:
                found.append(client.get_run(run_id))
            except MlflowException:
                continue
    return found


def run_row(run, metrics: Sequence[str] = SWEEP_METRICS) -> dict:
    """A job as a flat row: run id, status, axes (param text), metrics (None if absent), error."""
    row: dict[str, Any] = {"run_id": run.info.run_id, "status": run.info.status}
    row[MACHINE] = run.data.tags.get(HOST_TAG)
    row.update({axis: run.data.params.get(axis) for axis in AXES})
    if run.data.tags.get(PRESET_TAG):  # quotient_best and quotient_multilevel, not two "quotient"
        row["partitioner.name"] = run.data.tags[PRESET_TAG]
    row.update({metric: run.data.metrics.get(metric) for metric in metrics})
    row = read_epoch_meter({**row, "compute_time_s": run.data.metrics.get("compute_time_s")})
    started, ended = run.info.start_time, run.info.end_time
    row[JOB_WALL] = (ended - started) / 1000 if ended and started else None
    row[STARTED] = started
    row[LOAD] = run.data.metrics.get(LOAD)
    error = run.data.tags.get("error")
    if error is None and run.info.status != "FINISHED":
        error = run.data.tags.get("error_type")
    row["error"] = error
    row["balance_violation"] = run.data.tags.get("balance_violation")
    return row


MEASURED = "measured"  # a reused row's date and load: it was not measured with the others


def measured_at(row: dict) -> str:
    """`2026-11-27 19:40 UTC, load 1.3`: when a run started and the 1-minute load average its
    partition stage saw (partition_load_1m; absent for runs from before it)."""
    import datetime

    when = datetime.datetime.fromtimestamp(row[STARTED] / 1000, datetime.UTC)
    text = when.strftime("%Y-%m-%d %H:%M UTC")
    return text if row.get(LOAD) is None else f"{text}, load {row[LOAD]:.1f}"


def swept_axes(rows: Sequence[dict], candidates: Sequence[str] = AXES) -> list[str]:
    """The candidate axes whose values differ across rows; dataset, partitioner, p if none do."""
    varying = [axis for axis in candidates if len({row.get(axis) for row in rows}) > 1]
    return varying or [axis for axis in DEFAULT_AXES if axis in candidates]


def load_sweep(
    tracking_uri: str, experiment: str = TrackingKeys.experiment, sweep_id: str | None = None
) -> Sweep:
    """Read one sweep (the latest when sweep_id is None): its parent and its jobs' rows."""
    client = open_store(tracking_uri)
    experiment_id = find_experiment(client, experiment, tracking_uri)
    parent = find_parent(client, experiment_id, sweep_id, tracking_uri)
    sweep_id = parent.data.tags["sweep_id"]
    children = search_runs(
        client,
        experiment_id,
        f"tags.sweep_id = {_quote(sweep_id)} and {role_filter(JOB)}",
    )
    own = {run.info.run_id for run in children}
    others = [run for run in skipped_runs(client, parent) if run.info.run_id not in own]
    jobs = newest_per_job([*children, *others], skipped_aliases(parent.data.tags))
    rows = [run_row(run) for run in jobs]
    outside = {run.info.run_id for run in others}
    for row in rows:
        row["skipped"] = row["run_id"] in outside
        row[MEASURED] = measured_at(row) if row["skipped"] else None
    axes = swept_axes(rows, (MACHINE, *AXES))
    rows.sort(key=lambda row: tuple(sort_key(row.get(axis)) for axis in axes))
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


def sort_key(value: Any) -> tuple:
    """Orders param text numerically where it is a number, after that as text."""
    text = "" if value is None else str(value)
    as_number = number(text)
    return (0, as_number, "") if as_number is not None else (1, 0, text)


def number(value: Any) -> float | int | None:
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


def one_meter_peaks(
    frame,
    partitioner: str = "partitioner.name",
    structure: str = "partition_peak_mb",
    features: str = "partition_with_features_peak_mb",
):
    """A pandas frame of runs with the in-memory baselines' runs from before the one meter
    (docs/design.md, "Metrics") read right: a baseline that reports a with-features figure
    (its partitioner's trait `with_features_figures`) but logged none held the features in
    its `structure` peak, which therefore moves to `features`."""
    from gnnbench.partition.base import PARTITIONERS, partitioner_traits

    frame = frame.copy()
    if features not in frame:
        frame[features] = math.nan
    if structure not in frame:
        return frame
    names = [n for n in PARTITIONERS.names() if partitioner_traits(n).with_features_figures]
    old = frame[partitioner].isin(names) & frame[features].isna()
    frame.loc[old, features] = frame.loc[old, structure]
    frame.loc[old, structure] = math.nan
    return frame


# Runs logged before the wall-clock epoch (docs/design.md, "Metrics") have no compute_time_s: their
# epoch_time_s was the slowest worker's compute alone. Read them as that, with no wall clock.
OLD_EPOCH_METER = "compute only (a run from before the wall-clock epoch)"


def read_epoch_meter(row: dict) -> dict:
    """A run's row with a figure from before the wall-clock epoch read right: its epoch_time_s
    moves to compute_time_s, epoch_time_s becomes None and `epoch_meter` says why."""
    if row.get("epoch_time_s") is None or row.get("compute_time_s") is not None:
        return row
    return {**row, "compute_time_s": row["epoch_time_s"], "epoch_time_s": None,
            "epoch_meter": OLD_EPOCH_METER}  # fmt: skip


def wall_clock_epochs(frame):
    """read_epoch_meter over a pandas frame of runs (a column per metric)."""
    if "epoch_time_s" not in frame:
        return frame
    frame = frame.copy()
    if "compute_time_s" not in frame:
        frame["compute_time_s"] = math.nan
    old = frame["epoch_time_s"].notna() & frame["compute_time_s"].isna()
    frame.loc[old, "compute_time_s"] = frame.loc[old, "epoch_time_s"]
    frame.loc[old, "epoch_time_s"] = math.nan
    return frame
