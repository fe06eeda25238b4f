"""One rank's place among the training ranks: its rank, device and the collectives it joins.

`distributed` comes from num_gpus, not dist.is_initialized(): a torchrun sweep keeps its process
group between jobs, and a centralized job then runs on rank 0 alone, outside it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class RankGroup:
    """This rank and its communication group; on one rank every collective returns its input."""

    rank: int
    num_gpus: int
    device: torch.device

    @property
    def distributed(self) -> bool:
        return self.num_gpus > 1

    def all_reduce(self, tensor: torch.Tensor, op=None) -> torch.Tensor:
        """All-reduce on this rank's device (NCCL needs CUDA tensors); result back on the CPU."""
        if not self.distributed:
            return tensor
        on_device = tensor.to(self.device)
        dist.all_reduce(on_device, op=op or dist.ReduceOp.SUM)
        return on_device.cpu()

    def gather_objects(self, value: Any) -> list[Any]:
        """Every rank's `value`, in rank order."""
        if not self.distributed:
            return [value]
        everyone: list = [None] * self.num_gpus
        dist.all_gather_object(everyone, value)
        return everyone

    def wait_for_device(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def wait_for_ranks(self) -> float:
        """Seconds until every rank reaches this point: the time a sync spends waiting for the
        slowest rank, kept apart from the all-reduce that follows (the transfer itself)."""
        self.wait_for_device()
        started = time.perf_counter()
        if self.distributed:  # NCCL's barrier must be told this rank's device
            cuda = self.device.type == "cuda"
            dist.barrier(device_ids=[self.device.index or 0] if cuda else None)
        return time.perf_counter() - started

    def gpu_peak_mb(self) -> float | None:
        """The largest rank's peak of allocated CUDA tensors; None on the CPU."""
        if self.device.type != "cuda":
            return None
        peak = torch.tensor([torch.cuda.max_memory_allocated(self.device) / 2**20])
        return float(self.all_reduce(peak, dist.ReduceOp.MAX)[0])
