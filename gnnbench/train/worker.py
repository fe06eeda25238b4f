"""The per-rank training loop: train each owned partition in turn, synchronise, evaluate.

With a PartitionBook, rank r trains partitions r, r+W, r+2W, ... In model_avg each partition trains
sync_interval epochs from the current averaged model (each with its own Adam state), then every rank
joins one weighted all-reduce. In grad_avg (DistDGL's scheme) every mini-batch step all-reduces the
gradients; ranks hold as many batches as their partitions give, and a rank that has run out joins
the remaining steps with a zero gradient and zero weight (what torch's Join does for DDP), so no
rank hangs and no training node is dropped. Without a book (centralized mode) the single
"partition" is the whole graph and nothing is synchronised: the same loop is the reference run. A
partition's halo nodes hold only their edges to owned nodes (CATGNN's 1-hop partitions), so its
deeper neighbourhoods are truncated there.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

from gnnbench.data.store import GraphStore
from gnnbench.errors import DataError, NonFiniteLoss
from gnnbench.partition.book import PartitionBook
from gnnbench.progress import progress
from gnnbench.train.batch_source import BatchMaker, BatchSource, PreparedBatch
from gnnbench.train.batching import BatchPlan, cluster_plans, clusters, minibatch_plans
from gnnbench.train.evaluation import EvaluationMixin
from gnnbench.train.models import build_model
from gnnbench.train.ogb_metric import OgbMetric
from gnnbench.train.sampler import (
    ALL_NEIGHBOURS,
    Block,
    NeighbourSampler,
    batch_seed,
)
from gnnbench.train.settings import Job
from gnnbench.train.sync import State, all_reduce_average, broadcast_state, weighted_state_sum


@dataclass
class TrainingPart:
    """One partition (or the whole graph) as this rank trains and evaluates on it."""

    index: int
    features: np.ndarray
    labels: torch.Tensor
    split: dict[str, np.ndarray]
    sampler: NeighbourSampler  # train.fanouts
    full_sampler: NeighbourSampler  # every neighbour, one hop per layer (strategy=full)
    hop_sampler: NeighbourSampler  # every neighbour, one hop (layer-wise inference)
    optimizer: torch.optim.Optimizer | None = None
    clusters: list[np.ndarray] | None = None  # the cluster strategy's fixed clusters

    @property
    def num_train(self) -> int:
        return len(self.split["train"])


def _raw_parts(job: Job, rank: int, world_size: int) -> Iterator[tuple]:
    """(index, indptr, indices, features, labels, split) of every partition this rank trains."""
    if job.book_path is None:
        store = GraphStore(job.store_path)
        indptr, indices = store.csr()
        yield 0, indptr, indices, store.features(), store.labels(), store.split()
        return
    book = PartitionBook(job.book_path)
    for index in range(rank, book.p, world_size):
        local = book.load(index)
        yield index, local.indptr, local.indices, local.features, local.labels, local.split


def load_parts(job: Job, rank: int, world_size: int, uses_graph: bool) -> list[TrainingPart]:
    settings = job.settings
    train_fanouts = list(settings.fanouts) if uses_graph else []
    full_fanouts = [ALL_NEIGHBOURS] * len(train_fanouts)
    parts = []
    for index, indptr, indices, features, labels, split in _raw_parts(job, rank, world_size):
        parts.append(
            TrainingPart(
                index=index,
                features=features,
                labels=torch.from_numpy(np.asarray(labels)),
                split=split,
                sampler=NeighbourSampler(indptr, indices, train_fanouts),
                full_sampler=NeighbourSampler(indptr, indices, full_fanouts),
                hop_sampler=NeighbourSampler(indptr, indices, [ALL_NEIGHBOURS]),
            )
        )
    return parts


def finite_loss(loss: torch.Tensor, epoch: int, where: int) -> float:
    """The batch loss as a number; NaN or inf stops the run (NonFiniteLoss names the epoch)."""
    value = loss.item()
    if not math.isfinite(value):
        raise NonFiniteLoss(
            f"train loss is {value} at epoch {epoch} (partition or rank {where}): features too "
            "large or a learning rate too high (train.lr)"
        )
    return value


def _clone(state: dict[str, torch.Tensor]) -> State:
    return {key: value.detach().clone() for key, value in state.items()}


class Worker(EvaluationMixin):
    """One rank's model, optimizers and partitions; `run()` returns the run's summary."""

    def __init__(self, job: Job, rank: int, world_size: int, device: torch.device):
        self.job = job
        self.settings = job.settings
        self.rank = rank
        self.world_size = world_size
        self.device = device
        # From world_size, not dist.is_initialized(): a torchrun sweep keeps its process group
        # between jobs, and a centralized job then runs on rank 0 alone.
        self.distributed = world_size > 1
        self.ogb = OgbMetric.for_dataset(job.ogb_name)  # an ogbn dataset's official metric
        torch.manual_seed(self.settings.seed)  # identical initial model on every rank
        self.model = build_model(job.num_features, job.num_classes, self.settings.model).to(device)
        self.parts = load_parts(job, rank, world_size, self.model.uses_graph)
        shared = self._optimizer() if self.settings.mode == "grad_avg" else None
        for part in self.parts:  # model_avg: an Adam state per partition; grad_avg: one for all
            part.optimizer = shared or self._optimizer()
            if self.settings.strategy == "cluster":
                part.clusters = clusters(
                    part.sampler.indptr,
                    part.sampler.indices,
                    self.settings.num_clusters,
                    batch_seed(self.settings.seed, part.index),
                )
        self.source = BatchSource(
            BatchMaker(self.parts, self.settings.strategy, self.settings.seed),
            self.settings.sampler_workers,
            self.settings.timeout_s,
            pin=device.type == "cuda",
        )
        self.global_state = broadcast_state(self.model.state_dict(), distributed=self.distributed)
        self.model.load_state_dict(self.global_state)
        local_train = torch.tensor([sum(p.num_train for p in self.parts)], dtype=torch.float64)
        self.total_train = float(self._all_reduce(local_train)[0])  # = the split's training nodes
        if self.total_train == 0:
            raise DataError(f"{job.store_path}: the split has no training nodes")

    def _optimizer(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(
            self.model.parameters(), lr=self.settings.lr, weight_decay=self.settings.weight_decay
        )

    # --- collectives ---------------------------------------------------------------------------
    def _all_reduce(self, tensor: torch.Tensor, op=None) -> torch.Tensor:
        """All-reduce on this rank's device (NCCL needs CUDA tensors); result back on the CPU."""
        if not self.distributed:
            return tensor
        on_device = tensor.to(self.device)
        dist.all_reduce(on_device, op=op or dist.ReduceOp.SUM)
        return on_device.cpu()

    def _wait_for_device(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def _wait_for_ranks(self) -> float:
        """Seconds until every rank reaches this point: the time a sync spends waiting for the
        slowest rank, kept apart from the all-reduce that follows (the transfer itself)."""
        self._wait_for_device()
        started = time.perf_counter()
        if self.distributed:  # NCCL's barrier must be told this rank's device
            cuda = self.device.type == "cuda"
            dist.barrier(device_ids=[self.device.index or 0] if cuda else None)
        return time.perf_counter() - started

    # --- one batch -----------------------------------------------------------------------------
    def _forward(self, x: torch.Tensor, blocks: list[Block]) -> torch.Tensor:
        """The model on a batch's features (moved per batch) and its numpy blocks."""
        x = x.to(self.device, non_blocking=True)
        return self.model(x, [self._on_device(block) for block in blocks])

    def _on_device(self, block: Block) -> Block:
        return Block(
            torch.from_numpy(block.edge_index).to(self.device), block.num_src, block.num_dst
        )

    def _loss(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        if self.job.multilabel:
            return F.binary_cross_entropy_with_logits(logits, target.float())
        return F.cross_entropy(logits, target)

    def _predict(self, logits: torch.Tensor) -> torch.Tensor:
        return (logits > 0).to(torch.uint8) if self.job.multilabel else logits.argmax(dim=1)

    # --- training ------------------------------------------------------------------------------
    def _batches(self, part: TrainingPart, epoch: int) -> list[BatchPlan]:
        """The partition's batches for this epoch, per train.strategy and train.batching."""
        settings = self.settings
        rng = np.random.default_rng([settings.seed % (1 << 63), epoch, part.index])
        train = part.split["train"]
        graph = (part.sampler.indptr, part.sampler.indices)
        if settings.strategy == "full":
            return [BatchPlan(key=0, seeds=train)] if len(train) else []
        if settings.strategy == "cluster":
            return cluster_plans(*graph, train, part.clusters, settings.clusters_per_batch, rng)
        size = settings.batch_size
        if settings.batches_per_epoch:
            size = max(1, -(-len(train) // settings.batches_per_epoch))
        return minibatch_plans(*graph, train, size, settings.batching == "cohesive", rng)

    def _batch_loss(self, batch: PreparedBatch) -> torch.Tensor:
        """The batch's mean loss."""
        logits = self._forward(batch.x, batch.blocks)
        return self._loss(logits, batch.target.to(self.device))

    def _specs(self, part: TrainingPart, epoch: int) -> list[tuple[int, BatchPlan, int]]:
        return [(part.index, plan, epoch) for plan in self._batches(part, epoch)]

    def train_epoch(self, part: TrainingPart, epoch: int) -> tuple[float, int]:
        """One pass over the partition's training nodes; the summed (not mean) loss and cost."""
        self.model.train()
        torch.manual_seed(batch_seed(self.settings.seed, epoch, part.index))  # rank-independent
        loss_sum, cost = 0.0, 0
        for batch in self.source.batches(self._specs(part, epoch)):
            loss = self._batch_loss(batch)
            part.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            part.optimizer.step()
            loss_sum += finite_loss(loss, epoch, part.index) * len(batch.seeds)
            cost += batch.cost
        return loss_sum, cost

    def grad_avg_epoch(self, epoch: int) -> dict[str, float]:
        """One epoch of per-mini-batch gradient averaging over every rank's batches.

        Each step all-reduces [sum of per-seed gradients, number of seeds] and divides, so every
        rank applies the gradient of the mean loss over all seeds trained in that step. The ranks
        first agree (one MAX all-reduce) on how many steps the rank with most batches needs.
        """
        self.model.train()
        torch.manual_seed(batch_seed(self.settings.seed, epoch, self.rank))
        specs = [spec for part in self.parts for spec in self._specs(part, epoch)]
        steps = int(self._all_reduce(torch.tensor([len(specs)]), dist.ReduceOp.MAX)[0])
        stream = self.source.batches(specs)
        params = list(self.model.parameters())
        optimizer = self.parts[0].optimizer
        figures = dict.fromkeys(("compute", "sync", "sync_wait", "loss", "trained", "cost"), 0.0)
        waited = self.source.wait_s
        for step in range(steps):
            started = time.perf_counter()
            optimizer.zero_grad(set_to_none=True)
            count = 0
            if step < len(specs):  # a rank past its last batch adds a zero gradient
                batch = next(stream)
                loss = self._batch_loss(batch)
                (loss * len(batch.seeds)).backward()
                figures["loss"] += finite_loss(loss, epoch, self.rank) * len(batch.seeds)
                figures["cost"] += batch.cost
                count = len(batch.seeds)
            local = torch.cat(
                [p.grad.reshape(-1) if p.grad is not None else torch.zeros_like(p).reshape(-1)
                 for p in params] + [torch.full((1,), float(count), device=self.device)]
            )  # fmt: skip
            waited_for_ranks = self._wait_for_ranks()
            synced = time.perf_counter()
            if self.distributed:
                dist.all_reduce(local, op=dist.ReduceOp.SUM)
            self._wait_for_device()
            sync_done = time.perf_counter()
            seeds_in_step = float(local[-1])
            offset = 0
            for param in params:
                param.grad = (local[offset : offset + param.numel()] / seeds_in_step).view_as(param)
                offset += param.numel()
            optimizer.step()
            figures["sync"] += sync_done - synced
            figures["sync_wait"] += waited_for_ranks
            figures["compute"] += (synced - started - waited_for_ranks) + (
                time.perf_counter() - sync_done
            )
            figures["trained"] += seeds_in_step
        return {**figures, "steps": steps, "wait": self.source.wait_s - waited}

    def train_round(
        self, first_epoch: int, length: int, record: dict[str, np.ndarray]
    ) -> tuple[list[State], list[float]]:
        """Every partition trains `length` epochs from the averaged model; returns its states."""
        states, weights = [], []
        for part in self.parts:
            if part.num_train == 0:
                continue  # weight 0: it would not change the average
            self.model.load_state_dict(self.global_state)
            for offset in range(length):
                epoch = first_epoch + offset
                started, waited = time.perf_counter(), self.source.wait_s
                loss, cost = self.train_epoch(part, epoch + 1)
                record["wait"][epoch] += self.source.wait_s - waited
                self._wait_for_device()
                record["compute"][epoch] += time.perf_counter() - started
                record["loss"][epoch] += loss
                record["cost"][epoch] += cost
            states.append(_clone(self.model.state_dict()))
            weights.append(float(part.num_train))
        return states, weights

    def synchronise(self, states: list[State], weights: list[float]) -> tuple[float, float]:
        """Set the global model to the training-node-weighted average; returns the seconds spent
        waiting for the other ranks and in the all-reduce."""
        if not self.distributed and self.job.book_path is None:
            self.global_state = states[0] if states else self.global_state
            self.model.load_state_dict(self.global_state)
            return 0.0, 0.0
        if not states:  # a rank whose partitions hold no training nodes adds nothing
            states, weights = [self.global_state], [0.0]
        waited = self._wait_for_ranks()
        started = time.perf_counter()
        self.global_state = all_reduce_average(
            weighted_state_sum(states, weights), self.total_train, distributed=self.distributed
        )
        self._wait_for_device()
        seconds = time.perf_counter() - started
        self.model.load_state_dict(self.global_state)
        return waited, seconds

    # --- the run -------------------------------------------------------------------------------
    def run(self) -> dict:
        try:
            return self._run()
        finally:
            self.source.close()

    def _run(self) -> dict:
        settings = self.settings
        epochs = settings.epochs
        grad_avg = settings.mode == "grad_avg"
        keys = ("compute", "loss", "sync", "sync_wait", "steps", "trained", "cost", "wait")
        record = {key: np.zeros(epochs) for key in keys}
        evaluations: dict[int, dict[str, tuple[float, float]]] = {}
        last_evaluated = 0
        rounds = range(0, epochs, 1 if grad_avg else settings.sync_interval)
        for start in progress(
            rounds,
            len(rounds),
            "training round",
            enabled=self.rank == 0,
            status=lambda start: self._round_status(record, evaluations, start),
        ):
            length = 1 if grad_avg else min(settings.sync_interval, epochs - start)
            if grad_avg:
                for key, value in self.grad_avg_epoch(start + 1).items():
                    record[key][start] = value
            else:
                states, weights = self.train_round(start, length, record)
                record["sync_wait"][start], record["sync"][start] = self.synchronise(
                    states, weights
                )
                record["steps"][start] = float(self.job.book_path is not None)
                record["trained"][start : start + length] = self.total_train  # by construction
            done = start + length
            if (
                done // settings.eval_every > last_evaluated // settings.eval_every
                or done == epochs
            ):
                evaluations[done] = self.evaluate()
                last_evaluated = done
        return self._summary(record, evaluations)

    def _round_status(self, record: dict[str, np.ndarray], evaluations, start: int) -> str:
        """Rank 0's line for the round begun at epoch `start`: its own mean loss (the global one
        would cost an all-reduce per round), the global val F1 if evaluated, compute s/epoch."""
        settings = self.settings
        grad_avg = settings.mode == "grad_avg"
        done = min(start + (1 if grad_avg else settings.sync_interval), settings.epochs)
        epochs = slice(start, done)
        own_train = sum(part.num_train for part in self.parts) or 1
        text = f"epoch {done}" if done == start + 1 else f"epochs {start + 1}-{done}"
        text += f": loss {record['loss'][epochs].mean() / own_train:.4f} (rank 0)"
        if done in evaluations:
            text += f", val F1 {evaluations[done]['val'][0]:.4f}"
        return f"{text}, {record['compute'][epochs].mean():.2f} s/epoch"
