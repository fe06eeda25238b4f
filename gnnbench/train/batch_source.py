"""Where a trainer's mini-batches come from: its own process, or k sampler processes (Armada).

Preparing a batch means sampling its blocks and gathering its features and labels. With
`train.sampler_workers=0` the trainer does it between steps (`train.batch_preparation=inline`) or
on a helper thread one batch ahead (`thread`: the sampling and gathering kernels release the GIL,
so the next batch is prepared while this one trains); with k > 0, k forked CPU processes (torch's
DataLoader workers) prepare the batches of the trainer's list ahead of it through a bounded queue
(2 per process in flight). Every way trains the same batches, and the trainer times how long it
waits for each (`batch_wait_s`): inline, that is the whole preparation.

With `train.superbatch=s` (Ginex's superbatch, issue 46 item 2) the batches are prepared s at a
time: each of the s is sampled, then the feature rows of all of them are read in one gather, in
file order and each row once, and each batch takes its rows from that buffer when the trainer
reaches it. Where the feature file is larger than the page cache that makes s batches' random
reads one sorted sweep; where it is not, it saves s - 1 gathers' fixed cost and the rows the
batches share. Memory: a buffer holds at most s batches' rows (fewer where they share), one per
superbatch in flight (one inline; two with the helper thread; with sampler processes the one
being trained plus BATCHES_IN_FLIGHT_PER_SAMPLER per process), and the trainer copies each
batch's rows out of it in turn. `train.superbatch_mb` bounds each buffer: a superbatch then groups
as many batches as could not name more rows than that, by the most rows a batch can name
(`batch_rows_bound`), whatever the sampler draws; a batch that could name more is prepared alone.
A sampler process's train.timeout_s covers a whole superbatch.
The batches, their order and their rows are the same for every s.
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


@dataclass
class Superbatch:
    """Batches prepared together: `rows` holds the feature rows of every node their n_id name
    (float32, in node order), batch i's at `positions[i]`; its x is filled by `take`. One batch
    alone is its own rows (`positions` None: x is `rows`, nothing copied)."""

    batches: list[PreparedBatch | None]
    rows: torch.Tensor
    positions: list[torch.Tensor] | None

    def take(self, i: int, pin: bool = False) -> PreparedBatch:
        """Batch i with its x (a copy of its rows out of the buffer, into page-locked memory
        when `pin`: one copy, not a copy then a pinned one), handed over: the superbatch keeps
        no reference to it, so a trained batch's rows are freed at once."""
        batch, self.batches[i] = self.batches[i], None
        if batch is None:
            raise RuntimeError(f"batch {i} of a superbatch taken twice")
        if self.positions is None:
            batch.x = self.rows
            return batch
        where = self.positions[i]
        out = torch.empty((len(where), *self.rows.shape[1:]), dtype=self.rows.dtype, pin_memory=pin)
        batch.x = torch.index_select(self.rows, 0, where, out=out)
        return batch


