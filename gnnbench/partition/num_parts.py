"""`p=auto`: SDT-GNN's rule for the number of partitions from the memory budget of one worker.

S is what the workers must hold in all (the edge list plus the feature matrix, in bytes); each
worker has M bytes of host memory (`train.worker_mem_gb`) and keeps T = compute_mem_fraction * M
for computation, so M - T holds graph data. If the whole graph fits the workers' data share,
p = num_gpus (one partition each); otherwise p = ceil(h * S / (M - T)), and the workers train those
partitions in turn, holding h of them at a time: 1, or 2 with train.prefetch_partitions (the next
one loads while the current one trains).

M is host memory on CUDA too: a worker's resident partition stays in host memory (its sampler
reads it there) and only each batch's rows, the model and its optimizer state go to the GPU. So
the GPU's memory does not size partitions; it is what the batches and the model may use, logged
as `auto_p_gpu_mem_mb` beside the run's `gpu_peak_mb` (README, "What a run does").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gnnbench.errors import ConfigError
from gnnbench.process.torchrun import training_ranks
from gnnbench.schema import TrainKeys, configured


@dataclass(frozen=True)
class MemoryBudget:
    """One worker's host memory for p=auto (train.worker_mem_gb, on CUDA too: the partition
    stays in host memory), train.compute_mem_fraction of it kept for computation, and the device
    the job trains on (whose GPU memory is logged beside it)."""

    device: str
    worker_mem_gb: float
    compute_mem_fraction: float
    partitions_held: int = 1  # 2 with train.prefetch_partitions

    @classmethod
    def from_config(cls, train: Mapping[str, Any]) -> MemoryBudget:
        """The train group's budget keys, checked (one line naming the key)."""
        # The partitioned modes' files pull the budget in (shared/p_auto/memory_budget); train=none
        # composes none (adding it would change a partition-only run's logged params and p=auto
        # run_key), so a train group without the keys (train=none, a plugin mode) gets the defaults.
        memory = configured(TrainKeys, train, "worker_mem_gb")
        fraction = configured(TrainKeys, train, "compute_mem_fraction")
        if not _is_number(memory) or memory <= 0:
            raise ConfigError(f"train.worker_mem_gb: expected a number > 0, got {memory!r}")
        if not _is_number(fraction) or not 0 <= fraction < 1:
            raise ConfigError(
                f"train.compute_mem_fraction: expected a number in [0, 1), got {fraction!r}"
            )
        device = str(configured(TrainKeys, train, "device"))  # train=none has no device key
        held = 2 if configured(TrainKeys, train, "prefetch_partitions") is True else 1
        return cls(
            device=device,
            worker_mem_gb=float(memory),
            compute_mem_fraction=float(fraction),
            partitions_held=held,
        )


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def choose_num_parts(
    data_bytes: int,
    num_gpus: int,
    memory_per_worker: float,
    compute_fraction: float,
    partitions_held: int = 1,
) -> int:
    """SDT-GNN: num_gpus if S <= num_gpus * (M - T), else ceil(h * S / (M - T)) for a worker
    that holds h partitions at a time (one resident for the run needs no second)."""
    if not 0 <= compute_fraction < 1:
        raise ConfigError(
            f"train.compute_mem_fraction: expected a number in [0, 1), got {compute_fraction!r}"
        )
    if memory_per_worker <= 0:
        raise ConfigError(f"train.worker_mem_gb: expected a number > 0, got {memory_per_worker!r}")
    data_share = memory_per_worker * (1 - compute_fraction)  # M - T
    if data_bytes <= num_gpus * data_share:
        return num_gpus
    return math.ceil(partitions_held * data_bytes / data_share)


def memory_per_worker(budget: MemoryBudget) -> tuple[float, str]:
    """(bytes, where from): the host memory of one worker, where its partition lives."""
    return budget.worker_mem_gb * 2**30, "train.worker_mem_gb"


def gpu_memory(budget: MemoryBudget) -> float | None:
    """The first CUDA device's memory when the job trains there (what its batches and model
    may use), else None."""
    import torch

    if budget.device != "cpu" and torch.cuda.is_available():
        return float(torch.cuda.get_device_properties(0).total_memory)
    return None


def graph_bytes(store) -> int:
    """S: what the workers must hold in all, the edge list plus the feature matrix."""
    row_bytes = store.feature_layout().row_bytes if store.has_features else 0
    return store.num_edges * 2 * store.id_dtype.itemsize + store.num_nodes * row_bytes


def auto_num_parts(data_bytes: int, num_gpus: int, budget: MemoryBudget) -> dict[str, Any]:
    """The chosen p and the figures it came from (logged with the run)."""
    memory, source = memory_per_worker(budget)
    fraction = budget.compute_mem_fraction
    gpu = gpu_memory(budget)
    return {
        "p": choose_num_parts(data_bytes, num_gpus, memory, fraction, budget.partitions_held),
        "auto_p_data_mb": data_bytes / 2**20,
        "auto_p_worker_mem_mb": memory / 2**20,
        "auto_p_memory_source": source,
        "auto_p_compute_fraction": fraction,
        "auto_p_partitions_held": budget.partitions_held,
        **({} if gpu is None else {"auto_p_gpu_mem_mb": gpu / 2**20}),
    }


def auto_choice(store, *, num_gpus: int, budget: MemoryBudget) -> dict[str, Any]:
    """p=auto for `store`'s graph and features, on torchrun's ranks when it launched this job
    (they are the workers), else on num_gpus workers."""
    return auto_num_parts(graph_bytes(store), training_ranks(num_gpus), budget)
