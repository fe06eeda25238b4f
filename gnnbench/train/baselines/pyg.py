"""PyG's own training recipes as baselines, in gnnbench's environment (train=pyg_ddp,
train=pyg_cluster).

Both train the whole graph as a PyG `Data` (features, labels, split masks), loaded once in the
launching process and handed to the spawned ranks through shared memory (torch's tensors cross
a spawn that way, as in PyG's multi-GPU examples), with PyG's GraphSAGE (`SAGEConv`, mean; ReLU
and dropout between layers), DDP gradient averaging over gloo (`join` for uneven batch counts) and
Adam. They differ in what a batch is:

- `pyg_ddp` (PyG's examples/multi_gpu): each rank a `NeighborLoader` over its share of the
  training nodes (`train.fanouts`, `train.batch_size`), the loss on the seed nodes;
- `pyg_cluster` (Cluster-GCN): `ClusterData` cuts the graph into `train.num_clusters` x num_gpus
  METIS clusters (through torch-sparse), a batch is `train.clusters_per_batch` of them with the
  edges between them, each rank a `DistributedSampler`'s share of the clusters, the loss on the
  batch's training nodes.

Evaluation: each rank's share of the validation and test nodes with every neighbour
(`NeighborLoader`, -1 per layer), confusion counts all-reduced (gnnbench/train/metrics.py). The
meter is gnnbench's (docs/design.md, "Metrics"): an epoch's wall clock from its first batch to
its last step and a barrier, the wait for each batch apart, forward, backward (DDP's all-reduce
inside it) and step as compute.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

from gnnbench.errors import BaselineUnavailable
from gnnbench.process.peak_rss import peak_rss_mb, reset_peak_rss
from gnnbench.train import metrics
from gnnbench.train.baselines import summary
from gnnbench.train.models import generated_code_removed
from gnnbench.train.spec import Job, ModelSpec

# torch-sparse's sampler is what this machine has (pyg-lib cannot be installed here): the same
# samples, without a deprecation line per loader on every rank
warnings.filterwarnings("ignore", message="Using 'NeighborSampler' without a 'pyg-lib'")
# What every rank's loop returns per epoch and gathers: the slowest's times, the summed loss
EPOCH_FIGURES = ("epoch_time_s", "compute_time_s", "batch_wait_s")


def require_sampler(user: str, metis: bool = False) -> None:
    """PyG's samplers need torch-sparse or pyg-lib (and its METIS, with `metis`, torch-sparse's
    or pyg-lib's); one line naming the setup command if absent."""
    import torch_geometric.typing as pyg_typing

    from gnnbench.setup.baseline_envs import torch_sparse_with_metis

    sampler = pyg_typing.WITH_TORCH_SPARSE or pyg_typing.WITH_PYG_LIB
    has_metis = pyg_typing.WITH_METIS or torch_sparse_with_metis()  # pyg-lib's, or torch-sparse's
    if not sampler or (metis and not has_metis):
        what = "METIS" if sampler else "samplers"
        raise BaselineUnavailable(
            f"{user}: PyG's {what} need torch-sparse (or pyg-lib), not installed; "
            "set it up with: python -m gnnbench setup pyg_metis"
        )


def load_data(store_path: Path):
    """The GraphStore as a PyG Data: both edge directions, features, labels, split masks."""
    from torch_geometric.data import Data

    from gnnbench.data.store import GraphStore

    store = GraphStore(Path(store_path))
    edges = torch.from_numpy(store.edges().astype(np.int64))
    edge_index = torch.cat([edges.T, edges.T.flip(0)], dim=1)
    del edges
    n = store.num_nodes
    data = Data(x=torch.from_numpy(np.load(store.path / "feat.npy").astype(np.float32)),
                y=torch.from_numpy(np.load(store.path / "label.npy").astype(np.int64)),
                edge_index=edge_index, num_nodes=n)  # fmt: skip
    for name, ids in store.split().items():
        mask = torch.zeros(n, dtype=torch.bool)
        mask[torch.from_numpy(np.asarray(ids, dtype=np.int64))] = True
        data[f"{name}_mask"] = mask
    return data