class BatchMaker(Dataset):
    """Prepares the batches a group of specs names (a superbatch; spec = (partition index, plan,
    epoch)).

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

    def __getitem__(self, specs: tuple[tuple[int, BatchPlan, int], ...]) -> Superbatch:
        part = self.part
        sampled = []
        for index, plan, epoch in specs:
            if index != part.index:
                raise ValueError(
                    f"batch of partition {index} asked of partition {part.index}'s source"
                )
            sampled.append((plan, self.sample(part, plan, epoch)))
        if len(sampled) == 1:  # its rows in its own n_id order: no buffer to index
            ids, positions = sampled[0][1].n_id, None
        else:  # every row once, in one gather sorted by file position (FeatureRows)
            ids = np.unique(np.concatenate([batch.n_id for _, batch in sampled]))
            positions = [torch.from_numpy(np.searchsorted(ids, b.n_id)) for _, b in sampled]
        rows = torch.from_numpy(feature_rows(part.features, ids))
        peak_mb, pid = peak_rss_mb(), os.getpid()  # the producer's, after the gather
        # a sampler's count for its trainer; the trainer reads its own (read_bytes)
        read_bytes = storage_read_bytes() if get_worker_info() else None
        batches = [
            PreparedBatch(
                seeds=plan.seeds,
                x=torch.empty(0),  # Superbatch.take fills it
                blocks=batch.blocks,
                target=part.labels[torch.from_numpy(plan.seeds)],
                cost=computation_cost(batch),
                producer_peak_mb=peak_mb,
                producer_pid=pid,
                producer_read_bytes=read_bytes,
            )
            for plan, batch in sampled
        ]
        return Superbatch(batches, rows, positions)

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


def batch_rows_bound(part: Any, seeds: int, sampled: bool) -> int:
    """The most feature rows a batch of `seeds` seeds can name in `part`: a `sampled` batch's
    tree (seeds x (1 + f1 + f1 f2 + ...), each hop at most its fanout per node), and never more
    than the partition's rows (all of them for a full or cluster batch, or a fanout of -1)."""
    rows = len(part.features)
    fanouts = getattr(getattr(part, "sampler", None), "fanouts", None)
    if not sampled or fanouts is None or min(fanouts, default=0) < 0:
        return rows
    tree, level = 1, 1
    for fanout in fanouts:
        level *= int(fanout)
        tree += level
    return min(rows, seeds * tree)


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
        superbatch: int = 1,
        superbatch_mb: float | None = None,
    ):
        self.strategy = strategy
        self.superbatch = superbatch  # batches prepared together (module doc)
        self.superbatch_mb = superbatch_mb  # the bound on one superbatch's buffer (module doc)
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
                batch_size=None,  # an item is one group of specs (a superbatch); no collation
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
        """`specs`' batches of `part`, in order, prepared `superbatch` at a time; the trainer's
        wait for each (its superbatch's preparation where it waits for one, and copying its rows
        out of the superbatch's buffer) is added to `wait_s`."""
        self._serve(part)
        size = self.group_size(part, specs)
        groups = [tuple(specs[i : i + size]) for i in range(0, len(specs), size)]
        if self._loader is None:
            prepare = functools.partial(_prepared, self._maker, self.pin)
            stream = _prepared_ahead(prepare, groups) if self.ahead else map(prepare, groups)
        else:
            self._specs.specs = groups
            stream = iter(self._loader) if groups else iter(())
        while True:
            started = time.perf_counter()
            superbatch = next(stream, None)
            if superbatch is None:
                self.wait_s += time.perf_counter() - started
                return
            if self._loader is not None:
                self._note_sampler(superbatch.batches[0])
            for i in range(len(superbatch.batches)):
                started = started if i == 0 else time.perf_counter()
                batch = superbatch.take(i, self.pin)
                if self.pin and not batch.x.is_pinned():  # a batch alone from a sampler process
                    batch.x = batch.x.pin_memory()
                self.wait_s += time.perf_counter() - started
                yield batch
            del superbatch, batch  # its buffer freed before the next one is asked for

    def group_size(self, part: Any, specs: list[tuple[int, BatchPlan, int]]) -> int:
        """Batches a superbatch of `specs` groups: train.superbatch, fewer where that many
        could name more rows than train.superbatch_mb holds (never fewer than one)."""
        if self.superbatch_mb is None or not specs:
            return self.superbatch
        seeds = max(len(plan.seeds) for _, plan, _ in specs)
        sampled = self.strategy == "minibatch" and all(plan.region is None for _, plan, _ in specs)
        row_bytes = 4 * int(np.prod(part.features.shape[1:]))  # float32 in the buffer
        batch_bytes = batch_rows_bound(part, seeds, sampled) * row_bytes
        fits = int(self.superbatch_mb * 2**20 // max(1, batch_bytes))
        return max(1, min(self.superbatch, fits))

    def _note_sampler(self, batch: PreparedBatch) -> None:
        """Keep a sampler process's resident peak and storage reads, as its batch reports."""
        self.sampler_peak_mb = max(self.sampler_peak_mb, batch.producer_peak_mb)
        if batch.producer_read_bytes is not None:
            self._sampler_reads[batch.producer_pid] = batch.producer_read_bytes

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


def _prepared(maker: BatchMaker, pin: bool, specs: tuple) -> Superbatch:
    """The batches `specs` name, in the process or thread that prepares them; a batch alone has
    its features page-locked there when `pin` (CUDA: so the copy to the GPU can overlap; the
    trainer pins a superbatch's as it takes them)."""
    superbatch = maker[specs]
    if pin and superbatch.positions is None:
        superbatch.rows = superbatch.rows.pin_memory()
    return superbatch


def _prepared_ahead(prepare: Callable[[tuple], Superbatch], specs: list) -> Iterator[Superbatch]:
    """`prepare(group)` for each group of `specs` in order, each on a helper thread while the
    trainer trains the one before it. One thread and one group ahead: the maker's samplers keep
    one scratch array each, so no two batches are prepared at once. Leaving the pass early waits
    for the group in preparation: no thread outlives the pass."""
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


def _keep(superbatch: Superbatch) -> Superbatch:
    return superbatch
