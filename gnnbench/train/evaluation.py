"""Evaluation and the run's summary, for the per-rank training loop (gnnbench.train.worker).

Evaluation runs the model layer by layer over each partition (every neighbour, each layer once over
the nodes the val and test targets need), counts confusion per class on the nodes each rank owns
and all-reduces the counts, so F1 is exact over the whole graph. An ogbn dataset's own metric is
computed from every rank's gathered rows. The summary reduces each rank's per-epoch record to the
run's figures (the slowest rank's times, global losses, F1 at the best validation point).

Evaluation is bounded in memory: the targets go in groups whose innermost layer's outputs fit
EVAL_HELD_BYTES (a single group on small graphs), each layer in chunks of eval_batch_size; rows are found by binary search in the group's sorted needed rows, never through a
dense array over the partition.

The training process's resident peak is measured apart for training and evaluation (PhaseFigures):
the high-water mark is read before each evaluation and reset around it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from gnnbench.peak_rss import PeakRss, peak_rss_mb, reset_peak_rss
from gnnbench.train.batch_source import feature_rows
from gnnbench.train.metrics import confusion_counts, f1_scores
from gnnbench.train.sampler import with_neighbours

EVAL_SPLITS = ("val", "test")
# What a group of evaluation targets may hold of one inner layer's outputs (float32): 512 MB is
# 524 k rows at 256 hidden, so small graphs are one group and a 100 M-node partition is many.
EVAL_HELD_BYTES = 512 << 20


@dataclass
class PhaseFigures:
    """This rank's memory and time apart for training and evaluation."""

    train_peak_mb: float = 0.0  # resident high-water mark while training (loads included)
    eval_peak_mb: float = 0.0  # the same over the evaluations
    eval_s: float = 0.0  # every evaluation, its loads included
    evaluations: int = 0
    eval_load_s: float = 0.0  # what evaluations spent loading partitions (out of load_time_s)


def _rows(table: Any, ids: np.ndarray) -> torch.Tensor:
    """Rows `ids` of a partition's features (float32) or of a layer's output tensor."""
    if isinstance(table, torch.Tensor):
        return table[torch.from_numpy(ids)]
    return torch.from_numpy(feature_rows(table, ids))


class _RowLookup:
    """Rows of given nodes in a layer's output held for `nodes` (any order), by binary search:
    memory of the held rows' size, not of the partition's."""

    def __init__(self, nodes: np.ndarray):
        self.order = np.argsort(nodes, kind="stable")
        self.sorted = nodes[self.order]

    def rows(self, ids: np.ndarray) -> np.ndarray:
        return self.order[np.searchsorted(self.sorted, ids)]


