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

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

from gnnbench.data.store import GraphStore
from gnnbench.errors import DataError
from gnnbench.partition.book import PartitionBook
from gnnbench.progress import progress
from gnnbench.train.batch_source import BatchMaker, BatchSource, PreparedBatch
from gnnbench.train.batching import BatchPlan, cluster_plans, clusters, minibatch_plans
from gnnbench.train.metrics import confusion_counts, f1_scores
from gnnbench.train.models import build_model
from gnnbench.train.ogb_metric import OgbMetric
from gnnbench.train.sampler import (
    ALL_NEIGHBOURS,
    Block,
    NeighbourSampler,
    batch_seed,
    with_neighbours,
)
from gnnbench.train.settings import Job
from gnnbench.train.sync import State, all_reduce_average, broadcast_state, weighted_state_sum

EVAL_SPLITS = ("val", "test")


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


def _rows(table: np.ndarray | torch.Tensor, ids: np.ndarray) -> torch.Tensor:
    """Rows `ids` of a feature array (memory-mapped or not) or of a layer's output tensor."""
    if isinstance(table, torch.Tensor):
        return table[torch.from_numpy(ids)]
    return torch.from_numpy(np.asarray(table[ids]))


def _clone(state: dict[str, torch.Tensor]) -> State:
    return {key: value.detach().clone() for key, value in state.items()}


