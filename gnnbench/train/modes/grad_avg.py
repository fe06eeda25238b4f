"""Gradient averaging (DistDGL's scheme): every mini-batch step all-reduces the gradients. Ranks
hold as many batches as their partitions give; a rank that has run out joins the remaining steps
with a zero gradient and zero weight (what torch's Join does for DDP), so no rank hangs and no
training node is dropped.

A rank with several partitions trains them one after the other within an epoch, one resident at a
time: it loads each once to plan its batches (the step count must be agreed first) and again when
its batches come up, except the one still resident. With one partition per rank (p = num_gpus,
grad_avg's usual setting) the partition stays loaded for the whole run."""

from __future__ import annotations

import time

import numpy as np
import torch
import torch.distributed as dist

from gnnbench.train.modes import TRAINING_MODES, TrainingMode
from gnnbench.train.sampler import batch_seed
from gnnbench.train.worker import finite_loss

FIGURES = ("compute", "sync", "sync_wait", "loss", "trained", "cost")


@TRAINING_MODES.register("grad_avg")
class GradientAverage(TrainingMode):
    shares_optimizer = True
    ignored_axes = ("sync_interval",)  # gradients every step: there is no averaging interval

    def train_round(self, start: int, length: int, record: dict[str, np.ndarray]) -> None:
        for key, value in self.epoch(start + 1).items():
            record[key][start] = value

    def epoch(self, epoch: int) -> dict[str, float]:
        """One epoch of per-mini-batch gradient averaging over every rank's batches.

        Each step all-reduces [sum of per-seed gradients, number of seeds] and divides, so every
        rank applies the gradient of the mean loss over all seeds trained in that step. The ranks
        first agree (one MAX all-reduce) on how many steps the rank with most batches needs.
        """
        worker = self.worker
        worker.model.train()
        torch.manual_seed(batch_seed(worker.spec.seed, epoch, worker.rank))
        partitions = worker.partitions
        specs = {part.index: worker.batch_specs(part, epoch)
                 for part in partitions.in_turn(resident_first=True)}  # fmt: skip
        count = sum(len(batches) for batches in specs.values())
        steps = int(worker.all_reduce(torch.tensor([count]), dist.ReduceOp.MAX)[0])
        stream = (
            batch
            for index in partitions.indices  # the partitions' batches in turn, as before
            for batch in worker.source.batches(partitions.get(index), specs[index])
        )
        figures = dict.fromkeys(FIGURES, 0.0)
        waited = worker.source.wait_s
        for step in range(steps):
            batch = next(stream) if step < count else None  # past its last: zero gradient
            self.step(batch, epoch, figures)
        return {**figures, "steps": steps, "wait": worker.source.wait_s - waited}

    def step(self, batch, epoch: int, figures: dict[str, float]) -> None:
        """One synchronised step: local gradient, all-reduce of [gradients, seeds], update."""
        worker = self.worker
        params = list(worker.model.parameters())
        optimizer = worker.optimizers[worker.partitions.indices[0]]  # one for all
        started = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        count = 0
        if batch is not None:
            loss = worker.batch_loss(batch)
            (loss * len(batch.seeds)).backward()
            figures["loss"] += finite_loss(loss, epoch, worker.rank) * len(batch.seeds)
            figures["cost"] += batch.cost
            count = len(batch.seeds)
        local = torch.cat(
            [p.grad.reshape(-1) if p.grad is not None else torch.zeros_like(p).reshape(-1)
             for p in params] + [torch.full((1,), float(count), device=worker.device)]
        )  # fmt: skip
        waited_for_ranks = worker.wait_for_ranks()
        synced = time.perf_counter()
        if worker.distributed:
            dist.all_reduce(local, op=dist.ReduceOp.SUM)
        worker.wait_for_device()
        sync_done = time.perf_counter()
        seeds_in_step = float(local[-1])
        offset = 0
        for param in params:
            param.grad = (local[offset : offset + param.numel()] / seeds_in_step).view_as(param)
            offset += param.numel()
        optimizer.step()
        figures["sync"] += sync_done - synced
        figures["sync_wait"] += waited_for_ranks
        compute = (synced - started - waited_for_ranks) + (time.perf_counter() - sync_done)
        figures["compute"] += compute
        figures["trained"] += seeds_in_step
