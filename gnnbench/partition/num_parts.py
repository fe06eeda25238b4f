"""`p=auto`: SDT-GNN's rule for the number of partitions from the memory budget of one GPU.

S is what the workers must hold in all (the edge list plus the feature matrix, in bytes); each
worker has M bytes (the GPU's memory on CUDA, `train.worker_mem_gb` on the CPU) and keeps
T = compute_mem_fraction * M for computation, so M - T holds graph data. If the whole graph fits
the workers' data share, p = num_gpus (one partition each); otherwise p = ceil(S / (M - T)), and
the workers train those partitions in turn.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from gnnbench.errors import ConfigError

DEFAULT_WORKER_MEM_GB = 4.0
DEFAULT_COMPUTE_FRACTION = 2 / 3


def choose_num_parts(
    data_bytes: int, num_gpus: int, memory_per_worker: float, compute_fraction: float
) -> int:
    """SDT-GNN: num_gpus if S <= num_gpus * (M - T), else ceil(S / (M - T))."""
    if not 0 <= compute_fraction < 1:
        raise ConfigError(
            f"train.compute_mem_fraction: expected a number in [0, 1), got {compute_fraction!r}"
        )
    if memory_per_worker <= 0:
        raise ConfigError(f"train.worker_mem_gb: expected a number > 0, got {memory_per_worker!r}")
    data_share = memory_per_worker * (1 - compute_fraction)  # M - T
    if data_bytes <= num_gpus * data_share:
        return num_gpus
    return math.ceil(data_bytes / data_share)


def memory_per_worker(train: Mapping[str, Any]) -> tuple[float, str]:
    """(bytes, where from): the first CUDA device's memory, else train.worker_mem_gb."""
    import torch

    if train.get("device", "auto") != "cpu" and torch.cuda.is_available():
        return float(torch.cuda.get_device_properties(0).total_memory), "cuda"
    value = train.get("worker_mem_gb", DEFAULT_WORKER_MEM_GB)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"train.worker_mem_gb: expected a number > 0, got {value!r}")
    return float(value) * 2**30, "train.worker_mem_gb"


def auto_num_parts(data_bytes: int, num_gpus: int, train: Mapping[str, Any]) -> dict[str, Any]:
    """The chosen p and the figures it came from (logged with the run)."""
    memory, source = memory_per_worker(train)
    fraction = train.get("compute_mem_fraction", DEFAULT_COMPUTE_FRACTION)
    if isinstance(fraction, bool) or not isinstance(fraction, int | float):
        raise ConfigError(
            f"train.compute_mem_fraction: expected a number in [0, 1), got {fraction!r}"
        )
    p = choose_num_parts(data_bytes, num_gpus, memory, float(fraction))
    return {
        "p": p,
        "auto_p_data_mb": data_bytes / 2**20,
        "auto_p_worker_mem_mb": memory / 2**20,
        "auto_p_memory_source": source,
        "auto_p_compute_fraction": float(fraction),
    }
