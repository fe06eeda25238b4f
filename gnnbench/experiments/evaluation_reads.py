"""What one layer-wise evaluation of a book reads and takes, cold and warm (issue 46, item 4).

Rank 0 of a one-rank job over every partition of the book evaluates GraphSAGE as initialised (the
time does not depend on the weights): first with the store's feature file dropped from the page
cache, then again with it warm. Each figure comes with the MiB this process read from storage
(Linux's read_bytes) and, counted apart, the feature rows the evaluation gathered and how many of
them were distinct. Run from a checkout of another revision (PYTHONPATH; one older than this
module needs it copied in), it measures that revision's evaluation: an A/B on one book
(docs/training_speed.md section 7).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import torch

from gnnbench.data.features import CountedRows
from gnnbench.data.store import GraphStore
from gnnbench.process.io_counters import drop_from_page_cache, mb_between, storage_read_bytes
from gnnbench.train.spec import Job, spec_from_conf
from gnnbench.train.worker import Worker


@dataclass(frozen=True)
class EvaluationReads:
    cold_s: float
    cold_read_mb: float
    warm_s: float
    warm_read_mb: float
    rows_gathered: int  # feature rows the evaluation asked for, over every partition
    rows_distinct: int  # of them, distinct within each partition, summed
    gathers: int  # calls on the feature rows


def measure(
    store_path: Path, book_path: Path, fanouts: list[int], eval_batch_size: int
) -> EvaluationReads:
    """One cold, then one warm evaluation over every partition of the book, then a third,
    untimed, that counts the feature rows it gathers."""
    store = GraphStore(store_path)
    train = {"mode": "model_avg", "fanouts": list(fanouts), "eval_batch_size": eval_batch_size}
    spec = spec_from_conf(train, {"name": "sage", "layers": len(fanouts)}, num_gpus=1, seed=0)
    job = Job(spec, store.path, book_path, store.feature_dim, store.num_classes, False, None)
    evaluator = Worker(job, 0, 1, torch.device("cpu")).evaluator
    figures = {}
    for state in ("cold", "warm"):
        if state == "cold":  # the store's rows (a shared book) and any partition's own
            for path in [store.path / "feat.npy", *Path(book_path).glob("part-*/feat.npy")]:
                if path.exists():
                    drop_from_page_cache(path)
        read, started = storage_read_bytes(), time.perf_counter()
        evaluator.evaluate()
        figures[state] = (time.perf_counter() - started, mb_between(read, storage_read_bytes()))
    counters: list[CountedRows] = []  # one a partition load: distinct rows are per partition
    partitions, load = evaluator.partitions, evaluator.partitions.get

    def counted(index: int, then: int | None = None):
        part = load(index, then)
        if not isinstance(part.features, CountedRows):
            part.features = CountedRows(part.features)
            counters.append(part.features)
        return part

    partitions.get = counted  # what evaluate() loads each partition through
    evaluator.evaluate()
    return EvaluationReads(
        *figures["cold"], *figures["warm"],
        rows_gathered=sum(c.gathered for c in counters),
        rows_distinct=sum(c.distinct for c in counters),
        gathers=sum(c.gathers for c in counters),
    )  # fmt: skip
