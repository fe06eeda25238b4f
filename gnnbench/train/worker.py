"""One rank's training: its model, partitions and batches, and the loop of rounds in which its
training mode (gnnbench/train/modes: model_avg, grad_avg, centralized) trains and synchronises,
each round followed by evaluation (gnnbench/train/evaluation.py). The Worker builds what the mode
reads and changes (a TrainingContext, gnnbench/train/context.py) and what evaluation needs, and hands
each only that.

With a PartitionBook, rank r trains partitions r, r+W, r+2W, ..., one resident at a time
(gnnbench/train/resident.py). Without one (centralized mode) the single "partition" is the whole
graph. A partition's halo nodes hold only their edges to owned
nodes (CATGNN's 1-hop partitions), so its deeper neighbourhoods are truncated there.
"""

from __future__ import annotations

import time

import torch

from gnnbench.errors import DataError
from gnnbench.process.heap import setup_frozen
from gnnbench.process.io_counters import mb_between
from gnnbench.process.peak_rss import reset_peak_rss
from gnnbench.progress import progress
from gnnbench.train.batch_source import BatchSource
from gnnbench.train.context import ModelState, TrainingContext
from gnnbench.train.cost_model import calibrate
from gnnbench.train.evaluation import Evaluator
from gnnbench.train.group import RankGroup
from gnnbench.train.models import build_model
from gnnbench.train.modes import TRAINING_MODES, TrainingMode
from gnnbench.train.ogb_metric import OgbMetric
from gnnbench.train.record import EpochRecord
from gnnbench.train.resident import ResidentPartitions
from gnnbench.train.spec import Job
from gnnbench.train.sync import broadcast_state


class Worker:
    """One rank's model, optimizers and partitions; `run()` returns the run's summary."""

    def __init__(self, job: Job, rank: int, num_gpus: int, device: torch.device):
        self.spec = spec = job.spec
        self.group = RankGroup(rank, num_gpus, device)
        reset_peak_rss()  # train_peak_rss_mb: this process's own work from here
        torch.manual_seed(spec.seed)  # identical initial model on every rank
        model = build_model(job.num_features, job.num_classes, spec.model.as_config()).to(device)
        self.costs = calibrate(model, job.num_features, self.group)  # CM-GCN's c_f and c_b
        self.source = BatchSource(
            spec.strategy,
            spec.seed,
            spec.sampler_workers,
            spec.timeout_s,
            pin=device.type == "cuda",
            ahead=spec.batch_preparation == "thread",
            superbatch=spec.superbatch,
            superbatch_mb=spec.superbatch_mb,
        )
        self.partitions = ResidentPartitions(
            job, rank, num_gpus, model.uses_graph, before_release=self.source.close
        )
        mode = TRAINING_MODES.get(spec.mode)
        self.round_length = mode.round_length(spec)
        self.context = self._context(job, model, mode.shares_optimizer)
        self.mode: TrainingMode = mode(self.context)
        self.evaluator = Evaluator(
            model, self.group, self.partitions, job.num_classes, job.multilabel,
            OgbMetric.for_dataset(job.ogb_name), spec.eval_batch_size,
            layer_width=spec.model.hidden * (spec.model.heads or 1),
        )  # fmt: skip

    def _context(self, job: Job, model: torch.nn.Module, shares_optimizer: bool) -> TrainingContext:
        """The mode's context: every rank starts from rank 0's model; model_avg keeps an Adam
        state per partition between turns (two model-sized tensors each, small next to a
        partition), grad_avg one for all."""
        spec, group = self.spec, self.group

        def adam() -> torch.optim.Optimizer:
            return torch.optim.Adam(model.parameters(), lr=spec.lr, weight_decay=spec.weight_decay)

        shared = adam() if shares_optimizer else None
        optimizers = {index: shared or adam() for index in self.partitions.indices}
        global_state = broadcast_state(model.state_dict(), distributed=group.distributed)
        model.load_state_dict(global_state)
        local_train = torch.tensor([self.partitions.total_train], dtype=torch.float64)
        total_train = float(group.all_reduce(local_train)[0])  # = the split's training nodes
        if total_train == 0:
            raise DataError(f"{job.store_path}: the split has no training nodes")
        state = ModelState(model, optimizers, global_state)
        return TrainingContext(
            spec, group, self.partitions, self.source, job.multilabel, total_train, state,
            self.costs,
        )  # fmt: skip

    def run(self) -> dict:
        # the setup out of the collections that each turn's dropped partition starts
        with setup_frozen():
            try:
                return self._run()
            finally:
                try:
                    self.partitions.close()  # a load in flight ends before the rank does
                finally:
                    self.source.close()

    def _run(self) -> dict:
        spec, evaluator = self.spec, self.evaluator
        record = EpochRecord.zeros(spec.epochs)
        last_evaluated = 0
        rounds = range(0, spec.epochs, self.round_length)
        status = lambda start: self._round_status(record, start)  # noqa: E731
        for start in progress(rounds, len(rounds), "training round", enabled=self.group.rank == 0,
                              status=status):  # fmt: skip
            length = min(self.round_length, spec.epochs - start)
            started, read = time.perf_counter(), self.source.read_bytes()
            self.mode.train_round(start, length, record)
            self.group.wait_for_device()
            # the wall clock of a round's epochs: its loads, batch waits and syncs included
            record.epoch_time_s[start : start + length] = (time.perf_counter() - started) / length
            record.bytes_read_mb[start : start + length] = (
                mb_between(read, self.source.read_bytes()) / length
            )
            done = start + length
            if done // spec.eval_every > last_evaluated // spec.eval_every or done == spec.epochs:
                evaluator.measured_evaluation(done)
                last_evaluated = done
        return self._summary(record)

    def _round_status(self, record: EpochRecord, start: int) -> str:
        """Rank 0's line for the round begun at epoch `start`: its own mean loss (the global one
        would cost an all-reduce per round), the global val F1 if evaluated, compute s/epoch."""
        done = min(start + self.round_length, self.spec.epochs)
        epochs = slice(start, done)
        own_train = self.partitions.total_train or 1
        text = f"epoch {done}" if done == start + 1 else f"epochs {start + 1}-{done}"
        text += f": loss {record.train_loss[epochs].mean() / own_train:.4f} (rank 0)"
        if done in self.evaluator.scores:
            text += f", val F1 {self.evaluator.scores[done]['val'][0]:.4f}"
        return f"{text}, {record.epoch_time_s[epochs].mean():.2f} s/epoch"

    def _summary(self, record: EpochRecord) -> dict:
        """The run's figures over every rank (times of the slowest, global mean losses) and its
        F1 at the first best val F1."""
        group = self.group
        figures, losses = record.run_figures(group, self.context.total_train)
        memory = self.evaluator.phases.worst_over_ranks(
            group,
            sampler_peak_mb=self.source.sampler_peak_mb,
            samplers=self.source.sampler_workers,
            load_s=self.partitions.load_s,
            first_load_s=self.partitions.first_load_s or 0.0,
            epochs=self.spec.epochs,
        )
        return {
            **figures,
            "gpu_peak_mb": group.gpu_peak_mb(),
            **memory,
            **self.evaluator.summary(losses),
            **(self.costs.as_metrics() if self.costs else {}),
            "num_epochs": int(self.spec.epochs),
            "training_ranks": int(group.num_gpus),
            "device": group.device.type,
        }
