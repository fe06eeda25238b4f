"""Gradient averaging (DistDGL's scheme): every mini-batch step all-reduces the gradients. Ranks
hold as many batches as their partitions give; a rank that has run out joins the remaining steps
with a zero gradient and zero weight (what torch's Join does for DDP), so no rank hangs and no
training node is dropped.

A rank with several partitions trains them one after the other within an epoch, one resident at a
time. The ranks must agree on the step count first: where a partition's batch count follows from
its training-node count (mini-batches, the full batch) each is loaded once, when its batches come
up (the resident one is planned before the agreement, as every partition was before); where its
graph decides (clusters, cmgcn's batches) each is loaded once more before, to plan them. With
one partition per rank (p = num_gpus, grad_avg's usual setting) the partition stays loaded for
the whole run."""

from __future__ import annotations

import time
from collections.abc import Iterator

import torch
import torch.distributed as dist

from gnnbench.progress import INNER_LINE_EVERY_S, progress
from gnnbench.train.batch_source import PreparedBatch
from gnnbench.train.context import finite_loss
from gnnbench.train.modes import TRAINING_MODES, TrainingMode
from gnnbench.train.record import EpochRecord
from gnnbench.train.sampler import batch_seed


@TRAINING_MODES.register("grad_avg")
class GradientAverage(TrainingMode):
    shares_optimizer = True
    ignored_axes = ("sync_interval",)  # gradients every step: there is no averaging interval

    def train_round(self, start: int, length: int, record: EpochRecord) -> None:
        """One epoch of per-mini-batch gradient averaging over every rank's batches.

        Each step all-reduces [sum of per-seed gradients, number of seeds] and divides, so every
        rank applies the gradient of the mean loss over all seeds trained in that step. The ranks
        first agree (one MAX all-reduce) on how many steps the rank with most batches needs.
        """
        ctx = self.context
        epoch = start + 1
        ctx.state.model.train()
        torch.manual_seed(batch_seed(ctx.spec.seed, epoch, ctx.group.rank))
        specs, counts = self.planned(epoch)
        count = sum(counts.values())
        steps = int(ctx.group.all_reduce(torch.tensor([count]), dist.ReduceOp.MAX)[0])
        stream = self.batches(epoch, specs, counts)
        waited = ctx.source.wait_s
        for step in progress(range(steps), steps, f"epoch {epoch}: steps",
                             enabled=ctx.group.rank == 0, line_every_s=INNER_LINE_EVERY_S):  # fmt: skip
            batch = next(stream) if step < count else None  # past its last: zero gradient
            self.step(batch, epoch, record)
        record.sync_count[start] = steps
        record.batch_wait_s[start] = ctx.source.wait_s - waited

    def planned(self, epoch: int) -> tuple[dict[int, list], dict[int, int]]:
        """Each partition's batch count for the epoch, and the plans of those that had to be
        loaded to count them (module doc)."""
        ctx = self.context
        counts = {index: ctx.batch_count(index) for index in ctx.partitions.indices}
        if None not in counts.values():  # the resident partition costs no load: planned now
            resident = ctx.partitions.resident
            return ({} if resident is None else
                    {resident.index: ctx.batch_specs(resident, epoch)}), counts  # fmt: skip
        specs = {part.index: ctx.batch_specs(part, epoch)
                 for part in ctx.partitions.in_turn(resident_first=True)}  # fmt: skip
        return specs, {index: len(plans) for index, plans in specs.items()}

    def batches(
        self, epoch: int, specs: dict[int, list], counts: dict[int, int]
    ) -> Iterator[PreparedBatch]:
        """The partitions' batches in turn, each partition planned when it comes up unless it
        was planned already; the counts agreed on are what the plans hold."""
        ctx = self.context
        for index in ctx.partitions.indices:
            if counts[index] == 0:
                continue  # nothing to train: not loaded
            part = ctx.partitions.get(index)
            plans = specs[index] if index in specs else ctx.batch_specs(part, epoch)
            if len(plans) != counts[index]:  # batch_count disagrees with the plans: a bug
                raise RuntimeError(
                    f"partition {index}: {len(plans)} batches planned, {counts[index]} counted"
                )
            yield from ctx.source.batches(part, plans)
            del part, plans  # released before the next one loads (gnnbench/train/resident.py)

    def step(self, batch: PreparedBatch | None, epoch: int, record: EpochRecord) -> None:
        """One synchronised step: local gradient, all-reduce of [gradients, seeds], update; its
        figures added to the epoch's."""
        ctx, at = self.context, epoch - 1
        params = list(ctx.state.model.parameters())
        optimizer = ctx.state.optimizers[ctx.partitions.indices[0]]  # one for all
        started = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        count = 0
        if batch is not None:
            loss = ctx.batch_loss(batch)
            (loss * len(batch.seeds)).backward()
            record.train_loss[at] += finite_loss(loss, epoch, ctx.group.rank) * len(batch.seeds)
            record.add_batch(at, batch, ctx.batch_seconds(batch))
            count = len(batch.seeds)
        local = torch.cat(
            [p.grad.reshape(-1) if p.grad is not None else torch.zeros_like(p).reshape(-1)
             for p in params] + [torch.full((1,), float(count), device=ctx.group.device)]
        )  # fmt: skip
        waited_for_ranks = ctx.group.wait_for_ranks()
        synced = time.perf_counter()
        if ctx.group.distributed:
            dist.all_reduce(local, op=dist.ReduceOp.SUM)
        ctx.group.wait_for_device()
        sync_done = time.perf_counter()
        seeds_in_step = float(local[-1])
        offset = 0
        for param in params:
            param.grad = (local[offset : offset + param.numel()] / seeds_in_step).view_as(param)
            offset += param.numel()
        optimizer.step()
        record.sync_time_s[at] += sync_done - synced
        record.sync_wait_s[at] += waited_for_ranks
        compute = (synced - started - waited_for_ranks) + (time.perf_counter() - sync_done)
        record.compute_time_s[at] += compute
        record.train_nodes_per_epoch[at] += seeds_in_step
