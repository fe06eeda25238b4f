"""Sweep bookkeeping: a parent MLflow run per sweep, resume by run key, the failure summary.

A sweep's id is a hash of its overrides, so running the same command again resumes the same sweep:
the same parent run collects the children, jobs whose `run_key` already FINISHED are skipped and
FAILED ones run again (gnnbench.identity defines both ids). The parent is created before any job
starts (which also initialises the MLflow store once, before parallel jobs race on its migrations)
and is closed FINISHED or FAILED from the children's states, whichever launcher ran them.

Each job learns its sweep (id, parent run, swept axes) from its own config, `tracking.sweep`,
which the driver appends to the sweep's overrides before the launcher composes the jobs: a job
run in another process, or on another machine (submitit, SLURM), gets it with its config.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback

from gnnbench.composition import sweep_grid, sweep_overrides
from gnnbench.errors import one_line
from gnnbench.identity import sweep_id_of
from gnnbench.process.torchrun import torchrun_rank
from gnnbench.track.report.query import job_of, key_aliases, newest_per_job
from gnnbench.track.tags import (
    JOB,
    PARENT,
    REUSED,
    ROLE_TAG,
    SKIPPED_ALIASES_TAG,
    SKIPPED_TAG,
    role_filter,
    skipped_aliases,
)
from gnnbench.tracking_spec import SweepIdentity, TrackingSpec

log = logging.getLogger(__name__)

TOTAL_ENV = "GNNBENCH_SWEEP_JOBS"  # the job count, for the "job N of M" line only
BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"


def record_skipped(tracking: TrackingSpec, keys: list[str], finished_run_id: str) -> None:
    """Tag the sweep's parent with a job resume skipped (its run_keys), so the sweep still counts
    and reports it (the tag, not this process's memory: parallel jobs run in other processes)."""
    if tracking.sweep is None:
        return
    parent = tracking.sweep.parent_run_id
    client = SweepTracker(tracking.uri, tracking.experiment).client
    client.set_tag(parent, SKIPPED_TAG + keys[0], finished_run_id)
    if keys[1:]:
        client.set_tag(parent, SKIPPED_ALIASES_TAG + keys[0], ",".join(keys[1:]))
    try:  # a reading aid: a store that refuses it must not fail the skipped job
        link_reused_run(client, tracking.sweep, finished_run_id)
    except Exception as exc:
        log.warning(
            "the reused run %s is not linked into the sweep: %s", finished_run_id, one_line(exc)
        )


REUSED_RUN_TAG = "reused_run_id"


def link_reused_run(client, sweep: SweepIdentity, finished_run_id: str) -> None:
    """A reused job shown inside the sweep that reused it: a FINISHED child of its parent named
    `<run name> (reused)`, with the original's parameters and last metric values (the runs
    table's columns), tags `gnnbench.role=reused` and `reused_run_id`, and a note saying when
    and under what load it was measured. Reports count the original, never this link
    (report.query.is_bookkeeping); a job already a child of this sweep needs none."""
    from mlflow.entities import Metric, Param

    from gnnbench.track.report.query import LOAD, STARTED, measured_at

    original = client.get_run(finished_run_id)
    if original.data.tags.get("mlflow.parentRunId") == sweep.parent_run_id:
        return
    experiment_id = client.get_run(sweep.parent_run_id).info.experiment_id
    where = (f"tags.{REUSED_RUN_TAG} = '{finished_run_id}' and tags.sweep_id = '{sweep.sweep_id}'"
             " and attributes.status = 'FINISHED'")  # fmt: skip
    if client.search_runs([experiment_id], where, max_results=1):
        return  # linked by an earlier resume of this sweep (a link cut short is made again)
    measured = measured_at({STARTED: original.info.start_time,
                            LOAD: original.data.metrics.get(LOAD)})  # fmt: skip
    note = (f"Reused by resume: measured by run {finished_run_id} ({measured}), not with this "
            "sweep's other jobs.")  # fmt: skip
    tags = {ROLE_TAG: REUSED, REUSED_RUN_TAG: finished_run_id, "sweep_id": sweep.sweep_id,
            "mlflow.parentRunId": sweep.parent_run_id, "mlflow.note.content": note}  # fmt: skip
    name = f"{original.info.run_name} (reused)"
    run_id = client.create_run(experiment_id, run_name=name, tags=tags).info.run_id
    now = int(time.time() * 1000)
    metrics = [Metric(k, v, now, 0) for k, v in original.data.metrics.items()]
    params = [Param(k, v) for k, v in original.data.params.items()]
    status = "FAILED"  # a link cut short is no link: the next resume makes it again
    try:
        client.log_batch(run_id, metrics=metrics, params=params)  # MLflow splits it in batches
        status = "FINISHED"
    finally:
        client.set_terminated(run_id, status)


def count_jobs(overrides: list[str], sweeper_params: Mapping[str, Any]) -> int:
    """Number of jobs of a basic-sweeper grid: the product of the comma-separated choices."""
    return math.prod(len(values) for values in sweep_grid(overrides, sweeper_params).values())


def planned_jobs(sweeper: Mapping[str, Any], overrides: list[str]) -> int | None:
    """The sweep's job count where its sweeper fixes it up front (the basic sweeper's grid);
    None for sweepers that choose their jobs as they go (Optuna, Ax, Nevergrad)."""
    if sweeper.get("_target_") != BASIC_SWEEPER:
        return None
    return count_jobs(overrides, dict(sweeper.get("params") or {}))


def sweep_name(overrides: list[str], sweeper_params: Mapping[str, Any]) -> str:
    """`sweep partitioner=spring,grem p=4,8,16`: what the sweep varies (an experiment's axes
    included), the name its parent run is shown by."""
    grid = sweep_grid(overrides, sweeper_params)
    swept = [f"{key}={','.join(values)}" for key, values in grid.items() if len(values) > 1
             and not key.startswith(("hydra", "tracking"))]  # fmt: skip
    experiment = [o for o in overrides if o.startswith("experiment=")]
    return " ".join(["sweep", *experiment, *swept])[:250]  # MLflow's run names stay short


def swept_keys(overrides: list[str], sweeper_params: Mapping[str, Any]) -> tuple[str, ...]:
    """The config keys (or groups) the sweep gives more than one value."""
    return tuple(
        o.key_or_group
        for o in sweep_overrides(overrides, sweeper_params).values()
        if o.is_sweep_override() and not o.key_or_group.startswith("hydra")
    )


class SweepTracker:
    """The parent run of one sweep in one MLflow store."""

    def __init__(self, uri: str, experiment: str):
        from gnnbench.track.store import open_experiment

        self.client, self.experiment_id = open_experiment(uri, experiment)

    def open_parent(self, sweep_id: str, overrides: list[str], name: str) -> str:
        """The sweep's parent run, created on first use and set RUNNING again on a resume."""
        from gnnbench.track.store import process_tags

        existing = self.client.search_runs(
            [self.experiment_id],
            filter_string=f"tags.sweep_id = '{sweep_id}' and {role_filter(PARENT)}",
        )
        if existing:
            run_id = existing[0].info.run_id
            self.client.update_run(run_id, status="RUNNING")
            for key, value in process_tags().items():  # this process keeps it now
                self.client.set_tag(run_id, key, value)
            return run_id
        run = self.client.create_run(
            self.experiment_id,
            run_name=name,
            tags={"sweep_id": sweep_id, ROLE_TAG: PARENT, **process_tags()},
        )
        self.client.log_param(run.info.run_id, "overrides", " ".join(overrides)[:6000])
        return run.info.run_id

    def children(self, sweep_id: str) -> list:
        """Every job run of the sweep."""
        return self.client.search_runs(
            [self.experiment_id],
            filter_string=f"tags.sweep_id = '{sweep_id}' and {role_filter(JOB)}",
        )

    def finished_run(self, keys: list[str]) -> str | None:
        """A FINISHED run tagged with any of a job's run keys (run_keys), if there is one."""
        for key in keys:
            runs = self.client.search_runs(
                [self.experiment_id],
                filter_string=f"tags.run_key = '{key}' and attributes.status = 'FINISHED'",
                max_results=1,
            )
            if runs:
                return runs[0].info.run_id
        return None

    def close_parent(
        self, parent_run_id: str, sweep_id: str, since_ms: int = 0, interrupted: bool = False
    ) -> tuple[list[str], str]:
        """End the parent FINISHED or FAILED from its jobs; return one line per failed job and
        this invocation's counts (jobs started since since_ms, jobs resume skipped, failures)."""
        tags = self.client.get_run(parent_run_id).data.tags
        children = self.children(sweep_id)
        aliases = {**key_aliases(children), **skipped_aliases(tags)}
        latest = newest_per_job(children, aliases)
        ran_now = [run for run in latest if run.info.start_time >= since_ms]
        ran_keys = {job_of(run, aliases) for run in ran_now}
        skipped = {
            tag.removeprefix(SKIPPED_TAG): run_id
            for tag, run_id in tags.items()
            if tag.startswith(SKIPPED_TAG) and tag.removeprefix(SKIPPED_TAG) not in ran_keys
        }
        # a job skipped now FINISHED elsewhere: an older FAILED child of it is no failure
        failed = [
            run
            for run in latest
            if run.info.status != "FINISHED" and job_of(run, aliases) not in skipped
        ]
        status = "KILLED" if interrupted else "FAILED" if failed else "FINISHED"
        self.client.set_terminated(parent_run_id, status)
        finished = sum(run.info.status == "FINISHED" for run in ran_now)
        lines = [
            f"{run.info.run_name}: {run.data.tags.get('error_type', run.info.status)}: "
            f"{run.data.tags.get('error', '')}"
            for run in failed
        ]
        unbalanced = [run.info.run_name for run in latest if "balance_violation" in run.data.tags]
        counts = _counts(finished, list(skipped.values()), len(failed))
        if unbalanced:  # finished, but outside their partitioner's balance bound
            counts += f", {len(unbalanced)} balance violation(s): {', '.join(unbalanced[:5])}"
        return lines, counts


def _counts(finished: int, skipped: list[str], failed: int) -> str:
    """`3 finished, 1 skipped (already FINISHED: <run id>), 0 failed`: at most 5 ids shown."""
    text = f"{finished} finished, {len(skipped)} skipped"
    if skipped:
        shown = skipped[:5] + (["..."] if len(skipped) > 5 else [])
        text += f" (already FINISHED: {', '.join(shown)})"
    return f"{text}, {failed} failed"


class SweepCallback(Callback):
    """Hydra callback: opens the parent before the jobs, closes it and summarises after them."""

    def __init__(self) -> None:
        self.tracker: SweepTracker | None = None
        self.identity: SweepIdentity | None = None  # set while the parent is open
        self.failures: list[str] = []
        self.report_args: tuple | None = None
        self.started_ms = 0  # jobs started since then ran in this invocation
        self.summary = ""  # the end line: counts and where the report is
        self.where_to_look: list[str] = []  # the store and the UI command, printed after it

    def on_multirun_start(self, config, **kwargs) -> None:
        # Hydra turns a callback's exception into a warning and runs the jobs anyway: a sweep
        # whose parent cannot be opened would log orphan runs and exit 0. Record the failure
        # instead; every job (its config has no tracking.sweep) then declines to run and main()
        # exits 2 with this line.
        try:
            self._start(config)
        except Exception as exc:
            SETUP_ERRORS.append(f"sweep could not start: {type(exc).__name__}: {one_line(exc)}")

    def _start(self, config) -> None:
        overrides = list(config.hydra.overrides.task)
        params = dict(config.hydra.sweeper.get("params") or {})
        total = planned_jobs(config.hydra.sweeper, overrides)
        if total is not None:
            os.environ[TOTAL_ENV] = str(total)
        if torchrun_rank():  # rank 0 keeps the sweep's records; this rank only trains
            return
        tracking = TrackingSpec.from_config(config.tracking)
        sweep_id = sweep_id_of(overrides, params, tracking.experiment)
        self.tracker = SweepTracker(tracking.uri, tracking.experiment)
        parent = self.tracker.open_parent(sweep_id, overrides, sweep_name(overrides, params))
        self.identity = SweepIdentity(sweep_id, parent, swept_keys(overrides, params))
        _hand_to_jobs(config, self.identity)
        ACTIVE.append(self)
        self.started_ms = int(time.time() * 1000)
        log.info("sweep %s: %s jobs, parent run %s", sweep_id, total or "?", parent)
        # one place for a sweep's report, where `gnnbench report` writes it too: reports/<sweep id>
        # in the working directory (beside the default store, sqlite:///mlflow.db)
        report_dir = Path("reports").resolve() / sweep_id
        self.report_args = (tracking.uri, tracking.experiment, sweep_id, report_dir)

    def on_multirun_end(self, config, **kwargs) -> None:
        self.close()

    def close(self, interrupted: bool = False) -> None:
        """Close the parent once (also called when a job escaped and Hydra skipped the end hook);
        a sweep stopped by SIGINT / SIGTERM ends KILLED. A store lost on the way is one line."""
        identity, self.identity = self.identity, None
        if self.tracker is None or identity is None:
            return
        sweep_id = identity.sweep_id
        try:
            self.failures, counts = self.tracker.close_parent(
                identity.parent_run_id, sweep_id, self.started_ms, interrupted
            )
        except Exception as exc:
            self.failures = [f"parent run {identity.parent_run_id} not closed: {one_line(exc)}"]
            self.summary = f"sweep {sweep_id}: not closed (resume it with the same command)"
            return
        report = "not written"
        try:  # the report is a reading aid: its failure must not change the sweep's outcome
            from gnnbench.track.report import report_sweep

            report = str(report_sweep(*self.report_args))
        except Exception as exc:
            log.warning("sweep report not written: %s", exc)
        self.summary = f"sweep {sweep_id}: {counts}; report: {report}"
        log.info(self.summary)
        try:
            from gnnbench.track.dashboard import where_to_look

            uri, experiment = self.report_args[:2]
            self.where_to_look = where_to_look(uri, experiment, sweep_id=sweep_id)
        except Exception as exc:  # a reading aid, as the report
            log.warning("where to look: %s", one_line(exc))


def _hand_to_jobs(config, identity: SweepIdentity) -> None:
    """Append `tracking.sweep={...}` to the overrides every job of the sweep is composed from."""
    from omegaconf import read_write

    task = config.hydra.overrides.task
    with read_write(task):
        task.append(identity.as_override())


# The sweeps opened in this (launching) process; __main__ closes any that Hydra left open and
# turns their failures into the exit status.
ACTIVE: list[SweepCallback] = []
SETUP_ERRORS: list[str] = []
# Jobs that failed before their run opened and could not be recorded either (the store refused):
# the sweep's count in MLflow misses them, the exit status must not
UNRECORDED_FAILURES: list[str] = []
