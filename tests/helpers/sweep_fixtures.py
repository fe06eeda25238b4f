"""A small MLflow store holding one sweep as `python -m gnnbench -m ...` records it.

Built directly with MlflowClient (no partitioning, no training), for the report and notebook tests:
a parent run, a grid of child jobs over partitioner x p x sync_interval x num_gpus, one job that
FAILED and was re-run, one that only FAILED, an older sweep and a run outside any sweep.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

EXPERIMENT = "gnnbench"
SWEEP_ID = "00c0ffee00c0ffee"
OLD_SWEEP_ID = "0000000000000001"
PARTITIONERS = ("spring", "hash")
PS = (2, 4, 8)
SYNC_INTERVALS = (1, 4)
NUM_GPUS = (1, 2)
FAILED_JOB = ("hash", 8, 4, 2)  # (partitioner, p, sync_interval, num_gpus): only a FAILED run
RERUN_JOB = ("spring", 2, 1, 1)  # FAILED first, FINISHED on the re-run
T0 = 1_700_000_000_000  # ms; every run gets its own, later start time


@dataclass
class SmallSweep:
    tracking_uri: str
    experiment: str
    sweep_id: str
    parent_run_id: str
    jobs: int  # distinct axes combinations in the sweep


def expected_metrics(partitioner: str, p: int, sync: int, gpus: int, training: bool) -> dict:
    """The metrics the store holds for one FINISHED job (tests compare against these)."""
    base = 0.1 if partitioner == "spring" else 0.3
    metrics = {
        "replication_factor": 1.0 + base * p,
        "edge_cut": min(0.9, base * p / 2),
        "vertex_balance": 1.02,
        "partition_time_s": 0.5 * p,
        "partition_peak_mb": (40.0 if partitioner == "spring" else 4.0) + p,
        "partition_rss_mb": 300.0 + p,
    }
    if training:
        metrics |= {
            "epoch_time_s": 2.0 * (1 + base) / gpus + 0.01 * p,
            "compute_time_s": 1.5 * (1 + base) / gpus,
            "sync_time_s": 0.1 * gpus / sync,
            "val_f1_micro": 0.82 - 0.01 * sync - base / 10,
            "test_f1_micro": 0.80 - 0.01 * sync - base / 10,
            "test_f1_macro": 0.75 - 0.01 * sync - base / 10,
        }
    return metrics


def _params(partitioner: str, p: int, sync: int, gpus: int, training: bool) -> dict:
    return {
        "dataset.name": "synthetic",
        "partitioner.name": partitioner,
        "p": str(p),
        "sync_interval": str(sync),
        "num_gpus": str(gpus),
        "train.mode": "model_avg" if training else "none",
        "model.name": "sage",
        "seed": "0",
    }


def build_small_sweep(
    root: Path, training: bool = True, sync_intervals: tuple = SYNC_INTERVALS
) -> SmallSweep:
    """Write the store to root/mlflow.db (artifacts under root/artifacts) and describe it;
    `sync_intervals` narrows that axis (one value: an axis the sweep did not vary)."""
    import mlflow
    from mlflow.entities import Metric, Param

    root = Path(root).resolve()
    root.mkdir(parents=True, exist_ok=True)
    uri = f"sqlite:///{root / 'mlflow.db'}"
    client = mlflow.MlflowClient(tracking_uri=uri)
    experiment_id = client.create_experiment(
        EXPERIMENT, artifact_location=(root / "artifacts").as_uri()
    )
    clock = iter(range(T0, T0 + 10_000_000, 1000))

    def job(sweep_id: str, parent: str | None, axes: tuple, status: str) -> str:
        partitioner, p, sync, gpus = axes
        tags = {"gnnbench.role": "job", "run_key": f"key-{partitioner}-{p}-{sync}-{gpus}"}
        if parent:
            tags |= {"sweep_id": sweep_id, "mlflow.parentRunId": parent}
        if status == "FAILED":
            tags |= {"error_type": "DataError", "error": f"edges.bin: truncated (p={p})"}
        run = client.create_run(
            experiment_id,
            start_time=next(clock),
            tags=tags,
            run_name=f"synthetic-{partitioner}-p{p}",
        )
        params = _params(*axes, training)
        metrics = expected_metrics(*axes, training) if status == "FINISHED" else {}
        now = next(clock)
        client.log_batch(
            run.info.run_id,
            metrics=[Metric(k, v, now, 0) for k, v in metrics.items()],
            params=[Param(k, v) for k, v in params.items()],
        )
        client.set_terminated(run.info.run_id, status, end_time=next(clock))
        return run.info.run_id

    def parent_run(sweep_id: str, overrides: str) -> str:
        run = client.create_run(
            experiment_id,
            start_time=next(clock),
            tags={"sweep_id": sweep_id, "gnnbench.role": "parent"},
            run_name=f"sweep-{sweep_id}",
        )
        client.log_param(run.info.run_id, "overrides", overrides)
        return run.info.run_id

    # An older sweep and a lone run: neither belongs in the report of the latest sweep.
    old = parent_run(OLD_SWEEP_ID, "partitioner=grem p=16")
    job(OLD_SWEEP_ID, old, ("grem", 16, 1, 1), "FINISHED")
    client.set_terminated(old, "FINISHED")
    job("", None, ("ldg", 2, 1, 1), "FINISHED")

    train = "" if training else " train=none"
    syncs = ",".join(map(str, sync_intervals))
    parent = parent_run(
        SWEEP_ID, f"partitioner=spring,hash p=2,4,8 sync_interval={syncs} num_gpus=1,2" + train
    )
    job(SWEEP_ID, parent, RERUN_JOB, "FAILED")
    grid = list(itertools.product(PARTITIONERS, PS, sync_intervals, NUM_GPUS))
    for axes in grid:
        job(SWEEP_ID, parent, axes, "FAILED" if axes == FAILED_JOB else "FINISHED")
    client.set_terminated(parent, "FAILED")
    return SmallSweep(uri, EXPERIMENT, SWEEP_ID, parent, len(grid))
