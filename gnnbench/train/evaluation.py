"""Evaluation of one rank's model, for the per-rank training loop (gnnbench.train.worker), which
passes in what it needs: the model, the rank's group and partitions, and what the data holds.

Evaluation runs the model layer by layer over each partition (every neighbour, each layer once over
the nodes the val and test targets need), counts confusion per class on the nodes each rank owns
and all-reduces the counts, so F1 is exact over the whole graph. An ogbn dataset's own metric is
computed from every rank's gathered rows. The run's F1 is that at the best validation point.

Evaluation is bounded in memory: the targets go in groups whose first layer's feature rows and
outputs fit EVAL_HELD_BYTES together (a single group on small graphs; a later layer's rows are not
counted, as before: they are fewer, but wider where the features are narrower than the layers),
each layer in chunks of eval_batch_size (fewer where their input rows would hold over
EVAL_CHUNK_BYTES: wide features); rows are found by binary search in the group's needed
rows, never through a dense array over the partition. A group reads its feature rows once, in one
gather in file order (gnnbench/data/features.py), not once per chunk whose neighbourhood holds
them (issue 46, item 4): on a feature file larger than the page cache that is one sorted sweep
instead of a random gather per chunk.

The training process's resident peak is measured apart for training and evaluation (PhaseFigures):
the high-water mark is read before each evaluation and reset around it.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch import nn

from gnnbench.process.io_counters import mb_between, storage_read_bytes
from gnnbench.process.peak_rss import PeakRss, peak_rss_mb, reset_peak_rss
from gnnbench.progress import INNER_LINE_EVERY_S, progress
from gnnbench.train.batch_source import feature_rows
from gnnbench.train.forward import forward, on_device, predict
from gnnbench.train.group import RankGroup
from gnnbench.train.metrics import confusion_counts, f1_scores
from gnnbench.train.ogb_metric import OgbMetric
from gnnbench.train.resident import ResidentPartitions, TrainingPart
from gnnbench.train.sampler import with_neighbours

EVAL_SPLITS = ("val", "test")
# What a group of evaluation targets may hold of its feature rows and first-layer outputs
# (float32): 512 MB is 350 k nodes' rows at 128 features and 256 hidden, so small graphs are one
# group and a 100 M-node partition is many.
EVAL_HELD_BYTES = 512 << 20
# What a chunk's targets' own input rows may hold (float32). A layer's chunk copies its whole
# neighbourhood's rows out of the held ones (a multiple of the targets' own) and aggregates them
# (about targets x width), so its working rows scale with this bound. Up to 1024 features or
# hidden columns a chunk is eval_batch_size (2048 rows of at most 4 KB); at 6400 features (25 KB
# a row) it is 327 rows, and the 1 GB worker of tests/test_train_scale.py stays under its budget
# (its evaluation went over with 2048). The block GCN normalises by degrees inside each chunk,
# so where this cuts chunks smaller its outputs move a little (SAGE, GAT and the MLP do not).
EVAL_CHUNK_BYTES = 8 << 20


@dataclass
class PhaseFigures:
    """This rank's memory and time apart for training and evaluation."""

    train_peak_mb: float = 0.0  # resident high-water mark while training (loads included)
    eval_peak_mb: float = 0.0  # the same over the evaluations
    eval_s: float = 0.0  # every evaluation, its loads included
    evaluations: int = 0
    eval_load_s: float = 0.0  # what evaluations spent loading partitions (out of load_time_s)
    eval_read_mb: float = 0.0  # what evaluations read from storage (NaN: not counted)

    def worst_over_ranks(
        self,
        group: RankGroup,
        *,
        sampler_peak_mb: float,
        samplers: int,
        load_s: float,
        first_load_s: float,
        epochs: int,
    ) -> dict[str, float]:
        """The largest rank's training and evaluation peaks (its samplers' included), and the
        slowest rank's loading per epoch (`load_s`: all its loads; without `first_load_s`, the
        one before its first batch: its turns' loads) and time per evaluation. A run
        ends in an evaluation: training's peak was read before it. train_rss_sum_mb: every
        training process's peak summed (a rank's `samplers` each counted at the largest one's)."""
        own = self.train_peak_mb + samplers * sampler_peak_mb
        read = self.eval_read_mb / max(1, self.evaluations)  # NaN where this rank cannot count
        summed = group.all_reduce(torch.tensor([own, read], dtype=torch.float64))
        training_loads = load_s - self.eval_load_s
        figures = [
            max(self.train_peak_mb, sampler_peak_mb),
            self.eval_peak_mb,
            training_loads / epochs,
            # those its turns repeat; a rank that trains nothing loads first in an evaluation
            max(0.0, training_loads - first_load_s) / epochs,
            self.eval_s / max(1, self.evaluations),
        ]
        worst = group.all_reduce(torch.tensor(figures, dtype=torch.float64), dist.ReduceOp.MAX)
        names = ("train_peak_rss_mb", "eval_peak_rss_mb", "load_time_s", "turn_load_time_s",
                 "eval_time_s")  # fmt: skip
        figures = {name: float(value) for name, value in zip(names, worst, strict=True)}
        read = float(summed[1])
        return {
            **figures,
            "train_rss_sum_mb": float(summed[0]),
            # per evaluation, every rank's reads together; None where a rank could not count
            "eval_bytes_read_mb": read if np.isfinite(read) else None,
        }


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


