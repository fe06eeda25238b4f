"""One rank's training: its model, partitions and batches, and the loop of rounds in which its
training mode (gnnbench/train/modes: model_avg, grad_avg, centralized) trains and synchronises,
each round followed by evaluation (gnnbench/train/evaluation.py).

With a PartitionBook, rank r trains partitions r, r+W, r+2W, ..., one resident at a time
(gnnbench/train/resident.py). Without one (centralized mode) the single "partition" is the whole
graph. A partition's halo nodes hold only their edges to owned
nodes (CATGNN's 1-hop partitions), so its deeper neighbourhoods are truncated there.
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

from gnnbench.errors import DataError, NonFiniteLoss
from gnnbench.peak_rss import reset_peak_rss
from gnnbench.progress import progress
from gnnbench.train.batch_source import BatchSource, PreparedBatch
from gnnbench.train.batching import BatchPlan, cluster_plans, minibatch_plans
from gnnbench.train.evaluation import EvaluationMixin, PhaseFigures
from gnnbench.train.models import build_model
from gnnbench.train.modes import TRAINING_MODES
from gnnbench.train.ogb_metric import OgbMetric
from gnnbench.train.resident import ResidentPartitions, TrainingPart
from gnnbench.train.sampler import Block
from gnnbench.train.spec import Job
from gnnbench.train.sync import broadcast_state


def finite_loss(loss: torch.Tensor, epoch: int, where: int) -> float:
    """The batch loss as a number; NaN or inf stops the run (NonFiniteLoss names the epoch)."""
    value = loss.item()
    if not math.isfinite(value):
        raise NonFiniteLoss(
            f"train loss is {value} at epoch {epoch} (partition or rank {where}): features too "
            "large or a learning rate too high (train.lr)"
        )
    return value


class Worker(EvaluationMixin):
    """One rank's model, optimizers and partitions; `run()` returns the run's summary."""

    def __init__(self, job: Job, rank: int, world_size: int, device: torch.device):
        self.job = job
        self.spec = job.spec
        self.rank = rank
        self.world_size = world_size
        self.device = device
        reset_peak_rss()  # train_peak_rss_mb: this process's own work from here
        self.phases = PhaseFigures()
        # From world_size, not dist.is_initialized(): a torchrun sweep keeps its process group
        # between jobs, and a centralized job then runs on rank 0 alone.
        self.distributed = world_size > 1
        self.ogb = OgbMetric.for_dataset(job.ogb_name)  # an ogbn dataset's official metric
        torch.manual_seed(self.spec.seed)  # identical initial model on every rank
        self.model = build_model(job.num_features, job.num_classes, self.spec.model.as_config()).to(
            device
        )
        self.source = BatchSource(
            self.spec.strategy,
            self.spec.seed,
            self.spec.sampler_workers,
            self.spec.timeout_s,
            pin=device.type == "cuda",
        )
        self.partitions = ResidentPartitions(
            job, rank, world_size, self.model.uses_graph, before_release=self.source.close
        )
        self.mode = TRAINING_MODES.get(job.spec.mode)(self)
        self.round_length = self.mode.round_length(job.spec)
        # model_avg: an Adam state per partition, kept between turns (two model-sized tensors
        # each, small next to a partition); grad_avg: one for all
        shared = self._optimizer() if self.mode.shares_optimizer else None
        self.optimizers = {i: shared or self._optimizer() for i in self.partitions.indices}
        self.global_state = broadcast_state(self.model.state_dict(), distributed=self.distributed)
        self.model.load_state_dict(self.global_state)
        local_train = torch.tensor([self.partitions.total_train], dtype=torch.float64)
        self.total_train = float(self.all_reduce(local_train)[0])  # = the split's training nodes
        if self.total_train == 0:
            raise DataError(f"{job.store_path}: the split has no training nodes")

    def _optimizer(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(
            self.model.parameters(), lr=self.spec.lr, weight_decay=self.spec.weight_decay
        )

    # --- collectives ---------------------------------------------------------------------------
    def all_reduce(self, tensor: torch.Tensor, op=None) -> torch.Tensor:
        """All-reduce on this rank's device (NCCL needs CUDA tensors); result back on the CPU."""
        if not self.distributed:
            return tensor
        on_device = tensor.to(self.device)
        dist.all_reduce(on_device, op=op or dist.ReduceOp.SUM)
        return on_device.cpu()

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
        spec = self.spec
        rng = np.random.default_rng([spec.seed % (1 << 63), epoch, part.index])
        train = part.split["train"]
        graph = (part.sampler.indptr, part.sampler.indices)
        if spec.strategy == "full":
            return [BatchPlan(key=0, seeds=train)] if len(train) else []
        if spec.strategy == "cluster":
            return cluster_plans(*graph, train, part.clusters, spec.clusters_per_batch, rng)
        size = spec.batch_size
        if spec.batches_per_epoch:
            size = max(1, -(-len(train) // spec.batches_per_epoch))
        return minibatch_plans(*graph, train, size, spec.batching == "cohesive", rng)

    def batch_loss(self, batch: PreparedBatch) -> torch.Tensor:
        """The batch's mean loss."""
        logits = self._forward(batch.x, batch.blocks)
        return self._loss(logits, batch.target.to(self.device))

    def batch_specs(self, part: TrainingPart, epoch: int) -> list[tuple[int, BatchPlan, int]]:
        return [(part.index, plan, epoch) for plan in self._batches(part, epoch)]

    # --- the run -------------------------------------------------------------------------------
    def run(self) -> dict:
        try:
            return self._run()
        finally:
            self.source.close()

    def _run(self) -> dict:
        spec = self.spec
        keys = ("compute", "loss", "sync", "sync_wait", "steps", "trained", "cost", "wait")
        record = {key: np.zeros(spec.epochs) for key in keys}
        evaluations: dict[int, dict[str, tuple[float, float]]] = {}
        last_evaluated = 0
        rounds = range(0, spec.epochs, self.round_length)
        status = lambda start: self._round_status(record, evaluations, start)  # noqa: E731
        for start in progress(rounds, len(rounds), "training round", enabled=self.rank == 0,
                              status=status):  # fmt: skip
            length = min(self.round_length, spec.epochs - start)
            self.mode.train_round(start, length, record)
            done = start + length
            if done // spec.eval_every > last_evaluated // spec.eval_every or done == spec.epochs:
                evaluations[done] = self.measured_evaluation()
                last_evaluated = done
        return self._summary(record, evaluations)

    def _round_status(self, record: dict[str, np.ndarray], evaluations, start: int) -> str:
        """Rank 0's line for the round begun at epoch `start`: its own mean loss (the global one
        would cost an all-reduce per round), the global val F1 if evaluated, compute s/epoch."""
        done = min(start + self.round_length, self.spec.epochs)
        epochs = slice(start, done)
        own_train = self.partitions.total_train or 1
        text = f"epoch {done}" if done == start + 1 else f"epochs {start + 1}-{done}"
        text += f": loss {record['loss'][epochs].mean() / own_train:.4f} (rank 0)"
        if done in evaluations:
            text += f", val F1 {evaluations[done]['val'][0]:.4f}"
        return f"{text}, {record['compute'][epochs].mean():.2f} s/epoch"
