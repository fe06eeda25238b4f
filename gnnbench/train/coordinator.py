"""Who does what when a job runs as one process or as the ranks of a torchrun launch.

The leader (the single process, or torchrun's rank 0) prepares the data and the partitions and
keeps the records; `share` hands its product to every rank, `together` runs work on every rank
and makes each raise the same error when any rank fails. Errors cross processes in one format:
`gnnbench.errors.error_record` / `from_record`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager as ContextManager
from typing import Any, TypeVar

from gnnbench.errors import GnnbenchError, error_record, from_record, worker_failure
from gnnbench.process.torchrun import torchrun_rank
from gnnbench.train.spec import TrainSpec

T = TypeVar("T")


class Silent:
    """What a non-leading rank records through: every call does nothing, run_id is None."""

    run_id = None

    def __getattr__(self, name: str) -> Callable[..., None]:
        return lambda *args, **kwargs: None


class SingleProcess:
    """One process does everything (spawned training ranks report to it through launch.py)."""

    leads = True

    def records(self, open_records: Callable[[], ContextManager[Any]]) -> ContextManager[Any]:
        """The run's records (the MLflow run): opened by the leader, Silent elsewhere."""
        return open_records()

    def share(self, produce: Callable[[], T]) -> T:
        """The leader's `produce()`, on every rank."""
        return produce()

    def together(self, work: Callable[[], T]) -> T:
        """`work()` on every rank; a failure on any rank is every rank's."""
        return work()


class Torchrun(SingleProcess):
    """This process is one rank of a torchrun launch training on partitions: rank 0 leads."""

    def __init__(self, spec: TrainSpec, rank: int):
        from gnnbench.train import launch

        launch.join_torchrun_group(spec)  # early: rank 0 shares its stages' products through it
        self.rank = rank
        self.leads = rank == 0

    def records(self, open_records: Callable[[], ContextManager[Any]]) -> ContextManager[Any]:
        return (
            self._leader_records(open_records) if self.leads else contextlib.nullcontext(Silent())
        )

    @contextlib.contextmanager
    def _leader_records(self, open_records: Callable[[], ContextManager[Any]]) -> Iterator[Any]:
        """Rank 0's records; when they cannot be opened, the ranks waiting in `share` hear why."""
        from gnnbench.train.launch import broadcast_from_rank0

        with contextlib.ExitStack() as stack:
            try:
                tracker = stack.enter_context(open_records())
            except BaseException as exc:
                broadcast_from_rank0(("error", error_record(exc)))
                raise
            yield tracker

    def share(self, produce: Callable[[], T]) -> T:
        from gnnbench.train.launch import broadcast_from_rank0

        if not self.leads:
            status, payload = broadcast_from_rank0(None)
            if status == "error":
                raise from_record(payload)
            return payload
        try:
            product = produce()
        except BaseException as exc:  # the other ranks wait for word: tell them, then fail
            broadcast_from_rank0(("error", error_record(exc)))
            raise
        broadcast_from_rank0(("ok", product))
        return product

    def together(self, work: Callable[[], T]) -> T:
        from gnnbench.train.launch import gather_from_ranks

        try:
            outcome = work()
        except BaseException as exc:  # noqa: BLE001 - every rank must hear of it
            gather_from_ranks(_failure_of(self.rank, exc))
            raise
        failures = [found for found in gather_from_ranks(None) if found is not None]
        if failures:
            raise worker_failure(failures)
        return outcome


def _failure_of(rank: int, exc: BaseException) -> dict[str, Any]:
    """A rank's failure record; without a time: torchrun's ranks may run on hosts whose clocks
    differ, so among expected errors the lowest rank's is reported (errors.root_cause)."""
    return {"rank": rank, "expected": isinstance(exc, GnnbenchError), **error_record(exc)}


def trains_on_partitions(mode: str) -> bool:
    """Whether train.mode trains a PartitionBook with one rank per worker (torchrun's ranks all
    take part); train=none trains nothing."""
    if mode == "none":
        return False
    from gnnbench.train.modes import TRAINING_MODES

    return TRAINING_MODES.get(mode).partitioned


def coordinator_for(spec: TrainSpec | None) -> SingleProcess:
    """Torchrun when torchrun started this process and the job trains on partitions (the other
    jobs run on rank 0 alone), else SingleProcess."""
    rank = torchrun_rank()
    if spec is None or rank is None or not trains_on_partitions(spec.mode):
        return SingleProcess()
    return Torchrun(spec, rank)
