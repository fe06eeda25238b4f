"""Where a trainer's mini-batches come from: its own process, or k sampler processes (Armada).

Preparing a batch means sampling its blocks and gathering its features and labels. With
`train.sampler_workers=0` the trainer does it between steps (`train.batch_preparation=inline`) or
on a helper thread one batch ahead (`thread`: the sampling and gathering kernels release the GIL,
so the next batch is prepared while this one trains); with k > 0, k forked CPU processes (torch's
DataLoader workers) prepare the batches of the trainer's list ahead of it through a bounded queue
(k x 2 batches in flight). Every way trains the same batches, and the trainer times how long it
waits for each (`batch_wait_s`): inline, that is the whole preparation.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Sampler, get_worker_info

from gnnbench.process import lifecycle
from gnnbench.process.io_counters import storage_read_bytes
from gnnbench.process.peak_rss import peak_rss_mb, reset_peak_rss
from gnnbench.train.batching import BatchPlan, computation_cost, induced_batch
from gnnbench.train.sampler import SampledBatch, batch_seed, node_scratch

BATCHES_IN_FLIGHT_PER_SAMPLER = 2


@dataclass
class PreparedBatch:
    """A batch ready for the model: seeds' labels, features of its n_id, blocks (numpy)."""

    seeds: np.ndarray
    x: torch.Tensor
    blocks: list
    target: torch.Tensor
    cost: int
    producer_peak_mb: float  # resident peak of the process that prepared it, so far
    producer_pid: int = 0  # the process that prepared it
    producer_read_bytes: int | None = None  # its storage reads so far (io_counters)


