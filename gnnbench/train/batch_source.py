"""Where a trainer's mini-batches come from: its own process, or k sampler processes (Armada).

Preparing a batch means sampling its blocks and gathering its features and labels. With
`train.sampler_workers=0` the trainer does it between steps; with k > 0, k forked CPU processes
(torch's DataLoader workers) prepare the batches of the trainer's list ahead of it through a
bounded queue (k x 2 batches in flight). Either way the trainer times how long it waits for each
batch (`batch_wait_s`): with k = 0 that is the whole preparation.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from gnnbench import lifecycle
from gnnbench.train.batching import BatchPlan, computation_cost, induced_batch
from gnnbench.train.sampler import SampledBatch, batch_seed

BATCHES_IN_FLIGHT_PER_SAMPLER = 2


@dataclass
class PreparedBatch:
    """A batch ready for the model: seeds' labels, features of its n_id, blocks (numpy)."""

    seeds: np.ndarray
    x: torch.Tensor
    blocks: list
    target: torch.Tensor
    cost: int


class BatchMaker(Dataset):
    """Prepares the batch a spec names; spec = (partition index, plan, epoch).

    Holds only what sampling needs (samplers, features, labels of this trainer's partitions), so
    the same object runs in the trainer or, inherited by fork, in a sampler process.
    """

    def __init__(self, parts: Sequence[Any], strategy: str, seed: int):
        self.parts = {part.index: part for part in parts}
        self.strategy = strategy
        self.seed = seed
        self._positions: dict[int, np.ndarray] = {}  # per partition, for cluster batches

    def sample(self, part: Any, plan: BatchPlan, epoch: int) -> SampledBatch:
        if plan.region is not None:  # a cluster batch: every neighbour inside its region
            graph = (part.sampler.indptr, part.sampler.indices)
            if part.index not in self._positions:
                self._positions[part.index] = np.full(len(graph[0]) - 1, -1, dtype=np.int64)
            position = self._positions[part.index]
            return induced_batch(*graph, plan, len(part.sampler.fanouts), position)
        if self.strategy == "full":  # global batch: every neighbour in the partition
            return part.full_sampler.sample(plan.seeds, 0)
        return part.sampler.sample(plan.seeds, batch_seed(self.seed, epoch, part.index, plan.key))

    def __getitem__(self, spec: tuple[int, BatchPlan, int]) -> PreparedBatch:
        index, plan, epoch = spec
        part = self.parts[index]
        batch = self.sample(part, plan, epoch)
        return PreparedBatch(
            seeds=plan.seeds,
            x=torch.from_numpy(np.asarray(part.features[batch.n_id])),
            blocks=batch.blocks,
            target=part.labels[torch.from_numpy(plan.seeds)],
            cost=computation_cost(batch),
        )

    def __len__(self) -> int:  # specs are not indices: the loader's sampler supplies them
        raise TypeError("BatchMaker is indexed by batch specs, not by position")


class _Specs(Sampler):
    """The loader's sampler: the spec list of the current pass (replaced before each pass)."""

    def __init__(self) -> None:
        self.specs: list = []

    def __iter__(self) -> Iterator:
        return iter(self.specs)

    def __len__(self) -> int:
        return len(self.specs)


def _die_with_trainer(trainer_pid: int, _worker_id: int) -> None:
    lifecycle.die_with_parent(trainer_pid)


class BatchSource:
    """Yields prepared batches for a list of specs, in order, timing the trainer's waits."""

    def __init__(self, maker: BatchMaker, sampler_workers: int, timeout_s: float, pin: bool):
        self.maker = maker
        self.pin = pin
        self.wait_s = 0.0
        self._specs = _Specs()
        self._loader = None
        if sampler_workers > 0:
            self._loader = DataLoader(
                maker,
                batch_size=None,  # specs come one batch each; no collation
                sampler=self._specs,
                num_workers=sampler_workers,
                prefetch_factor=BATCHES_IN_FLIGHT_PER_SAMPLER,
                persistent_workers=True,
                multiprocessing_context="fork",  # samplers share the trainer's mapped features
                # a sampler dies with its trainer at once, even a SIGKILLed one
                worker_init_fn=functools.partial(_die_with_trainer, os.getpid()),
                timeout=timeout_s,
                collate_fn=_keep,
                # its own generator: the loader's base seed must not consume the trainer's
                # global RNG, which drives dropout (k > 0 then trains exactly as k = 0)
                generator=torch.Generator(),
            )

    def batches(self, specs: list[tuple[int, BatchPlan, int]]) -> Iterator[PreparedBatch]:
        if self._loader is None:
            stream = (self.maker[spec] for spec in specs)
        else:
            self._specs.specs = specs
            stream = iter(self._loader) if specs else iter(())
        while True:
            started = time.perf_counter()
            batch = next(stream, None)
            self.wait_s += time.perf_counter() - started
            if batch is None:
                return
            if self.pin:  # page-locked, so the copy to the GPU can overlap
                batch.x = batch.x.pin_memory()
            yield batch

    def close(self) -> None:
        iterator = getattr(self._loader, "_iterator", None)
        if iterator is not None:
            iterator._shutdown_workers()


def _keep(batch: PreparedBatch) -> PreparedBatch:
    return batch
