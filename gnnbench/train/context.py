"""What a Worker hands its training mode (gnnbench/train/modes): what the mode may read, in a
frozen `TrainingContext`, and the one thing it may change, its `ModelState`. A mode sees nothing
else of the Worker; it writes its figures into the round's EpochRecord (gnnbench/train/record.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from gnnbench.errors import NonFiniteLoss
from gnnbench.train import forward
from gnnbench.train.batch_source import BatchSource, PreparedBatch
from gnnbench.train.batching import (
    BatchPlan,
    cluster_plans,
    minibatch_count,
    minibatch_plans,
    minibatch_size,
)
from gnnbench.train.cost_model import LayerCosts
from gnnbench.train.group import RankGroup
from gnnbench.train.resident import ResidentPartitions, TrainingPart
from gnnbench.train.spec import TrainSpec
from gnnbench.train.sync import State


@dataclass
class ModelState:
    """What a training mode changes: the model's weights (in place), each partition's optimizer
    (one shared by all where the mode says so) and the model every rank agrees on, which the mode
    replaces at each synchronisation and evaluation reads through `model`."""

    model: nn.Module
    optimizers: dict[int, torch.optim.Optimizer]
    global_state: State


@dataclass(frozen=True)
class TrainingContext:
    """What a training mode reads: the spec, this rank's group (collectives), its partitions (one
    resident at a time, `partitions.get` loading in turn: a mode drops its own reference to one
    before asking for the next), its batch source, the split's training
    nodes over all ranks; and `state`, which it changes."""

    spec: TrainSpec
    group: RankGroup
    partitions: ResidentPartitions
    source: BatchSource
    multilabel: bool
    total_train: float
    state: ModelState
    costs: LayerCosts | None = None  # CM-GCN's measured cost model (None: a model without blocks)

    def batch_seconds(self, batch: PreparedBatch) -> float:
        """C(B) of the batch under the cost model (0 without one)."""
        return self.costs.batch_seconds(batch.blocks) if self.costs else 0.0

    def batch_count(self, index: int) -> int | None:
        """How many batches partition `index` makes in an epoch where its training-node count
        alone says (shuffled or BFS-cut mini-batches, the full batch), so that it need not be
        loaded to know; None where its graph decides (clusters, cmgcn's batches)."""
        spec, num_train = self.spec, self.partitions.num_train[index]
        if spec.strategy == "full":
            return 1 if num_train else 0
        if spec.strategy == "minibatch" and spec.batching in ("random", "cohesive"):
            return minibatch_count(num_train, spec.batch_size, spec.batches_per_epoch)
        return None

    def batch_specs(self, part: TrainingPart, epoch: int) -> list[tuple[int, BatchPlan, int]]:
        """The partition's batches for this epoch, as the batch source takes them."""
        return [(part.index, plan, epoch) for plan in self._plans(part, epoch)]

    def _plans(self, part: TrainingPart, epoch: int) -> list[BatchPlan]:
        """Per train.strategy and train.batching, from a seed of (seed, epoch, partition)."""
        spec = self.spec
        rng = np.random.default_rng([spec.seed % (1 << 63), epoch, part.index])
        train = part.split["train"]
        graph = (part.sampler.indptr, part.sampler.indices)
        if spec.strategy == "full":
            return [BatchPlan(key=0, seeds=train)] if len(train) else []
        if spec.strategy == "cluster":
            return cluster_plans(*graph, train, part.groups, spec.clusters_per_batch, rng,
                                 spec.cluster_boundary)  # fmt: skip
        if spec.batching == "cmgcn":  # fixed batches, a new order each epoch
            return [
                BatchPlan(key=i, seeds=part.groups[i]) for i in rng.permutation(len(part.groups))
            ]
        size = minibatch_size(len(train), spec.batch_size, spec.batches_per_epoch)
        return minibatch_plans(*graph, train, size, spec.batching == "cohesive", rng)

    def batch_loss(self, batch: PreparedBatch) -> torch.Tensor:
        """The batch's mean loss under the current weights."""
        device = self.group.device
        logits = forward.forward(self.state.model, batch.x, batch.blocks, device)
        return forward.loss(logits, batch.target.to(device), self.multilabel)


def finite_loss(loss: torch.Tensor, epoch: int, where: int) -> float:
    """The batch loss as a number; NaN or inf stops the run (NonFiniteLoss names the epoch)."""
    value = loss.item()
    if not math.isfinite(value):
        raise NonFiniteLoss(
            f"train loss is {value} at epoch {epoch} (partition or rank {where}): features too "
            "large or a learning rate too high (train.lr)"
        )
    return value