class SAGE(torch.nn.Module):
    """PyG's GraphSAGE as its multi-GPU example builds it: SAGEConv layers, ReLU and dropout."""

    def __init__(self, in_dim: int, out_dim: int, model: ModelSpec):
        from torch_geometric.nn import SAGEConv

        super().__init__()
        dims = [in_dim] + [model.hidden] * (model.layers - 1) + [out_dim]
        with generated_code_removed():
            self.convs = torch.nn.ModuleList(
                SAGEConv(dims[i], dims[i + 1], aggr="mean") for i in range(len(dims) - 1)
            )
        self.dropout = model.dropout

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        for i, conv in enumerate(self.convs):
            x = conv(x, edge_index)
            if i < len(self.convs) - 1:
                x = F.dropout(F.relu(x), self.dropout, self.training)
        return x


def share(ids: torch.Tensor, rank: int, num_gpus: int) -> torch.Tensor:
    """This rank's contiguous share of `ids` (sizes differ by at most one)."""
    return torch.tensor_split(ids, num_gpus)[rank]


# A batch as the epoch loop trains it: (features, edge_index, labels, which output rows count)
Batch = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | slice]


def train_ranks(
    job: Job,
    rank: int,
    num_gpus: int,
    data,
    epoch_batches: Callable[[int], Iterable[Batch]],
    **figures: Any,
) -> dict:
    """The epochs of one rank: its batches each epoch, evaluation every train.eval_every epochs;
    rank 0 returns the run's summary (baselines.summary), the others an empty dict."""
    spec = job.spec
    reset_peak_rss()
    torch.manual_seed(spec.seed)  # the same initial model on every rank
    model = torch.nn.parallel.DistributedDataParallel(
        SAGE(data.num_features, job.num_classes, spec.model)
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=spec.lr, weight_decay=spec.weight_decay)
    times = {name: [] for name in EPOCH_FIGURES}
    losses, evaluations, eval_times = [], {}, []
    for epoch in range(1, spec.epochs + 1):
        figures_now, loss_sum = _epoch(model, optimizer, epoch_batches(epoch))
        for name, value in zip(EPOCH_FIGURES, figures_now, strict=True):
            times[name].append(value)
        losses.append(loss_sum)
        if epoch % spec.eval_every == 0 or epoch == spec.epochs:
            started = time.perf_counter()
            evaluations[epoch] = evaluate(model.module, data, job, rank, num_gpus)
            eval_times.append(time.perf_counter() - started)
    return _gathered(job, rank, num_gpus, times, losses, evaluations, eval_times, figures)


