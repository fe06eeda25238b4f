"""One benchmark run: data -> partition -> train -> track, each stage reading the last one's product."""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gnnbench.data.datasets import prepare_dataset
from gnnbench.partition.num_parts import auto_choice
from gnnbench.partition.spec import PartitionSpec, vertex_balance_bound
from gnnbench.partition.stage.runner import run_partition_stage
from gnnbench.paths import gnnbench_home
from gnnbench.process.atomic import remove_stale_temporaries
from gnnbench.spec import JobSpec
from gnnbench.track.mlflow_run import mlflow_run
from gnnbench.train.coordinator import coordinator_for, trains_on_partitions
from gnnbench.train.spec import TrainSpec

log = logging.getLogger(__name__)


def _num_parts(job: JobSpec, store, tracker) -> int:
    """job.p, or with p=auto SDT-GNN's choice from the memory budget (logged as num_parts)."""
    if job.p != "auto":
        return job.p
    choice = auto_choice(store, num_gpus=job.num_gpus, budget=job.memory_budget)
    tracker.log_auto_p(choice)
    log.info("p=auto: %d partitions (%.0f MB of graph and features, %.0f MB per worker from %s)",
             choice["p"], choice["auto_p_data_mb"], choice["auto_p_worker_mem_mb"],
             choice["auto_p_memory_source"])  # fmt: skip
    return choice["p"]


def run(
    config: Mapping[str, Any],
    resolved_yaml: str,
    tags: Mapping[str, str] | None = None,
    *,
    job: JobSpec,
) -> dict[str, Any]:
    """Run every stage of one job and return its headline metrics. `job` is `config` parsed
    (JobSpec.from_config, once per job); `config` and `resolved_yaml` are what the run logs."""
    spec = _train_spec(job)  # impossible training configs fail before any data is prepared
    coordinator = coordinator_for(spec)  # who prepares, logs and trains
    with coordinator.records(lambda: mlflow_run(config, resolved_yaml, tags, job=job)) as tracker:
        started = time.perf_counter()
        prepared = coordinator.share(lambda: _data_and_partition(job, tracker))
        trained = coordinator.together(lambda: _train(spec, prepared, tracker))
        return {
            **prepared.summary,
            **trained,
            "wall_s": time.perf_counter() - started,
            "run_id": tracker.run_id,
        }


@dataclass(frozen=True)
class Prepared:
    """What the data and partition stages hand the training ranks (picklable: torchrun's rank 0
    shares it)."""

    store_path: Path
    # None: train=centralized (nothing partitioned), or a capped book removed after logging
    book_path: Path | None
    summary: dict[str, Any]  # the headline partition metrics


def _train_spec(job: JobSpec) -> TrainSpec | None:
    """The job's TrainSpec, checked against p; None for train=none (partition only)."""
    if job.train is None:
        return None
    from gnnbench.train.runner import check_training_config

    check_training_config(spec=job.train, p=None if job.p == "auto" else job.p)
    return job.train


def _train(spec: TrainSpec | None, prepared: Prepared, tracker) -> dict[str, Any]:
    """Stage 3 when the job trains: log the result, return its headline figures."""
    if spec is None:
        return {}
    from gnnbench.train.runner import run_training

    result = run_training(store_path=prepared.store_path, book_path=prepared.book_path, spec=spec)
    tracker.log_training(result)
    log.info(
        "train: %s test micro-F1=%.4f macro-F1=%.4f epoch=%.3fs",
        spec.mode, result.test_f1_micro, result.test_f1_macro, result.epoch_time_s,
    )  # fmt: skip
    return {
        "test_f1_micro": result.test_f1_micro,
        "test_f1_macro": result.test_f1_macro,
        "epoch_time_s": result.epoch_time_s,
    }


def _data_and_partition(job: JobSpec, tracker) -> Prepared:
    """Stages 1 and 2: the GraphStore and the PartitionBook (none for train=centralized, which
    trains the whole graph in one process and so has nothing to partition)."""
    remove_stale_temporaries(gnnbench_home())  # what killed imports and partitions left
    store = prepare_dataset(job.data)
    tracker.log_dataset(store.meta)
    tracker.log_disk("store", store.path, features_file="feat.npy")
    log.info(
        "data: %s, %d nodes, %d edges (%s)",
        store.name,
        store.num_nodes,
        store.num_edges,
        store.path,
    )
    if job.train is not None and not trains_on_partitions(job.train.mode):
        log.info("partition: skipped (train=%s trains the whole graph)", job.train.mode)
        return Prepared(store.path, None, {})
    p = _num_parts(job, store, tracker)
    partitioner = job.partition
    book, cached = run_partition_stage(
        store, partitioner=partitioner, p=p, seed=job.seed, node_data=job.train is not None
    )
    metrics = {**book.metrics, **_balance_bound(partitioner, p, store.num_nodes)}
    tracker.log_partition(book.path, metrics, book.meta.get("stats", {}), cached)
    tracker.log_disk("book", book.path)  # a shared-rows book holds no feature rows of its own
    _flag_balance_violation(tracker, metrics)
    log.info(
        "partition: %s p=%d RF=%.3f edge cut=%.3f peak=%.1f MB%s",
        partitioner.name, p, book.metrics["replication_factor"],
        book.metrics["edge_cut"], book.metrics["partition_peak_mb"], " (cached)" if cached else "",
    )  # fmt: skip
    headline = ("replication_factor", "edge_cut", "vertex_balance")
    summary = {key: book.metrics[key] for key in headline}
    if partitioner.memory_limit_gb is not None and job.train is None:
        # a capped book is rebuilt by every capped run (run_partition_stage) and nothing trains
        # on this one: kept, a partition-only sweep at 1 B edges held 10-25 GB per partitioner
        # and the next one failed for disk (docs/rgg_scale.md)
        shutil.rmtree(book.path, ignore_errors=True)
        log.info("partition: capped book removed (logged; a capped run never reuses it)")
        return Prepared(store.path, None, summary)
    return Prepared(store.path, book.path, summary)


def _balance_bound(partitioner: PartitionSpec, p: int, num_nodes: int) -> dict[str, Any]:
    """The bound this run's config states (not a cached book's: the bound is not in its key)."""
    bound, source = vertex_balance_bound(partitioner, p, num_nodes)
    return {"vertex_balance_bound": bound, "vertex_balance_bound_source": source}


def _flag_balance_violation(tracker, metrics: Mapping[str, Any]) -> None:
    """Tag the run when the owners break the partitioner's stated vertex balance bound."""
    bound = metrics.get("vertex_balance_bound")
    if bound is None or metrics["vertex_balance"] <= bound + 1e-9:
        return
    text = (
        f"vertex_balance {metrics['vertex_balance']:.3f} > {bound:.3f} "
        f"({metrics.get('vertex_balance_bound_source', 'bound')})"
    )
    tracker.set_tags({"balance_violation": text})
    log.warning("partition: balance violation: %s", text)