@dataclass
class Evaluator:
    """One rank's evaluations: F1 (and an ogbn dataset's own metric) of the model over the nodes
    this rank's partitions own, kept per epoch in `scores`, with their time and memory in
    `phases`. Every rank evaluates in step (the counts are all-reduced)."""

    model: nn.Module  # evaluated as it is (the mode's global model after a round)
    group: RankGroup
    partitions: ResidentPartitions
    num_classes: int
    multilabel: bool
    ogb: OgbMetric | None  # an ogbn dataset's official metric
    batch_size: int  # train.eval_batch_size
    layer_width: int  # an inner layer's output columns: hidden x heads
    phases: PhaseFigures = field(default_factory=PhaseFigures)
    scores: dict[int, dict[str, Any]] = field(default_factory=dict)  # by epoch: evaluate()'s

    # --- evaluation ----------------------------------------------------------------------------
    def measured_evaluation(self, epoch: int) -> None:
        """`evaluate()` after `epoch`, its time, loads and resident peak kept apart from
        training's."""
        phases = self.phases
        phases.train_peak_mb = max(phases.train_peak_mb, peak_rss_mb())
        loaded, started, read = self.partitions.load_s, time.perf_counter(), storage_read_bytes()
        with PeakRss() as rss:
            self.scores[epoch] = self.evaluate()
        phases.eval_s += time.perf_counter() - started
        phases.eval_read_mb += mb_between(read, storage_read_bytes())
        phases.evaluations += 1
        phases.eval_load_s += self.partitions.load_s - loaded
        phases.eval_peak_mb = max(phases.eval_peak_mb, rss.peak_mb)
        reset_peak_rss()  # training's high-water mark starts again from here

    @torch.no_grad()
    def evaluate(self) -> dict[str, Any]:
        """Global (micro, macro) F1 of val and test over the nodes each rank owns, and OGB's own
        metric of an ogbn dataset ("ogb": {split: value})."""
        self.model.eval()
        counts = torch.zeros((len(EVAL_SPLITS), 3, self.num_classes), dtype=torch.int64)
        ogb_rows: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in EVAL_SPLITS]
        for part in self.partitions.in_turn(resident_first=True):
            self._count(part, counts, ogb_rows)
            del part  # released before the next one loads (gnnbench/train/resident.py)
        counts = self.group.all_reduce(counts)
        scores: dict[str, Any] = {key: f1_scores(counts[s]) for s, key in enumerate(EVAL_SPLITS)}
        if self.ogb is not None:
            scores["ogb"] = {key: self._ogb_score(ogb_rows[s]) for s, key in enumerate(EVAL_SPLITS)}
        return scores

    def _ogb_score(self, rows: list[tuple[np.ndarray, np.ndarray]]) -> float | None:
        """OGB's metric over every rank's rows of one split (gathered: ROC-AUC does not add up)."""
        rows = [row for rank_rows in self.group.gather_objects(rows) for row in rank_rows]
        if not rows:
            return None
        return self.ogb.score(
            np.concatenate([t for t, _ in rows]), np.concatenate([p for _, p in rows])
        )

    def _count(self, part: TrainingPart, counts: torch.Tensor, ogb_rows: list[list]) -> None:
        """Add the partition's confusion counts per split (and its OGB rows) to the totals."""
        ids = np.concatenate([part.split[key] for key in EVAL_SPLITS])
        tags = np.repeat(np.arange(len(EVAL_SPLITS)), [len(part.split[key]) for key in EVAL_SPLITS])
        if not len(ids):
            return
        # unique targets (a node may sit in both splits of a custom dataset)
        unique, inverse = np.unique(ids, return_inverse=True)
        logits = self.infer(part, unique)[torch.from_numpy(inverse)]
        prediction = predict(logits, self.multilabel)
        target = part.labels[torch.from_numpy(ids)]
        for s in range(len(EVAL_SPLITS)):
            mask = torch.from_numpy(tags == s)
            counts[s] += confusion_counts(prediction[mask], target[mask], self.num_classes)
            if self.ogb is not None:
                ogb_rows[s].append((self.ogb.truth(target[mask]), self.ogb.rows(logits[mask])))

    # --- layer-wise inference ------------------------------------------------------------------
    def infer(self, part: TrainingPart, targets: np.ndarray) -> torch.Tensor:
        """The model's outputs for `targets` with every neighbour, layer by layer (on the CPU).

        Each layer runs once over the nodes the targets need from it (the last layer over the
        targets, each inner one over one hop more), in chunks of eval_batch_size, from the
        previous layer's outputs. Sampling each chunk's full K-hop neighbourhood instead
        recomputes the inner layers of nodes that many chunks share: on amazon_cs and
        coauthor_cs nearly the whole graph, once per chunk. On a large partition the targets go
        in groups (`target_groups`), so the inner layers' outputs held at once stay bounded.
        """
        if not self.model.uses_graph:
            device = self.group.device
            return self._chunked(
                targets,
                lambda chunk: forward(self.model, _rows(part.features, chunk), [], device),
                f"evaluation, partition {part.index}",
                row_bytes=4 * part.features.shape[1],
            )
        groups = self.target_groups(part, targets)
        if len(groups) == 1:
            return self._infer_group(part, targets)
        outputs = [self._infer_group(part, group) for group in groups]
        return torch.cat(outputs)  # one row per target: as small as the logits

    def target_groups(self, part: TrainingPart, targets: np.ndarray) -> list[np.ndarray]:
        """`targets` cut, in order, into runs of eval_batch_size chunks whose first layer's
        feature rows and outputs hold at most EVAL_HELD_BYTES in all (float32: the feature rows'
        width, and layer_width); one chunk alone may need more: then it is a group by itself.
        Counting distinct rows takes one flag per partition node and kind of row."""
        row_bytes = (4 * part.features.shape[1], 4 * self.layer_width)

        def size(rows: list[np.ndarray]) -> int:
            return sum(len(ids) * each for ids, each in zip(rows, row_bytes, strict=True))

        # per partition node: listed as a feature row, as a first-layer output
        listed = np.zeros((2, len(part.hop_sampler.indptr) - 1), dtype=np.bool_)
        groups: list[list[np.ndarray]] = [[]]
        held = 0
        for start in range(0, len(targets), self.batch_size):
            chunk = targets[start : start + self.batch_size]
            rows = self._needed_rows(part, chunk)[:2]
            new = [ids[~listed[kind, ids]] for kind, ids in enumerate(rows)]
            if groups[-1] and held + size(new) > EVAL_HELD_BYTES:
                groups.append([])
                listed[:] = False
                held, new = 0, rows
            for kind, ids in enumerate(new):
                listed[kind, ids] = True
            held += size(new)
            groups[-1].append(chunk)
        return [np.concatenate(group) for group in groups if group]

    def _infer_group(self, part: TrainingPart, targets: np.ndarray) -> torch.Tensor:
        """infer() over one group of targets: each layer's outputs for the rows it needs, from
        the group's feature rows gathered once (in file order: FeatureRows sorts a gather)."""
        needed = self._needed_rows(part, targets)
        h = torch.from_numpy(feature_rows(part.features, needed[0]))
        device = self.group.device
        for layer, (held, rows) in enumerate(itertools.pairwise(needed)):
            lookup = _RowLookup(held)  # held: the node of each row of h

            def one_hop(chunk: np.ndarray, h=h, lookup=lookup, layer=layer) -> torch.Tensor:
                batch = part.hop_sampler.sample(chunk, 0)
                x = h[torch.from_numpy(lookup.rows(batch.n_id))].to(device, non_blocking=True)
                return self.model.layer(layer, x, on_device(batch.blocks[0], device))

            where = f"evaluation, partition {part.index}, layer {layer + 1}/{self.model.num_layers}"
            h = self._chunked(rows, one_hop, where, row_bytes=h.shape[1] * h.element_size())
        return h

    def _needed_rows(self, part: TrainingPart, targets: np.ndarray) -> list[np.ndarray]:
        """The feature rows the first layer reads, then per layer the nodes whose output the
        targets need: the last layer's are the targets, each earlier one adds the next one's
        neighbours."""
        graph = part.hop_sampler
        needed = [targets]
        for _ in range(self.model.num_layers):
            needed.append(with_neighbours(graph.indptr, graph.indices, needed[-1]))
        return needed[::-1]

    def _chunked(self, rows: np.ndarray, compute, where: str, row_bytes: int) -> torch.Tensor:
        """compute(chunk) over rows in chunks of eval_batch_size, fewer where the chunk's input
        rows (`row_bytes` each) would hold more than EVAL_CHUNK_BYTES, into one tensor on the CPU
        (filled in place: concatenating the chunks would hold every output twice); rank 0 logs
        how far it got, as `where`."""
        size = min(self.batch_size, max(1, EVAL_CHUNK_BYTES // max(1, row_bytes)))
        output = None
        starts = range(0, len(rows), size)
        for start in progress(starts, len(starts), f"{where}: chunks",
                              enabled=self.group.rank == 0, line_every_s=INNER_LINE_EVERY_S):  # fmt: skip
            chunk = compute(rows[start : start + size]).cpu()
            if output is None:
                output = torch.empty((len(rows), *chunk.shape[1:]), dtype=chunk.dtype)
            output[start : start + len(chunk)] = chunk
        return output if output is not None else torch.empty(0)

    # --- the run's F1 --------------------------------------------------------------------------
    def summary(self, losses: np.ndarray) -> dict[str, Any]:
        """Test F1 at the first best val F1 (and OGB's metric there), and per epoch the global
        mean train loss (`losses`) and val F1 where evaluated."""
        best_epoch = max(self.scores, key=lambda epoch: self.scores[epoch]["val"][0])
        best = self.scores[best_epoch]
        history = []
        for epoch, loss in enumerate(losses, start=1):
            val = self.scores[epoch]["val"][0] if epoch in self.scores else None
            history.append({"epoch": epoch, "train_loss": float(loss), "val_f1_micro": val})
        return {
            "val_f1_micro": float(best["val"][0]),
            "test_f1_micro": float(best["test"][0]),
            "test_f1_macro": float(best["test"][1]),
            **self._ogb_summary(best),
            "best_epoch": int(best_epoch),
            "history": history,
        }

    def _ogb_summary(self, best: dict[str, Any]) -> dict[str, float]:
        """val_ogb_<metric> and test_ogb_<metric> at the best validation point."""
        if self.ogb is None:
            return {}
        found = best["ogb"].items()
        return {f"{key}_ogb_{self.ogb.metric}": v for key, v in found if v is not None}