def _epoch(model, optimizer, batches: Iterable[Batch]) -> tuple[tuple[float, ...], float]:
    """((wall, compute, batch wait), summed loss) of one epoch on this rank."""
    model.train()
    started = time.perf_counter()
    wait = compute = loss_sum = 0.0
    iterator = iter(batches)
    with model.join():  # a rank out of batches shadows the others' all-reduces (uneven counts)
        while True:
            fetch = time.perf_counter()
            batch = next(iterator, None)
            if batch is None:
                break
            x, edge_index, y, rows = batch
            ready = time.perf_counter()
            wait += ready - fetch
            loss = F.cross_entropy(model(x, edge_index)[rows], y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()  # DDP all-reduces the gradients here
            optimizer.step()
            loss_sum += float(loss.detach()) * len(y)
            compute += time.perf_counter() - ready
    dist.barrier()  # the epoch ends at the slowest rank's last step
    return (time.perf_counter() - started, compute, wait), loss_sum


def evaluate(model, data, job: Job, rank: int, num_gpus: int) -> dict[str, list[float]]:
    """Micro and macro F1 on validation and test, every neighbour of each rank's share."""
    from torch_geometric.loader import NeighborLoader

    model.eval()
    scores = {}
    for name in ("val", "test"):
        ids = share(data[f"{name}_mask"].nonzero().flatten(), rank, num_gpus)
        loader = NeighborLoader(data, input_nodes=ids, num_neighbors=[-1] * job.spec.model.layers,
                                batch_size=job.spec.eval_batch_size, shuffle=False)  # fmt: skip
        counts = torch.zeros(3, job.num_classes, dtype=torch.int64)
        with torch.no_grad():
            for batch in loader:
                predicted = model(batch.x, batch.edge_index)[: batch.batch_size].argmax(1)
                target = batch.y[: batch.batch_size]
                counts += metrics.confusion_counts(predicted, target, job.num_classes)
        dist.all_reduce(counts)
        scores[name] = list(metrics.f1_scores(counts))
    return scores


def _gathered(job, rank, num_gpus, times, losses, evaluations, eval_times, figures) -> dict:
    """Every rank's figures on rank 0, summarised there."""
    mine = {
        "times": times,
        "losses": losses,
        "eval_times": eval_times,
        "peak_rss_mb": peak_rss_mb(),
    }
    gathered: list[Any] = [None] * num_gpus
    dist.all_gather_object(gathered, mine)
    if rank != 0:
        return {}
    total_train = figures["train_nodes_per_epoch"]
    losses_summed = np.sum([g["losses"] for g in gathered], axis=0) / max(total_train, 1)
    return summary(
        {name: [g["times"][name] for g in gathered] for name in EPOCH_FIGURES}, losses_summed,
        evaluations, [g["peak_rss_mb"] for g in gathered], [g["eval_times"] for g in gathered],
        training_ranks=num_gpus, device="cpu", **figures,
    )  # fmt: skip


def ddp_rank(job: Job, rank: int, num_gpus: int, device: torch.device, data) -> dict:
    """pyg_ddp's rank: a NeighborLoader over its share of the training nodes."""
    from torch_geometric.loader import NeighborLoader

    spec = job.spec
    train = data.train_mask.nonzero().flatten()
    seeds = share(train, rank, num_gpus)
    loader = NeighborLoader(data, input_nodes=seeds, num_neighbors=list(spec.fanouts),
                            batch_size=spec.batch_size, shuffle=True)  # fmt: skip

    def batches(epoch: int) -> Iterable[Batch]:
        torch.manual_seed(spec.seed * 100_003 + epoch * 101 + rank)  # the shuffle of this epoch
        for batch in loader:
            yield batch.x, batch.edge_index, batch.y[: batch.batch_size], slice(0, batch.batch_size)

    steps = -(-len(share(train, 0, num_gpus)) // spec.batch_size)  # rank 0 holds the most
    return train_ranks(job, rank, num_gpus, data, batches, sync_count=float(steps),
                       train_nodes_per_epoch=float(len(train)))  # fmt: skip


def cluster_rank(job: Job, rank: int, num_gpus: int, device: torch.device, payload) -> dict:
    """pyg_cluster's rank: a DistributedSampler's share of the METIS clusters, a few a batch."""
    from torch.utils.data.distributed import DistributedSampler
    from torch_geometric.loader import ClusterLoader

    data, clusters = payload
    spec = job.spec
    sampler = DistributedSampler(range(len(clusters)), num_gpus, rank, shuffle=True, seed=spec.seed)
    loader = ClusterLoader(clusters, batch_size=spec.clusters_per_batch, sampler=sampler)

    def batches(epoch: int) -> Iterable[Batch]:
        sampler.set_epoch(epoch)
        for batch in loader:
            if batch.train_mask.any():
                yield batch.x, batch.edge_index, batch.y[batch.train_mask], batch.train_mask

    return train_ranks(job, rank, num_gpus, data, batches, sync_count=float(len(loader)),
                       train_nodes_per_epoch=float(data.train_mask.sum()))  # fmt: skip
