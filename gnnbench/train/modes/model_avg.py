"""Model averaging (CATGNN / SDT-GNN): rank r trains partitions r, r+W, ... in turn, each
sync_interval epochs from the current averaged model with its own Adam state, then every rank joins
one all-reduce that averages the models weighted by owned training nodes.

`train.optimizer_state` says what happens to the Adam moments at a sync: `local` (CATGNN's code:
each partition keeps its own, built from its own gradients, across rounds), `reset` (cleared, so
every round starts Adam afresh from the averaged model) or `average` (exp_avg, exp_avg_sq and
step averaged with the same weights in a second all-reduce and given to every partition).

A rank loads each partition when its turn comes (gnnbench/train/resident.py); the Adam states stay
in memory between turns: two tensors of the model's size per partition, small next to any
partition's features (e.g. 1.2 MB for GraphSAGE 128-256-172)."""

from __future__ import annotations

import time

import torch

from gnnbench.progress import INNER_LINE_EVERY_S, progress
from gnnbench.train.context import finite_loss
from gnnbench.train.modes import TRAINING_MODES, TrainingMode
from gnnbench.train.record import EpochRecord
from gnnbench.train.resident import TrainingPart
from gnnbench.train.sampler import batch_seed
from gnnbench.train.spec import TrainSpec
from gnnbench.train.sync import State, all_reduce_average, weighted_state_sum


def _clone(state: dict[str, torch.Tensor]) -> State:
    return {key: value.detach().clone() for key, value in state.items()}


@TRAINING_MODES.register("model_avg")
class ModelAverage(TrainingMode):
    @staticmethod
    def round_length(spec: TrainSpec) -> int:
        return spec.sync_interval

    def train_round(self, start: int, length: int, record: EpochRecord) -> None:
        states, weights = self.train_parts(start, length, record)
        record.sync_wait_s[start], record.sync_time_s[start] = self.synchronise(states, weights)
        record.sync_count[start] = 1.0
        # every training node of every rank, each epoch, by construction
        record.train_nodes_per_epoch[start : start + length] = self.context.total_train

    def train_parts(
        self, first_epoch: int, length: int, record: EpochRecord
    ) -> tuple[list[State], list[float]]:
        """Every partition trains `length` epochs from the averaged model; returns its states."""
        ctx, state = self.context, self.context.state
        states, weights = [], []
        for index in ctx.partitions.indices:
            if ctx.partitions.num_train[index] == 0:
                continue  # weight 0: it would not change the average
            part = ctx.partitions.get(index)  # loaded now, unless it is the resident one
            state.model.load_state_dict(state.global_state)
            if ctx.spec.optimizer_state == "reset":
                state.optimizers[index].state.clear()
            for epoch in range(first_epoch, first_epoch + length):
                started, waited = time.perf_counter(), ctx.source.wait_s
                loss = self.train_epoch(part, epoch + 1, record)
                batch_wait = ctx.source.wait_s - waited
                record.batch_wait_s[epoch] += batch_wait
                ctx.group.wait_for_device()
                # compute alone, as grad_avg counts it: the wait for batches is batch_wait_s
                record.compute_time_s[epoch] += time.perf_counter() - started - batch_wait
                record.train_loss[epoch] += loss
            states.append(_clone(state.model.state_dict()))
            weights.append(float(part.num_train))
            del part  # released before the next one loads (gnnbench/train/resident.py)
        return states, weights

    def train_epoch(self, part: TrainingPart, epoch: int, record: EpochRecord) -> float:
        """One pass over the partition's training nodes, each batch's figures added to the
        epoch's record; the summed (not mean) loss."""
        ctx = self.context
        ctx.state.model.train()
        torch.manual_seed(batch_seed(ctx.spec.seed, epoch, part.index))  # rank-independent
        optimizer = ctx.state.optimizers[part.index]
        loss_sum = 0.0
        specs = ctx.batch_specs(part, epoch)
        batches = progress(ctx.source.batches(part, specs), len(specs),
                           f"epoch {epoch}, partition {part.index}: batches",
                           enabled=ctx.group.rank == 0, line_every_s=INNER_LINE_EVERY_S)  # fmt: skip
        for batch in batches:
            loss = ctx.batch_loss(batch)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            loss_sum += finite_loss(loss, epoch, part.index) * len(batch.seeds)
            record.add_batch(epoch - 1, batch, ctx.batch_seconds(batch))
        return loss_sum

    def synchronise(self, states: list[State], weights: list[float]) -> tuple[float, float]:
        """Set the global model to the training-node-weighted average; returns the seconds spent
        waiting for the other ranks and in the all-reduce."""
        ctx, state = self.context, self.context.state
        if not states:  # a rank whose partitions hold no training nodes adds nothing
            states, weights = [state.global_state], [0.0]
        waited = ctx.group.wait_for_ranks()
        started = time.perf_counter()
        state.global_state = self._average(states, weights)
        if ctx.spec.optimizer_state == "average":
            self.average_optimizer_states()
        ctx.group.wait_for_device()
        seconds = time.perf_counter() - started
        state.model.load_state_dict(state.global_state)
        return waited, seconds

    def _average(self, states: list[State], weights: list[float]) -> State:
        """The training-node-weighted average of every rank's `states` (one all-reduce)."""
        ctx = self.context
        distributed = ctx.group.distributed
        return all_reduce_average(
            weighted_state_sum(states, weights), ctx.total_train, distributed=distributed
        )

    def average_optimizer_states(self) -> None:
        """Every partition's Adam moments set to their training-node-weighted average over all
        partitions of all ranks (a partition that has not stepped yet counts as zeros)."""
        ctx, optimizers = self.context, self.context.state.optimizers
        params = list(ctx.state.model.parameters())
        counts = ctx.partitions.num_train
        trained = [index for index in ctx.partitions.indices if counts[index] > 0]
        states = [_adam_state(optimizers[index], params) for index in trained]
        weights = [float(counts[index]) for index in trained]
        if not states:
            states, weights = [_adam_state(None, params)], [0.0]
        average = self._average(states, weights)
        entries = [_adam_entry(average, index) for index in range(len(params))]
        for optimizer in optimizers.values():  # each its own copy: Adam updates in place
            for param, entry in zip(params, entries, strict=True):
                optimizer.state[param] = {key: value.clone() for key, value in entry.items()}


def _adam_state(optimizer: torch.optim.Optimizer | None, params: list) -> State:
    """One partition's Adam state as a flat State ('<param index>.<name>') on the parameters'
    device (one all-reduce; Adam keeps `step` on the CPU), zeros where it has none yet."""
    flat: State = {}
    for index, param in enumerate(params):
        state = optimizer.state.get(param, {}) if optimizer is not None else {}
        flat[f"{index}.step"] = torch.as_tensor(
            float(state.get("step", 0.0)), dtype=torch.float32, device=param.device
        )
        for name in ("exp_avg", "exp_avg_sq"):
            value = state.get(name)
            flat[f"{index}.{name}"] = torch.zeros_like(param) if value is None else value.detach()
    return flat


def _adam_entry(average: State, index: int) -> dict[str, torch.Tensor]:
    """The averaged state of parameter `index` in Adam's own layout (a CPU float step)."""
    return {
        "step": average[f"{index}.step"].detach().to("cpu", torch.float32),
        "exp_avg": average[f"{index}.exp_avg"],
        "exp_avg_sq": average[f"{index}.exp_avg_sq"],
    }
