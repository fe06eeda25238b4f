"""`python -m gnnbench`: the Hydra app. Composes the config and runs one job per combination.

Expected mistakes (an unknown dataset, p larger than the graph, a malformed file) end in one line
on stderr and a non-zero exit; in a sweep (`-m`) the failing job is recorded FAILED and the others
go on, and the sweep exits non-zero at the end with the list of failures.

Exit statuses: 0 done; 2 a gnnbench error (config, data, out of memory, a process killed); 1 an
unexpected error (one line; its stack is the run's error.log artifact), or a sweep with failed
jobs; 130 / 143 interrupted by SIGINT / SIGTERM (workers stopped, the run recorded KILLED).
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
from typing import TYPE_CHECKING

from gnnbench.cli import (
    HydraConfigs,
    check_group_choices,
    check_overrides,
    check_shared_keys,
    help_text,
    quiet_libraries,
    replace_mappings,
    take_verbose,
)
from gnnbench.errors import ConfigError, GnnbenchError, Interrupted
from gnnbench.paths import CONF_DIR, CONFIG_NAME
from gnnbench.process.lifecycle import handle_interrupts
from gnnbench.startup import pause_collector, resume_collector

if TYPE_CHECKING:  # imported with the job's modules (_load_job_modules), not at start-up
    from gnnbench.spec import JobSpec

log = logging.getLogger("gnnbench")


def _is_multirun() -> bool:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN


def _sweep_tags(job: JobSpec, keys: list[str]) -> dict[str, str]:
    """The job's identity (run_key, older keys) and its sweep's id (the parent link is set by
    mlflow.start_run(parent_run_id=...), mlflow_run)."""
    from hydra.core.hydra_config import HydraConfig

    from gnnbench.track.mlflow_run import PRESET_TAG

    tags = _identity_tags(keys)
    if job.tracking.sweep is not None:
        tags["sweep_id"] = job.tracking.sweep.sweep_id
    chosen = (
        HydraConfig.get().runtime.choices.get("partitioner") if HydraConfig.initialized() else None
    )
    if chosen and chosen != job.partition.name:  # a preset (quotient_best runs quotient)
        tags[PRESET_TAG] = chosen
    return tags


def _identity_tags(keys: list[str]) -> dict[str, str]:
    from gnnbench.track.report.query import ALIASES_TAG
    from gnnbench.track.tags import JOB, ROLE_TAG

    return {"run_key": keys[0], ALIASES_TAG: ",".join(keys[1:]), ROLE_TAG: JOB}


def _record_unstarted(config: dict, exc: BaseException) -> None:
    """A sweep's job that failed before its MLflow run opened (its config check, its run key, the
    resume lookup) becomes a FAILED child of the sweep's parent, so the sweep counts it and exits
    non-zero; where even that fails, main() still counts it (UNRECORDED_FAILURES)."""
    from hydra.core.hydra_config import HydraConfig

    from gnnbench.config_values import digest
    from gnnbench.errors import one_line
    from gnnbench.identity import run_keys
    from gnnbench.process.torchrun import torchrun_rank
    from gnnbench.track.mlflow_run import record_unstarted_failure
    from gnnbench.track.sweep import UNRECORDED_FAILURES

    if getattr(exc, "gnnbench_run_id", None) or torchrun_rank():  # recorded, or rank 0's to record
        return
    name = " ".join(o for o in HydraConfig.get().overrides.task if not o.startswith("tracking."))
    try:
        keys = run_keys(config)
    except Exception:  # a config its identity cannot digest: the job's overrides stand for it
        keys = [digest(name, 8)]
    try:
        record_unstarted_failure(config, _identity_tags(keys), name, exc)
    except Exception as lost:
        UNRECORDED_FAILURES.append(
            f"{name}: {type(exc).__name__}: {one_line(exc)} (not recorded in MLflow: {one_line(lost)})"
        )


def _already_finished(job: JobSpec, keys: list[str]) -> str | None:
    from mlflow.exceptions import MlflowException

    from gnnbench.errors import TrackingError, one_line
    from gnnbench.track.sweep import SweepTracker

    try:
        return SweepTracker(job.tracking.uri, job.tracking.experiment).finished_run(keys)
    except MlflowException as exc:  # a server that died after the health check: one line
        raise TrackingError(
            f"tracking.uri={job.tracking.uri}: resume could not look the job up ({one_line(exc)})"
        ) from None


def _load_job_modules(cfg) -> None:
    """Import what the job runs on while the garbage collector is still paused (gnnbench.startup);
    MLflow only where this process logs the run (not a torchrun rank > 0)."""
    try:
        import gnnbench.run  # noqa: F401
        from gnnbench.process.torchrun import torchrun_rank
        from gnnbench.track.store import import_tracking

        if not torchrun_rank():
            import_tracking(str(cfg.tracking.uri))
    finally:
        resume_collector()


def _job(cfg) -> dict | None:
    _load_job_modules(cfg)
    from omegaconf import OmegaConf

    from gnnbench.errors import one_line
    from gnnbench.identity import run_keys
    from gnnbench.run import run
    from gnnbench.spec import JobSpec

    config = OmegaConf.to_container(cfg, resolve=True)
    multirun = _is_multirun()
    if multirun and _sweep_not_started(config):  # no parent: run nothing, main() says why
        return None
    try:
        job = JobSpec.from_config(config)  # every key checked once, before any stage runs
        keys = run_keys(config)
        if _nothing_to_do(job, keys, multirun):
            return None
        result = run(config, OmegaConf.to_yaml(cfg, resolve=True), _sweep_tags(job, keys), job=job)
        if not multirun and isinstance(result, dict):
            _print_where_to_look(job, result["run_id"])
        return result
    except GnnbenchError as exc:
        if not multirun:
            print(f"gnnbench: error: {exc}", file=sys.stderr)
            sys.exit(2)
        log.error("job failed: %s", exc)
        _record_unstarted(config, exc)
    except Exception as exc:  # a sweep goes on past any failing job; it is recorded FAILED
        run_id = getattr(exc, "gnnbench_run_id", None)  # set once the run logged its stack
        if not multirun and run_id is None:
            raise  # nowhere else holds the stack: Python prints it
        if not multirun:
            print(f"gnnbench: error: {type(exc).__name__}: {one_line(exc)} (stack: error.log of run {run_id})",
                  file=sys.stderr)  # fmt: skip
            sys.exit(1)
        log.exception("job failed: %s: %s", type(exc).__name__, exc)
        _record_unstarted(config, exc)
    return None


def _print_where_to_look(job: JobSpec, run_id: str) -> None:
    """The end of a single run: its id, the store and the command that shows it."""
    from gnnbench.process.torchrun import torchrun_rank
    from gnnbench.track.dashboard import where_to_look

    if torchrun_rank():  # rank 0 logged it
        return
    print(f"gnnbench: run {run_id} FINISHED", file=sys.stderr)
    try:  # a reading aid: a store that stops answering now must not fail a finished run
        lines = where_to_look(job.tracking.uri, job.tracking.experiment, run_id=run_id)
    except Exception as exc:
        log.warning("where to look: %s", exc)
        return
    for line in lines:
        print(f"  {line}", file=sys.stderr)


def _sweep_not_started(config: dict) -> bool:
    """A sweep's job without its sweep's identity: the driver could not open the parent (a rank
    > 0 of torchrun opens none: rank 0 keeps the records)."""
    from gnnbench.process.torchrun import torchrun_rank

    tracking = config.get("tracking")
    return not torchrun_rank() and isinstance(tracking, dict) and tracking.get("sweep") is None


def _nothing_to_do(job: JobSpec, keys: list[str], multirun: bool) -> bool:
    """Whether this process skips the job: a torchrun rank > 0 when the job does not train on
    partitions (rank 0 runs it alone), or a job that already FINISHED (resume)."""
    from hydra.core.hydra_config import HydraConfig

    from gnnbench.process.torchrun import torchrun_rank
    from gnnbench.track.sweep import TOTAL_ENV
    from gnnbench.train.coordinator import trains_on_partitions

    rank = torchrun_rank()
    mode = job.train.mode if job.train is not None else "none"
    partitioned = rank is not None and trains_on_partitions(mode)
    if rank and not partitioned:
        log.info("torchrun rank %d: train.mode=%s runs on rank 0 alone", rank, mode)
        return True
    if not multirun:
        return False
    number = HydraConfig.get().job.num + 1
    overrides = " ".join(o for o in HydraConfig.get().overrides.task if "tracking.sweep=" not in o)
    log.info("job %d of %s: %s", number, os.environ.get(TOTAL_ENV, "?"), overrides)
    finished = _finished_run(job, keys, rank if partitioned else None)
    if finished:
        log.info("skipped: already FINISHED as run %s (resume=false runs it again)", finished)
        if not rank:  # rank 0 keeps the sweep's records
            from gnnbench.track.sweep import record_skipped

            record_skipped(job.tracking, keys, finished)
    return finished is not None


def _finished_run(job: JobSpec, keys: list[str], rank: int | None) -> str | None:
    """With resume, the FINISHED run this job repeats. For torchrun ranks training on partitions
    (rank not None) rank 0's store decides for all: every rank must run the same jobs, and a rank
    on another machine sees another store."""
    if rank is None:
        return (job.resume and _already_finished(job, keys)) or None
    from gnnbench.train.coordinator import coordinator_for

    coordinator = coordinator_for(job.train)  # joins the process group
    return coordinator.share(lambda: (job.resume and _already_finished(job, keys)) or None)


# `python -m gnnbench NAME ...`: commands beside the run and the sweep, each its module's main(argv)
SUBCOMMANDS = {
    "report": "gnnbench.track.report:main",  # a sweep's report, or an experiment's table
    "server": "gnnbench.track.server:main",  # an MLflow tracking server on a store
    "download": "gnnbench.data.download:main",  # public datasets ahead of their first use
    "baseline": "gnnbench.track.baseline:main",  # save a sweep's figures / check one against them
    "setup": "gnnbench.setup.baseline_envs:main",  # the in-memory METIS baselines' environments
    "wheelhouse": "gnnbench.setup.wheelhouse:main",  # wheels for a machine without a package index
}


def main() -> None:
    """Console entry point (`gnnbench` / `python -m gnnbench`)."""
    import hydra

    from gnnbench.track.sweep import ACTIVE, SETUP_ERRORS, UNRECORDED_FAILURES

    if sys.argv[1:2] and sys.argv[1] in SUBCOMMANDS:  # `gnnbench report ...` and the others
        module, function = SUBCOMMANDS[sys.argv[1]].split(":")
        sys.exit(getattr(importlib.import_module(module), function)(sys.argv[2:]))
    pause_collector()  # until the job's modules are loaded (_load_job_modules)
    sys.argv[1:], verbose = take_verbose(sys.argv[1:])
    if not verbose:
        quiet_libraries()
    try:
        configs = HydraConfigs(sys.argv[1:])
        if {"-h", "--help"} & set(sys.argv[1:]):  # gnnbench's own page; Hydra's is --hydra-help
            print(help_text(configs))
            sys.exit(0)
        check_group_choices(configs)
        check_overrides(configs)
        check_shared_keys(configs)
        sys.argv[1:] = replace_mappings(sys.argv[1:], configs)
    except ConfigError as exc:
        print(f"gnnbench: error: {exc}", file=sys.stderr)
        sys.exit(2)
    app = hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name=CONFIG_NAME)(_job)
    handle_interrupts()  # SIGTERM / SIGINT: workers stopped, the run KILLED, one line
    try:
        try:
            app()
        finally:
            interrupted = isinstance(sys.exc_info()[1], KeyboardInterrupt)
            for sweep in ACTIVE:  # a no-op unless Hydra skipped on_multirun_end
                sweep.close(interrupted=interrupted)  # an interrupted sweep's parent: KILLED
    except Interrupted as exc:
        print(f"gnnbench: {exc}", file=sys.stderr)
        sys.exit(exc.exit_status)
    if SETUP_ERRORS:
        print(f"gnnbench: error: {SETUP_ERRORS[0]}", file=sys.stderr)
        sys.exit(2)
    for sweep in ACTIVE:
        if sweep.summary:
            print(f"gnnbench: {sweep.summary}", file=sys.stderr)
        for line in sweep.where_to_look:
            print(f"  {line}", file=sys.stderr)
    failures = [failure for sweep in ACTIVE for failure in sweep.failures] + UNRECORDED_FAILURES
    if failures:
        print(f"gnnbench: {len(failures)} job(s) failed:", file=sys.stderr)
        for failure in failures:
            print(f"  {failure}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