class BatchMaker(Dataset):
    """Prepares the batch a spec names; spec = (partition index, plan, epoch).

    Holds only what sampling needs (samplers, features, labels of the trainer's resident
    partition), so the same object runs in the trainer or, inherited by fork, in a sampler process.
    """

    def __init__(self, part: Any, strategy: str, seed: int):
        self.part = part
        self.strategy = strategy
        self.seed = seed
        self._position: np.ndarray | None = None  # for cluster batches

    def sample(self, part: Any, plan: BatchPlan, epoch: int) -> SampledBatch:
        if plan.region is not None:  # a cluster batch: every neighbour inside its region
            graph = (part.sampler.indptr, part.sampler.indices)
            if self._position is None:
                self._position = node_scratch(len(graph[0]) - 1)
            return induced_batch(*graph, plan, len(part.sampler.fanouts), self._position)
        if self.strategy == "full":  # global batch: every neighbour in the partition
            return part.full_sampler.sample(plan.seeds, 0)
        return part.sampler.sample(plan.seeds, batch_seed(self.seed, epoch, part.index, plan.key))

    def __getitem__(self, spec: tuple[int, BatchPlan, int]) -> PreparedBatch:
        index, plan, epoch = spec
        part = self.part
        if index != part.index:
            raise ValueError(f"batch of partition {index} asked of partition {part.index}'s source")
        batch = self.sample(part, plan, epoch)
        return PreparedBatch(
            seeds=plan.seeds,
            x=torch.from_numpy(feature_rows(part.features, batch.n_id)),
            blocks=batch.blocks,
            target=part.labels[torch.from_numpy(plan.seeds)],
            cost=computation_cost(batch),
            producer_peak_mb=peak_rss_mb(),
            producer_pid=os.getpid(),
            # a sampler's count for its trainer; the trainer reads its own (read_bytes)
            producer_read_bytes=storage_read_bytes() if get_worker_info() else None,
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


def feature_rows(features: Any, ids: np.ndarray) -> np.ndarray:
    """Rows `ids` of a partition's features (an array, a memory map, or any object answering
    `features[ids]`) as float32, whatever the stored type: models compute in float32."""
    return np.asarray(features[ids]).astype(np.float32, copy=False)


def _start_sampler(trainer_pid: int, _worker_id: int) -> None:
    lifecycle.die_with_parent(trainer_pid)
    reset_peak_rss()  # its own peak, not the trainer's it was forked from


class BatchSource:
    """Yields prepared batches of the resident partition for a list of specs, in order, timing
    the trainer's waits (`wait_s`) and keeping the sampler processes' largest resident peak
    (`sampler_peak_mb`; 0 without them) and their storage reads (`read_bytes`)."""

    def __init__(
        self,
        strategy: str,
        seed: int,
        sampler_workers: int,
        timeout_s: float,
        pin: bool,
        ahead: bool = False,
    ):
        self.strategy = strategy
        self.seed = seed
        self.sampler_workers = sampler_workers
        self.ahead = ahead  # batch_preparation=thread (sampler_workers=0 only)
        self.timeout_s = timeout_s
        self.pin = pin
        self.wait_s = 0.0
        self.sampler_peak_mb = 0.0
        self._specs = _Specs()
        self._maker: BatchMaker | None = None
        self._loader = None
        self._sampler_reads: dict[int, int] = {}  # a running sampler's reads, by pid

    def _serve(self, part: Any) -> None:
        """Prepare `part`'s batches from now on (its own sampler processes, if any)."""
        if self._maker is not None and self._maker.part is part:
            return
        self.close()
        self._maker = BatchMaker(part, self.strategy, self.seed)
        if self.sampler_workers > 0:
            self._loader = DataLoader(
                self._maker,
                batch_size=None,  # specs come one batch each; no collation
                sampler=self._specs,
                num_workers=self.sampler_workers,
                prefetch_factor=BATCHES_IN_FLIGHT_PER_SAMPLER,
                persistent_workers=True,
                multiprocessing_context="fork",  # samplers share the trainer's mapped features
                # a sampler dies with its trainer at once, even a SIGKILLed one
                worker_init_fn=functools.partial(_start_sampler, os.getpid()),
                timeout=self.timeout_s,
                collate_fn=_keep,
                # its own generator: the loader's base seed must not consume the trainer's
                # global RNG, which drives dropout (k > 0 then trains exactly as k = 0)
                generator=torch.Generator(),
            )

    def batches(
        self, part: Any, specs: list[tuple[int, BatchPlan, int]]
    ) -> Iterator[PreparedBatch]:
        self._serve(part)
        if self._loader is None:
            prepare = functools.partial(_prepared, self._maker, self.pin)
            stream = _prepared_ahead(prepare, specs) if self.ahead else map(prepare, specs)
        else:
            self._specs.specs = specs
            stream = iter(self._loader) if specs else iter(())
        while True:
            started = time.perf_counter()
            batch = next(stream, None)
            self.wait_s += time.perf_counter() - started
            if batch is None:
                return
            if self._loader is not None:
                self.sampler_peak_mb = max(self.sampler_peak_mb, batch.producer_peak_mb)
                if batch.producer_read_bytes is not None:
                    self._sampler_reads[batch.producer_pid] = batch.producer_read_bytes
                if self.pin:
                    batch.x = batch.x.pin_memory()
            yield batch

    def read_bytes(self) -> int | None:
        """Storage reads so far of this trainer and of its running samplers (as of the last batch
        each prepared: reads for batches still in flight come with them); None where not counted.
        A sampler stopped by `close` is in the trainer's own count: Linux adds a reaped child's
        reads to its parent's."""
        own = storage_read_bytes()
        if own is None:
            return None
        return own + sum(self._sampler_reads.values())

    def close(self) -> None:
        """Stop the sampler processes and drop the partition (before the next one loads)."""
        iterator = getattr(self._loader, "_iterator", None)
        if iterator is not None:
            iterator._shutdown_workers()
        self._sampler_reads.clear()  # joined, so counted in this process's own reads now
        self._loader = None
        self._maker = None


def _prepared(maker: BatchMaker, pin: bool, spec: tuple) -> PreparedBatch:
    """The batch `spec` names, its features page-locked when `pin` (CUDA: so the copy to the GPU
    can overlap), in the process or thread that prepares it."""
    batch = maker[spec]
    if pin:
        batch.x = batch.x.pin_memory()
    return batch


def _prepared_ahead(
    prepare: Callable[[tuple], PreparedBatch], specs: list
) -> Iterator[PreparedBatch]:
    """`prepare(spec)` for each of `specs` in order, each on a helper thread while the trainer
    trains the batch before it. One thread and one batch ahead: the maker's samplers keep one
    scratch array each, so no two batches are prepared at once. Leaving the pass early waits
    for the batch in preparation: no thread outlives the pass."""
    with ThreadPoolExecutor(1, thread_name_prefix="gnnbench-batch") as helper:
        pending = helper.submit(prepare, specs[0]) if specs else None
        for following in [*specs[1:], None]:
            batch = pending.result()
            pending = helper.submit(prepare, following) if following else None
            yield batch


def compute_threads(cores: int, batch_preparation: str) -> int:
    """The torch threads of a CPU rank given `cores`: all of them, less the one the helper
    thread prepares batches on (batch_preparation=thread), never fewer than one."""
    return max(1, cores - (batch_preparation == "thread"))


def _keep(batch: PreparedBatch) -> PreparedBatch:
    return batch
