"""One resident partition per rank: a rank loads a partition when its turn comes and releases it
before loading the next, so its memory is that of its largest partition, not of all of them (what
p=auto assumes). Only small per-partition figures (the training-node count) stay between turns;
the rank's Adam states live in its ModelState (gnnbench/train/context.py, a model's size each),
and the cluster strategy's clusters are recomputed from their seed at each load.

With one partition per rank (p = num_gpus) the partition stays loaded for the whole run.

Callers drop their own reference to a partition before asking for the next (`del part`), so
that the release frees it before the next one loads.

With train.prefetch_partitions, each load starts the next one in a thread, so a turn waits only
for what of the load its predecessor's training did not cover. The next one is the rank's next
partition with training nodes, cyclically (the order model averaging trains them and gradient
averaging's batches take them), and within `in_turn` the following one of its order, then the
first one with training nodes, where the next training pass begins; two partitions are held at a
time, which p=auto counts (gnnbench/partition/num_parts.py). Reading a partition's files and
widening its arrays run outside the GIL, beside the trainer's compute. `load_s` counts only the
waiting. A load begun in the last training turn may end during evaluation (and the reverse):
its reads and memory then count in the other phase's figures.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import torch

from gnnbench.data.store import GraphStore
from gnnbench.errors import OutOfMemory
from gnnbench.partition.stage.book import PartitionBook
from gnnbench.process.atomic import disk_bytes
from gnnbench.process.memory_limit import current_memory_limit, is_out_of_memory
from gnnbench.process.peak_rss import current_rss_mb
from gnnbench.progress import log as progress_log
from gnnbench.train.batching import minibatch_count
from gnnbench.train.clusters import clusters
from gnnbench.train.cmgcn import cmgcn_batches
from gnnbench.train.sampler import ALL_NEIGHBOURS, NeighbourSampler, batch_seed
from gnnbench.train.spec import Job


@dataclass
class TrainingPart:
    """One partition (or the whole graph) as this rank trains and evaluates on it. `features`
    is anything that answers `features[ids]` for an index array and has `.shape`."""

    index: int
    features: np.ndarray
    labels: torch.Tensor
    split: dict[str, np.ndarray]
    sampler: NeighbourSampler  # train.fanouts
    full_sampler: NeighbourSampler  # every neighbour, one hop per layer (strategy=full)
    hop_sampler: NeighbourSampler  # every neighbour, one hop (layer-wise inference)
    # fixed node groups: the cluster strategy's clusters or cmgcn's batches (train.batching)
    groups: list[np.ndarray] | None = None

    @property
    def num_train(self) -> int:
        return len(self.split["train"])


class ResidentPartitions:
    """The partitions rank r trains (r, r+W, r+2W, ... of the book; without one, the whole graph
    as partition 0), one of them in memory (two while the next one prefetches). `load_s` sums
    the seconds spent waiting for loads, `first_load_s` is the first of them (before any batch:
    nothing can overlap it);
    `before_release` is called before a partition is dropped, so that whatever else holds it
    (the batch source and its sampler processes) lets it go first."""

    def __init__(
        self,
        job: Job,
        rank: int,
        num_gpus: int,
        uses_graph: bool,
        before_release: Callable[[], None],
    ):
        self.job = job
        self.before_release = before_release
        self.fanouts = list(job.spec.fanouts) if uses_graph else []
        self.book = PartitionBook(job.book_path) if job.book_path is not None else None
        self.indices = list(range(rank, self.book.p, num_gpus)) if self.book else [0]
        self.load_s = 0.0
        self.first_load_s: float | None = None
        self._resident: TrainingPart | None = None
        # the next partition loading in a thread: (its index, the load); only with turns
        self._next: tuple[int, Future[TrainingPart]] | None = None
        prefetch = job.spec.prefetch_partitions and len(self.indices) > 1
        self._loader = ThreadPoolExecutor(1, "partition-prefetch") if prefetch else None
        self._cmgcn: dict[int, list[np.ndarray]] = {}  # costly: computed once per partition
        if self.book is None:  # the whole graph: loaded once, resident for the run
            self.num_train = {0: self.get(0).num_train}
        else:  # the GNN-ready step's count, so nothing is loaded before its turn
            self.num_train = {i: int(self.book.part_meta(i)["num_train"]) for i in self.indices}

    def get(self, index: int, then: int | None = None) -> TrainingPart:
        """Partition `index`, loaded now unless it is the resident one (which it replaces); with
        prefetching, it starts loading `then` (default: the next one with training nodes)."""
        if self._resident is not None and self._resident.index == index:
            if self._next is None:  # nothing loading yet
                self._prefetch(then)
            return self._resident
        self.release()
        started = time.perf_counter()
        try:
            self._resident = self._prefetched(index) or self._load(index)
        except BaseException as exc:
            if is_out_of_memory(exc, capped=current_memory_limit() is not None):
                raise self._out_of_memory(index) from exc
            raise
        waited = time.perf_counter() - started
        self.load_s += waited
        if self.first_load_s is None:
            self.first_load_s = waited
        self._prefetch(then)
        return self._resident

    @property
    def resident(self) -> TrainingPart | None:
        """The partition in memory now, if any (planning it costs no load)."""
        return self._resident

    def _prefetched(self, index: int) -> TrainingPart | None:
        """The thread's load of `index` (waiting for its end), or None when it loaded another
        partition, which is dropped once done (so that at most two are ever held)."""
        if self._next is None:
            return None
        loading, self._next = self._next, None
        if loading[0] == index:
            return loading[1].result()  # its failure (out of memory, a bad file) is raised here
        _drop(loading[1])  # not needed now
        return None

    def _trained_after(self, index: int | None) -> int | None:
        """The rank's next partition with training nodes after `index`, cyclically (the first
        one for None); None when it has none (training skips the others)."""
        trained = [i for i in self.indices if self.num_train[i] > 0]
        if not trained:
            return None
        later = [i for i in trained if index is not None and i > index]
        return (later or trained)[0]

    def _prefetch(self, then: int | None) -> None:
        """Start loading `then` in the thread (None: the next one training takes), unless it is
        the resident one."""
        if self._loader is None:
            return
        index = self._trained_after(self._resident.index) if then is None else then
        if index is not None and index != self._resident.index:
            self._next = (index, self._loader.submit(self._load, index))

    def close(self) -> None:
        """Drop a load not yet begun, wait for one in flight, and stop the loader thread (the
        worker's end, any exit)."""
        if self._next is not None:
            _drop(self._next[1])
            self._next = None
        if self._loader is not None:
            self._loader.shutdown(wait=True)

    def _cmgcn_batches(self, index: int, graph, train: np.ndarray) -> list[np.ndarray]:
        """CM-GCN's batches of the partition (unit cost per node and layer), timed and logged:
        their sizes follow the graph, not batch_size."""
        spec, started = self.job.spec, time.perf_counter()
        # as many batches as random or cohesive batching makes
        count = minibatch_count(len(train), spec.batch_size, spec.batches_per_epoch)
        rng = np.random.default_rng(batch_seed(spec.seed, index))
        batches = cmgcn_batches(*graph, train, count, np.ones(len(self.fanouts) + 1), rng)
        sizes = sorted(map(len, batches)) or [0]
        progress_log.info(
            "partition %d: %d cmgcn batches in %.1f s, sizes %d to %d (median %d)", index,
            len(batches), time.perf_counter() - started, sizes[0], sizes[-1], sizes[len(sizes) // 2],
        )  # fmt: skip
        return batches

    def _out_of_memory(self, index: int) -> OutOfMemory:
        """One line: the partition that did not fit, its size on disk, what the rank held."""
        where = self.job.store_path if self.book is None else self.book.path / f"part-{index}"
        needed = disk_bytes(where)
        cap = current_memory_limit()
        under = f" under a {cap / 2**20:.0f} MB cap" if cap is not None else ""
        return OutOfMemory(
            f"out of memory: loading partition {index} ({where}, {needed / 2**20:.0f} MB) on top "
            f"of the {current_rss_mb():.0f} MB this worker holds{under} (a larger p makes "
            "partitions smaller)"
        )

    def release(self) -> None:
        """Drop the resident partition (its arrays go back to the allocator now, not later)."""
        if self._resident is not None:
            self.before_release()
            self._resident = None
            gc.collect()

    def in_turn(self, resident_first: bool = False) -> Iterator[TrainingPart]:
        """Every partition of this rank, each loaded in its turn; `resident_first` starts with
        the one in memory and goes on cyclically from it (evaluation and gradient averaging's
        batch plans, where the order does not matter: it saves a load, and a prefetch follows
        the same cycle)."""
        order = list(self.indices)
        if resident_first and self._resident is not None:
            start = order.index(self._resident.index)
            order = order[start:] + order[:start]
        # then the first with training nodes, where the next training pass begins
        following = [*order[1:], self._trained_after(None)]
        for index, then in zip(order, following, strict=True):
            yield self.get(index, then)

    @property
    def total_train(self) -> int:
        return sum(self.num_train.values())

    def _load(self, index: int) -> TrainingPart:
        if self.book is None:
            store = GraphStore(self.job.store_path)
            indptr, indices = store.csr()
            features, labels, split = store.features(), store.labels(), store.split()
        else:
            local = self.book.load(index)
            indptr, indices = local.indptr, local.indices
            features, labels, split = local.features, local.labels, local.split
        full = [ALL_NEIGHBOURS] * len(self.fanouts)
        part = TrainingPart(
            index=index,
            features=features,
            labels=torch.from_numpy(np.asarray(labels)),
            split=split,
            sampler=NeighbourSampler(indptr, indices, self.fanouts),
            full_sampler=NeighbourSampler(indptr, indices, full),
            hop_sampler=NeighbourSampler(indptr, indices, [ALL_NEIGHBOURS]),
        )
        spec = self.job.spec
        graph = (part.sampler.indptr, part.sampler.indices)
        if spec.strategy == "cluster":  # deterministic from its seed: recomputed, not kept
            seed = batch_seed(spec.seed, index)
            part.groups = clusters(*graph, spec.num_clusters, seed, spec.cluster_method)
        elif spec.strategy == "minibatch" and spec.batching == "cmgcn":
            if index not in self._cmgcn:
                self._cmgcn[index] = self._cmgcn_batches(index, graph, split["train"])
            part.groups = self._cmgcn[index]
        return part


def _drop(load: Future) -> None:
    """A load no longer wanted: cancelled if it has not begun, else waited for (so that no more
    than two partitions are ever held), its result or failure discarded."""
    if not load.cancel():
        load.exception()
