"""What a training mode records per epoch on one rank, and how the ranks' records become the run's
training figures (docs/design.md, "Metrics"). Each field is named after the metric it becomes
(gnnbench/train/result.py), so what a meter covers is said here once.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist

from gnnbench.train.group import RankGroup


@dataclass
class EpochRecord:
    """This rank's figures, one entry per epoch (index epoch - 1), filled by its training mode."""

    epoch_time_s: np.ndarray  # wall seconds: the round's, loads, waits and syncs included
    compute_time_s: np.ndarray  # compute seconds (batch waits, loads and syncs excluded)
    train_loss: np.ndarray  # the loss summed over the seeds this rank trained (not a mean)
    sync_time_s: np.ndarray  # seconds in all-reduces of the model or gradients
    sync_wait_s: np.ndarray  # seconds waiting for the slowest rank before them
    sync_count: np.ndarray  # those all-reduces
    train_nodes_per_epoch: np.ndarray  # seeds trained by every rank together
    computation_cost: np.ndarray  # (node, layer) pairs of this rank's batches
    computation_cost_s: np.ndarray  # their C(B) under CM-GCN's measured cost model
    largest_batch_nodes: np.ndarray  # seeds in this rank's largest batch
    batch_wait_s: np.ndarray  # seconds waiting for prepared batches
    bytes_read_mb: np.ndarray  # storage reads of this rank and its samplers (NaN: not counted)

    @classmethod
    def zeros(cls, epochs: int) -> EpochRecord:
        return cls(**{field.name: np.zeros(epochs) for field in dataclasses.fields(cls)})

    def add_batch(self, at: int, batch, seconds: float) -> None:
        """A trained batch's figures added to epoch index `at`: its unit cost, its cost under
        the cost model (`seconds`) and its seeds towards the largest batch."""
        self.computation_cost[at] += batch.cost
        self.computation_cost_s[at] += seconds
        self.largest_batch_nodes[at] = max(self.largest_batch_nodes[at], len(batch.seeds))

    def run_figures(
        self, group: RankGroup, total_train: float
    ) -> tuple[dict[str, float], np.ndarray]:
        """The run's figures over every rank, and the global mean loss of each epoch: times of
        the slowest rank, losses and costs summed over the ranks."""
        slowest = self._worst(group, self.epoch_time_s)
        computing = self._worst(group, self.compute_time_s)
        waits = self._worst(group, self.batch_wait_s)
        losses = group.all_reduce(torch.from_numpy(self.train_loss)).numpy() / total_train
        cost = group.all_reduce(torch.from_numpy(self.computation_cost)).numpy()
        cost_s = group.all_reduce(torch.from_numpy(self.computation_cost_s)).numpy()
        sync = group.all_reduce(
            torch.tensor([self.sync_time_s.sum(), self.sync_wait_s.sum()], dtype=torch.float64),
            dist.ReduceOp.MAX,
        )
        figures = {
            "epoch_time_s": float(slowest.mean()),
            "compute_time_s": float(computing.mean()),
            "sync_time_s": float(sync[0]),  # the slowest rank's total
            "sync_wait_s": float(sync[1]),  # the longest total
            "sync_count": float(self.sync_count.mean()),  # per epoch
            "train_nodes_per_epoch": float(self.train_nodes_per_epoch.min()),  # the fewest
            "computation_cost": float(cost.mean()),  # per epoch, all ranks
            "computation_cost_s": float(cost_s.mean()),  # per epoch, all ranks
            # per epoch, the largest on any rank (cmgcn's sizes follow the graph)
            "largest_batch_nodes": float(self._worst(group, self.largest_batch_nodes).mean()),
            "batch_wait_s": float(waits.mean()),  # per epoch, the slowest-waiting rank's
            "bytes_read_mb": self._total_mean(group, self.bytes_read_mb),  # per epoch, all ranks
        }
        return figures, losses

    @staticmethod
    def _total_mean(group: RankGroup, values: np.ndarray) -> float | None:
        """The mean over epochs of the ranks' sum; None where a rank could not count."""
        total = group.all_reduce(torch.from_numpy(values)).numpy().mean()
        return float(total) if np.isfinite(total) else None

    @staticmethod
    def _worst(group: RankGroup, values: np.ndarray) -> np.ndarray:
        return group.all_reduce(torch.from_numpy(values), dist.ReduceOp.MAX).numpy()
