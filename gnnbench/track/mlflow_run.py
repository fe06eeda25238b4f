"""Stage 4: one MLflow run per job: the flattened config, every metric, the artifacts.

The run is opened when the job starts and closed FINISHED or FAILED (with `error_type` and
`error` tags), so a failing job still leaves a record the dashboard shows.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gnnbench.data.spec import ORIGIN_KEYS
from gnnbench.errors import one_line
from gnnbench.process.atomic import disk_bytes, scratch_directory

if TYPE_CHECKING:
    from gnnbench.spec import JobSpec
    from gnnbench.train.result import TrainResult

log = logging.getLogger(__name__)

PARTITION_METRICS = (
    "replication_factor",
    "edge_cut",
    "vertex_balance",
    "vertex_balance_bound",
    "edge_balance",
    "train_balance",
    "partition_time_s",
    "partition_peak_mb",
    "partition_rss_mb",
    "partition_load_1m",
    # the in-memory baselines again, loading node features as their users do (docs/design.md)
    "partition_with_features_time_s",
    "partition_with_features_peak_mb",
    "partition_with_features_rss_mb",
    "gnn_ready_time_s",
    "gnn_ready_peak_mb",
    "gnn_ready_rss_mb",
    "gnn_ready_route_s",
    "gnn_ready_structure_s",
    "gnn_ready_rows_s",
    "passes",
)
TRAIN_METRICS = (
    "epoch_time_s", "compute_time_s", "sync_time_s", "sync_wait_s", "sync_count", "train_nodes_per_epoch", "computation_cost",
    "batch_wait_s", "gpu_peak_mb", "val_f1_micro", "test_f1_micro", "test_f1_macro",
    "train_peak_rss_mb", "train_rss_sum_mb", "eval_peak_rss_mb", "prepare_time_s", "load_time_s", "turn_load_time_s", "eval_time_s",
    "bytes_read_mb", "eval_bytes_read_mb", "largest_batch_nodes", "computation_cost_s",
)  # fmt: skip
# The contract other tools read (issue 2's metric names), in the order a table shows them.
HEADLINE_METRICS = (
    "replication_factor",
    "edge_cut",
    "vertex_balance",
    "partition_time_s",
    "partition_peak_mb",
    "partition_rss_mb",
    "epoch_time_s",
    "sync_time_s",
    "val_f1_micro",
    "test_f1_micro",
    "test_f1_macro",
)
ARTIFACTS = ("partition_flamegraph.html", "gnn_ready_flamegraph.html")


def job_params(config: Mapping[str, Any]) -> dict[str, Any]:
    """A job's parameters as its run logs them: the flattened config, less where it logs and
    where its inputs come from (data/spec.py's ORIGIN_KEYS)."""
    return {
        key: value
        for key, value in flatten(config).items()
        if not key.startswith("tracking.") and key not in ORIGIN_KEYS
    }


def flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested config -> {"a.b": value}; lists are kept as their JSON text."""
    flat: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten(value, f"{name}."))
        elif isinstance(value, list | tuple):
            flat[name] = json.dumps(list(value))
        else:
            flat[name] = value
    return flat


class RunLogger:
    """Thin wrapper over the active MLflow run, one method per stage product."""

    def __init__(self, mlflow_module, run_id: str):
        self.mlflow = mlflow_module
        self.run_id = run_id

    def log_dataset(self, meta: Mapping[str, Any]) -> None:
        keys = ("num_nodes", "num_edges", "feature_dim", "num_classes", "fingerprint")
        self.mlflow.log_params({f"graph.{key}": meta[key] for key in keys if key in meta})
        # the import's own figures (time, memory, repaired rows) are metrics, comparable across runs
        figures = ("import_time_s", "import_peak_mb", "import_rss_mb", "nonfinite_features")
        metrics = {
            key: float(meta[key]) for key in figures if isinstance(meta.get(key), int | float)
        }
        if metrics:
            self.mlflow.log_metrics(metrics)

    def log_disk(self, name: str, directory: Path, features_file: str | None = None) -> None:
        """`<name>_disk_mb`: the bytes of every file under a store or book directory (what it
        holds on disk), and `<name>_features_mb` for its feature file when it has one."""
        directory = Path(directory)
        metrics = {f"{name}_disk_mb": disk_bytes(directory) / 2**20}
        if features_file and (directory / features_file).is_file():
            metrics[f"{name}_features_mb"] = (directory / features_file).stat().st_size / 2**20
        self.mlflow.log_metrics(metrics)

    def log_auto_p(self, choice: Mapping[str, Any]) -> None:
        """p=auto: the chosen number of partitions (metric num_parts) and the rule's inputs."""
        metrics = {key: float(v) for key, v in choice.items() if isinstance(v, int | float)}
        metrics["num_parts"] = metrics.pop("p")
        self.mlflow.log_metrics(metrics)
        self.mlflow.set_tag("auto_p_memory_source", choice["auto_p_memory_source"])

    def log_partition(
        self, book_dir: Path, metrics: Mapping[str, Any], stats: Mapping[str, Any], cached: bool
    ) -> None:
        values = {key: float(metrics[key]) for key in PARTITION_METRICS if key in metrics}
        values.update(
            {key: float(value) for key, value in stats.items() if isinstance(value, int | float)}
        )
        self.mlflow.log_metrics(values)
        self.mlflow.set_tags({"partition_cached": str(cached), "partition_book": str(book_dir)})
        self.log_json("partition_metrics.json", {"metrics": dict(metrics), "stats": dict(stats)})
        for name in ARTIFACTS:
            if (Path(book_dir) / name).is_file():
                self.mlflow.log_artifact(str(Path(book_dir) / name))

    def log_training(self, training: TrainResult) -> None:
        """The training result: curves per epoch, the summary metrics, training.json."""
        from mlflow.entities import Metric

        result = training.as_dict()
        history = result.get("history", [])
        now = int(time.time() * 1000)
        curves = [Metric("train_loss", e["train_loss"], now, e["epoch"]) for e in history]
        curves += [
            Metric("val_f1_micro", e["val_f1_micro"], now, e["epoch"])
            for e in history
            if e.get("val_f1_micro") is not None
        ]
        # The summary values are logged at the last step, so the dashboard's "latest" value of
        # val_f1_micro is the best validation F1 (the point test F1 is reported at).
        last_step = history[-1]["epoch"] if history else 0
        # OGB's metric and CM-GCN's cost-model constants
        logged = [
            *TRAIN_METRICS,
            *(k for k in result if "_ogb_" in k or k.startswith("cost_model_")),
        ]
        summary = [
            Metric(key, float(result[key]), now + 1, last_step)
            for key in logged
            if result.get(key) is not None
        ]
        self.mlflow.MlflowClient().log_batch(self.run_id, metrics=curves + summary)
        extra = {k: v for k, v in result.items() if k not in logged and k != "history"}
        self.log_json("training.json", {**extra, "history": history})

    def set_tags(self, tags: Mapping[str, str]) -> None:
        self.mlflow.set_tags(dict(tags))

    def log_json(self, name: str, payload: Any) -> None:
        with scratch_directory("artifact") as scratch:
            path = Path(scratch) / name
            path.write_text(json.dumps(payload, indent=2, default=str))
            self.mlflow.log_artifact(str(path))

    def log_text(self, name: str, text: str) -> None:
        self.mlflow.log_text(text, name)


NAMED_AXES = ("dataset", "dataset.name", "partitioner", "partitioner.name", "p")
# The partitioner config file a job chose where it is a preset of another partitioner
# (partitioner=quotient_best runs `quotient`): the run's tag, its name and its report rows show it
PRESET_TAG = "partitioner.preset"


def run_name(
    job: JobSpec, config: Mapping[str, Any] | None = None, preset: str | None = None
) -> str:
    """`<dataset>-<partitioner>-p<p>`, e.g. cora-spring-p4 or cora-hash-pauto (a preset's name
    in place of its partitioner's), then in a sweep the job's value of each other axis the sweep
    varies (cora-spring-p4-seed=1), so that the names of a sweep's runs differ."""
    name = f"{job.data.name}-{preset or job.partition.name}-p{job.p}"
    sweep = job.tracking.sweep
    if sweep is None or config is None:
        return name
    flat = flatten(config)
    for axis in sweep.axes:
        if axis not in NAMED_AXES:
            # a config group's axis (train=, model=) shows its choice: train.mode, model.name
            value = next(
                (flat[k] for k in (axis, f"{axis}.name", f"{axis}.mode") if k in flat), "?"
            )
            name += f"-{axis}={value}"
    return name


@contextmanager
def mlflow_run(
    config: Mapping[str, Any],
    resolved_yaml: str,
    tags: Mapping[str, str] | None = None,
    *,
    job: JobSpec,
) -> Iterator[RunLogger]:
    """Open a run in the job's store; end it FINISHED, or FAILED with the error as tags.

    `config` (the composed job config) is logged as the run's params, `tags` carries the sweep's
    bookkeeping (sweep_id, run_key); a sweep's job is started as a child of the sweep's parent.
    A tracking server that stops answering ends the job in one line (TrackingError).
    """
    from gnnbench.track.store import blame_store

    with blame_store(job.tracking.uri), _run(config, resolved_yaml, tags, job=job) as logger:
        yield logger


@contextmanager
def _run(
    config: Mapping[str, Any], resolved_yaml: str, tags: Mapping[str, str] | None, *, job: JobSpec
) -> Iterator[RunLogger]:
    import mlflow

    from gnnbench.track.machine import machine_tags
    from gnnbench.track.store import (
        blame_lost_server,
        open_experiment,
        process_tags,
        use_tracking_uri,
    )

    _, experiment_id = open_experiment(job.tracking.uri, job.tracking.experiment)
    use_tracking_uri(job.tracking.uri)
    sweep = job.tracking.sweep
    active = mlflow.start_run(
        experiment_id=experiment_id,
        run_name=run_name(job, config, (tags or {}).get(PRESET_TAG)),
        parent_run_id=sweep.parent_run_id if sweep else None,
        tags={**(tags or {}), **process_tags(), **machine_tags()},
    )
    status = "FAILED"
    try:
        logger = RunLogger(mlflow, active.info.run_id)
        mlflow.log_params(job_params(config))
        logger.log_text("config.yaml", resolved_yaml)
        try:
            yield logger
        except BaseException as exc:
            # Ctrl-C / SIGTERM (gnnbench.errors.Interrupted) stop the run: KILLED, not FAILED
            status = "KILLED" if isinstance(exc, KeyboardInterrupt) else "FAILED"
            blame_lost_server(job.tracking.uri, exc)  # a lost server: nowhere to record it
            _record_failure(mlflow, logger, exc)
            raise
        status = "FINISHED"
    finally:
        mlflow.end_run(status=status)


def record_unstarted_failure(
    config: Mapping[str, Any], tags: Mapping[str, str], name: str, exc: BaseException
) -> str:
    """A sweep's job that failed before its run opened (its config check, its run key): a FAILED
    child of the sweep's parent with `error_type` and `error`, so the sweep counts it as every
    other failure. Returns the run id."""
    from mlflow.entities import Param

    from gnnbench.track.machine import machine_tags
    from gnnbench.track.store import open_experiment, process_tags
    from gnnbench.tracking_spec import TrackingSpec

    tracking = TrackingSpec.from_config(config["tracking"])
    client, experiment_id = open_experiment(tracking.uri, tracking.experiment)
    run_tags = {**tags, **process_tags(), **machine_tags(), "error_type": type(exc).__name__,
                "error": one_line(exc)}  # fmt: skip
    if tracking.sweep is not None:
        run_tags.update(
            {
                "sweep_id": tracking.sweep.sweep_id,
                "mlflow.parentRunId": tracking.sweep.parent_run_id,
            }
        )
    run = client.create_run(experiment_id, run_name=name, tags=run_tags)
    params = [Param(key, str(value)[:6000]) for key, value in job_params(config).items()]
    client.log_batch(run.info.run_id, params=params)
    client.log_text(run.info.run_id, error_log(exc), "error.log")
    client.set_terminated(run.info.run_id, "FAILED")
    return run.info.run_id


def _record_failure(mlflow, logger: RunLogger, exc: BaseException) -> None:
    """The error as the run's tags (error_type, error) and its stack as error.log."""
    mlflow.set_tags({"error_type": type(exc).__name__, "error": one_line(exc)})
    if getattr(exc, "metrics", None):  # e.g. the peak an out-of-memory baseline reached
        mlflow.log_metrics(exc.metrics)
    try:  # the console shows one line only; a failing upload must not hide the error
        logger.log_text("error.log", error_log(exc))
    except Exception as upload:
        log.warning("error.log not logged: %s", one_line(upload))
    try:  # tells __main__ the stack is kept, so it prints one line
        exc.gnnbench_run_id = logger.run_id
    except AttributeError:
        pass


def error_log(exc: BaseException) -> str:
    """The failure's full stack, and a failed training rank's own (`worker_traceback`)."""
    import traceback

    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    worker = getattr(exc, "worker_traceback", None)
    return f"{text}\n{worker}" if worker else text
