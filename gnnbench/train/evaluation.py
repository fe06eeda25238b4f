"""Evaluation and the run's summary, for the per-rank training loop (gnnbench.train.worker).

Evaluation runs the model layer by layer over each partition (every neighbour, each layer once over
the nodes the val and test targets need), counts confusion per class on the nodes each rank owns
and all-reduces the counts, so F1 is exact over the whole graph. An ogbn dataset's own metric is
computed from every rank's gathered rows. The summary reduces each rank's per-epoch record to the
run's figures (the slowest rank's times, global losses, F1 at the best validation point).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from gnnbench.train.metrics import confusion_counts, f1_scores
from gnnbench.train.sampler import with_neighbours

EVAL_SPLITS = ("val", "test")


def _rows(table: np.ndarray | torch.Tensor, ids: np.ndarray) -> torch.Tensor:
    """Rows `ids` of a feature array (memory-mapped or not) or of a layer's output tensor."""
    if isinstance(table, torch.Tensor):
        return table[torch.from_numpy(ids)]
    return torch.from_numpy(np.asarray(table[ids]))


class EvaluationMixin:
    """Worker's evaluation and summary. Uses the worker's model, device, job, spec, parts,
    ogb metric, total_train, world_size and distributed, and its _forward, _on_device, _predict
    and all_reduce."""

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
            "num_epochs": int(self.spec.epochs),
            "world_size": int(self.world_size),
            "device": self.device.type,
            "history": history,
        }