class Worker:
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
            loss_sum += loss.item() * len(batch.seeds)
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
                figures["loss"] += loss.item() * len(batch.seeds)
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

    # --- evaluation ----------------------------------------------------------------------------
    @torch.no_grad()
    def evaluate(self) -> dict[str, Any]:
        """Global (micro, macro) F1 of val and test over the nodes each rank owns, and OGB's own
        metric of an ogbn dataset ("ogb": {split: value})."""
        self.model.eval()
        counts = torch.zeros((len(EVAL_SPLITS), 3, self.job.num_classes), dtype=torch.int64)
        ogb_rows: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in EVAL_SPLITS]
        for part in self.parts:
            ids = np.concatenate([part.split[key] for key in EVAL_SPLITS])
            tags = np.repeat(
                np.arange(len(EVAL_SPLITS)), [len(part.split[key]) for key in EVAL_SPLITS]
            )
            if not len(ids):
                continue
            # unique targets (a node may sit in both splits of a custom dataset)
            unique, inverse = np.unique(ids, return_inverse=True)
            logits = self.infer(part, unique)[torch.from_numpy(inverse)]
            prediction = self._predict(logits)
            target = part.labels[torch.from_numpy(ids)]
            for s in range(len(EVAL_SPLITS)):
                mask = torch.from_numpy(tags == s)
                counts[s] += confusion_counts(prediction[mask], target[mask], self.job.num_classes)
                if self.ogb is not None:
                    ogb_rows[s].append((self.ogb.truth(target[mask]), self.ogb.rows(logits[mask])))
        counts = self._all_reduce(counts)
        scores: dict[str, Any] = {key: f1_scores(counts[s]) for s, key in enumerate(EVAL_SPLITS)}
        if self.ogb is not None:
            scores["ogb"] = {key: self._ogb_score(ogb_rows[s]) for s, key in enumerate(EVAL_SPLITS)}
        return scores

    def _ogb_score(self, rows: list[tuple[np.ndarray, np.ndarray]]) -> float | None:
        """OGB's metric over every rank's rows of one split (gathered: ROC-AUC does not add up)."""
        if self.distributed:
            everyone: list = [None] * self.world_size
            dist.all_gather_object(everyone, rows)
            rows = [row for rank_rows in everyone for row in rank_rows]
        if not rows:
            return None
        return self.ogb.score(
            np.concatenate([t for t, _ in rows]), np.concatenate([p for _, p in rows])
        )

    def infer(self, part: TrainingPart, targets: np.ndarray) -> torch.Tensor:
        """The model's outputs for `targets` with every neighbour, layer by layer (on the CPU).

        Each layer runs once over the nodes the targets need from it (the last layer over the
        targets, each inner one over one hop more), in chunks of eval_batch_size, from the
        previous layer's outputs. Sampling each chunk's full K-hop neighbourhood instead
        recomputes the inner layers of nodes that many chunks share: on amazon_cs and
        coauthor_cs nearly the whole graph, once per chunk.
        """
        if not self.model.uses_graph:
            return self._chunked(
                targets, lambda chunk: self._forward(_rows(part.features, chunk), [])
            )
        h, row_of = part.features, None  # row_of[node]: its row in h (None: h is by node id)
        for layer, rows in enumerate(self._needed_rows(part, targets)):

            def one_hop(chunk: np.ndarray, h=h, row_of=row_of, layer=layer) -> torch.Tensor:
                batch = part.hop_sampler.sample(chunk, 0)
                ids = batch.n_id if row_of is None else row_of[batch.n_id]
                x = _rows(h, ids).to(self.device, non_blocking=True)
                return self.model.layer(layer, x, self._on_device(batch.blocks[0]))

            h = self._chunked(rows, one_hop)
            if layer < self.model.num_layers - 1:
                row_of = np.full(len(part.hop_sampler.indptr) - 1, -1, dtype=np.int64)
                row_of[rows] = np.arange(len(rows))
        return h

    def _needed_rows(self, part: TrainingPart, targets: np.ndarray) -> list[np.ndarray]:
        """Per layer, the nodes whose output the targets need: the last layer's are the targets,
        each inner layer's add the next one's neighbours."""
        graph = part.hop_sampler
        needed = [targets]
        for _ in range(self.model.num_layers - 1):
            needed.append(with_neighbours(graph.indptr, graph.indices, needed[-1]))
        return needed[::-1]

    def _chunked(self, rows: np.ndarray, compute) -> torch.Tensor:
        """compute(chunk) over rows in chunks of eval_batch_size, into one tensor on the CPU
        (filled in place: concatenating the chunks would hold every output twice)."""
        size = self.settings.eval_batch_size
        output = None
        for start in range(0, len(rows), size):
            chunk = compute(rows[start : start + size]).cpu()
            if output is None:
                output = torch.empty((len(rows), *chunk.shape[1:]), dtype=chunk.dtype)
            output[start : start + len(chunk)] = chunk
        return output if output is not None else torch.empty(0)

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

    def _ogb_summary(self, best: dict[str, Any]) -> dict[str, float]:
        """val_ogb_<metric> and test_ogb_<metric> at the best validation point."""
        if self.ogb is None:
            return {}
        found = best["ogb"].items()
        return {f"{key}_ogb_{self.ogb.metric}": v for key, v in found if v is not None}

    def _gpu_peak_mb(self) -> float | None:
        """The largest rank's peak of allocated CUDA tensors; None on the CPU."""
        if self.device.type != "cuda":
            return None
        peak = torch.tensor([torch.cuda.max_memory_allocated(self.device) / 2**20])
        return float(self._all_reduce(peak, dist.ReduceOp.MAX)[0])

    def _summary(self, record: dict[str, np.ndarray], evaluations) -> dict:
        """Times of the slowest rank, global mean losses, test F1 at the first best val F1."""
        slowest = self._all_reduce(torch.from_numpy(record["compute"]), dist.ReduceOp.MAX).numpy()
        waits = self._all_reduce(torch.from_numpy(record["wait"]), dist.ReduceOp.MAX).numpy()
        losses = self._all_reduce(torch.from_numpy(record["loss"])).numpy() / self.total_train
        cost = self._all_reduce(torch.from_numpy(record["cost"])).numpy()  # every rank's batches
        sync = self._all_reduce(
            torch.tensor([record["sync"].sum(), record["sync_wait"].sum()], dtype=torch.float64),
            dist.ReduceOp.MAX,
        )
        best_epoch = max(evaluations, key=lambda epoch: evaluations[epoch]["val"][0])
        best = evaluations[best_epoch]
        history = []
        for epoch, loss in enumerate(losses, start=1):
            val = evaluations[epoch]["val"][0] if epoch in evaluations else None
            history.append({"epoch": epoch, "train_loss": float(loss), "val_f1_micro": val})
        return {
            "epoch_time_s": float(slowest.mean()),
            "sync_time_s": float(sync[0]),  # all-reduces alone, the slowest rank's total
            "sync_wait_s": float(sync[1]),  # waiting for the slowest rank first, the longest total
            "sync_count": float(record["steps"].mean()),  # all-reduces of the model or gradients
            "train_nodes_per_epoch": float(record["trained"].min()),  # every epoch's fewest
            "computation_cost": float(cost.mean()),  # (node, layer) pairs per epoch, all ranks
            "batch_wait_s": float(waits.mean()),  # per epoch, the slowest-waiting rank's
            "gpu_peak_mb": self._gpu_peak_mb(),
            "val_f1_micro": float(best["val"][0]),
            "test_f1_micro": float(best["test"][0]),
            "test_f1_macro": float(best["test"][1]),
            **self._ogb_summary(best),
            "best_epoch": int(best_epoch),
            "num_epochs": int(self.settings.epochs),
            "world_size": int(self.world_size),
            "device": self.device.type,
            "history": history,
        }