class EvaluationMixin:
    """Worker's evaluation and summary. Uses the worker's model, device, job, spec, partitions,
    phases, source, ogb metric, total_train, world_size and distributed, and its _forward,
    _on_device, _predict and all_reduce."""

    # --- evaluation ----------------------------------------------------------------------------
    def measured_evaluation(self) -> dict[str, Any]:
        """`evaluate()` with its time, loads and resident peak kept apart from training's."""
        phases = self.phases
        phases.train_peak_mb = max(phases.train_peak_mb, peak_rss_mb())
        loaded, started = self.partitions.load_s, time.perf_counter()
        with PeakRss() as rss:
            scores = self.evaluate()
        phases.eval_s += time.perf_counter() - started
        phases.evaluations += 1
        phases.eval_load_s += self.partitions.load_s - loaded
        phases.eval_peak_mb = max(phases.eval_peak_mb, rss.peak_mb)
        reset_peak_rss()  # training's high-water mark starts again from here
        return scores

    @torch.no_grad()
    def evaluate(self) -> dict[str, Any]:
        """Global (micro, macro) F1 of val and test over the nodes each rank owns, and OGB's own
        metric of an ogbn dataset ("ogb": {split: value})."""
        self.model.eval()
        counts = torch.zeros((len(EVAL_SPLITS), 3, self.job.num_classes), dtype=torch.int64)
        ogb_rows: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in EVAL_SPLITS]
        for part in self.partitions.in_turn(resident_first=True):
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
        counts = self.all_reduce(counts)
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

    def infer(self, part, targets: np.ndarray) -> torch.Tensor:
        """The model's outputs for `targets` with every neighbour, layer by layer (on the CPU).

        Each layer runs once over the nodes the targets need from it (the last layer over the
        targets, each inner one over one hop more), in chunks of eval_batch_size, from the
        previous layer's outputs. Sampling each chunk's full K-hop neighbourhood instead
        recomputes the inner layers of nodes that many chunks share: on amazon_cs and
        coauthor_cs nearly the whole graph, once per chunk. On a large partition the targets go
        in groups (`_target_groups`), so the inner layers' outputs held at once stay bounded.
        """
        if not self.model.uses_graph:
            return self._chunked(
                targets, lambda chunk: self._forward(_rows(part.features, chunk), [])
            )
        groups = self._target_groups(part, targets)
        if len(groups) == 1:
            return self._infer_group(part, targets)
        outputs = [self._infer_group(part, group) for group in groups]
        return torch.cat(outputs)  # one row per target: as small as the logits

    def _target_groups(self, part, targets: np.ndarray) -> list[np.ndarray]:
        """`targets` cut, in order, into runs of eval_batch_size chunks whose innermost layer
        needs at most `_held_rows()` distinct rows in all (one chunk alone may need more: then it
        is a group by itself). Counting distinct rows takes one flag per partition node."""
        size = self.spec.eval_batch_size
        limit = self._held_rows()
        listed = np.zeros(len(part.hop_sampler.indptr) - 1, dtype=np.bool_)
        groups: list[list[np.ndarray]] = [[]]
        held = 0
        for start in range(0, len(targets), size):
            chunk = targets[start : start + size]
            rows = self._needed_rows(part, chunk)[0]
            new = rows[~listed[rows]]
            if groups[-1] and held + len(new) > limit:
                groups.append([])
                listed[:] = False
                held, new = 0, rows
            listed[new] = True
            held += len(new)
            groups[-1].append(chunk)
        return [np.concatenate(group) for group in groups if group]

    def _held_rows(self) -> int:
        """Rows of inner-layer outputs (float32, hidden x heads wide) that fit EVAL_HELD_BYTES."""
        model = self.spec.model
        width = model.hidden * (model.heads or 1)
        return max(self.spec.eval_batch_size, EVAL_HELD_BYTES // (4 * width))

    def _infer_group(self, part, targets: np.ndarray) -> torch.Tensor:
        """infer() over one group of targets: each layer's outputs for the rows it needs."""
        h, held = part.features, None  # held: the node of each row of h (None: h is by node id)
        for layer, rows in enumerate(self._needed_rows(part, targets)):
            lookup = None if held is None else _RowLookup(held)

            def one_hop(chunk: np.ndarray, h=h, lookup=lookup, layer=layer) -> torch.Tensor:
                batch = part.hop_sampler.sample(chunk, 0)
                ids = batch.n_id if lookup is None else lookup.rows(batch.n_id)
                x = _rows(h, ids).to(self.device, non_blocking=True)
                return self.model.layer(layer, x, self._on_device(batch.blocks[0]))

            h, held = self._chunked(rows, one_hop), rows
        return h

    def _needed_rows(self, part, targets: np.ndarray) -> list[np.ndarray]:
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
        size = self.spec.eval_batch_size
        output = None
        for start in range(0, len(rows), size):
            chunk = compute(rows[start : start + size]).cpu()
            if output is None:
                output = torch.empty((len(rows), *chunk.shape[1:]), dtype=chunk.dtype)
            output[start : start + len(chunk)] = chunk
        return output if output is not None else torch.empty(0)

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
        return float(self.all_reduce(peak, dist.ReduceOp.MAX)[0])

    def _phase_summary(self) -> dict[str, float]:
        """The largest rank's training and evaluation peaks (samplers included), and the slowest
        rank's loading per epoch and time per evaluation."""
        phases = self.phases  # a run ends in an evaluation: training's peak was read before it
        train_peak = max(phases.train_peak_mb, self.source.sampler_peak_mb)
        load_s = self.partitions.load_s - phases.eval_load_s  # training's loads
        figures = [
            train_peak,
            phases.eval_peak_mb,
            load_s / self.spec.epochs,
            phases.eval_s / max(1, phases.evaluations),
        ]
        worst = self.all_reduce(torch.tensor(figures, dtype=torch.float64), dist.ReduceOp.MAX)
        names = ("train_peak_rss_mb", "eval_peak_rss_mb", "load_time_s", "eval_time_s")
        return {name: float(value) for name, value in zip(names, worst, strict=True)}

    def _summary(self, record: dict[str, np.ndarray], evaluations) -> dict:
        """Times of the slowest rank, global mean losses, test F1 at the first best val F1."""
        slowest = self.all_reduce(torch.from_numpy(record["compute"]), dist.ReduceOp.MAX).numpy()
        waits = self.all_reduce(torch.from_numpy(record["wait"]), dist.ReduceOp.MAX).numpy()
        losses = self.all_reduce(torch.from_numpy(record["loss"])).numpy() / self.total_train
        cost = self.all_reduce(torch.from_numpy(record["cost"])).numpy()  # every rank's batches
        sync = self.all_reduce(
            torch.tensor([record["sync"].sum(), record["sync_wait"].sum()], dtype=torch.float64),
            dist.ReduceOp.MAX,
        )
        memory = self._phase_summary()
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
            **memory,
            "val_f1_micro": float(best["val"][0]),
            "test_f1_micro": float(best["test"][0]),
            "test_f1_macro": float(best["test"][1]),
            **self._ogb_summary(best),
            "best_epoch": int(best_epoch),
            "num_epochs": int(self.spec.epochs),
            "world_size": int(self.world_size),
            "device": self.device.type,
            "history": history,
        }
