"""User-facing errors: one line that names the file or key and what was expected."""

import math
import signal
from collections.abc import Mapping, Sequence
from typing import Any


class GnnbenchError(Exception):
    """An expected mistake (bad file, bad config value, missing baseline): printed as one line."""


class ConfigError(GnnbenchError):
    """A config key holds an impossible or unknown value."""


class DataError(GnnbenchError):
    """A data file is missing, malformed or inconsistent."""


class BaselineUnavailable(GnnbenchError):
    """An optional baseline whose environment has not been set up (the message names the command)."""


class OutOfMemory(GnnbenchError):
    """A step (import, partition, partition loading) ran out of memory; `metrics` holds the peak
    it reached where it was measured, to be logged."""

    def __init__(self, message: str, metrics: dict[str, float] | None = None):
        super().__init__(message)
        self.metrics = dict(metrics or {})


class Killed(GnnbenchError):
    """A process of the run (partitioner, training rank) was ended by a signal, with no evidence
    of running out of memory; the message names the signal."""


class NonFiniteLoss(GnnbenchError):
    """Training produced a NaN or infinite loss: the run stops FAILED at that epoch instead of
    logging meaningless F1 as a result."""


class TrackingError(GnnbenchError):
    """The MLflow store cannot be used: no server answers, the file is not an MLflow store, its
    lock is held too long. The message names the URI or the file."""


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGINT reached the main process: the run ends KILLED, the exit status is
    128 + the signal number (130 for SIGINT, 143 for SIGTERM). Not an Exception, like Ctrl-C."""

    def __init__(self, signum: int):
        self.signum = int(signum)
        super().__init__(f"interrupted by {signal.Signals(self.signum).name}")

    @property
    def exit_status(self) -> int:
        return 128 + self.signum


def first_line(exc: BaseException) -> str:
    """An exception's message on one line (numpy's MemoryError names the array it wanted)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def one_line(exc: BaseException) -> str:
    """`first_line`, at most 500 characters: what a console line, a failed run's tag and a report
    row show of an error."""
    return first_line(exc)[:500]


def root_cause(records: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """Of several ranks' failure records (`rank`, `expected`, and `at` where the ranks share a
    clock: spawned ranks on one host), the one to report, by one rule for spawned and torchrun
    ranks alike: an expected error (a GnnbenchError names its cause; the other ranks' errors
    usually follow from that rank leaving the collectives) before an unexpected one, then the
    earliest, then the lowest rank."""

    def order(record: Mapping[str, Any]) -> tuple:
        at = record.get("at")
        return (not record["expected"], math.inf if at is None else at, record["rank"])

    return min(records, key=order)


def worker_failure(records: Sequence[Mapping[str, Any]]) -> Exception:
    """The one error to raise for several ranks' failure records (spawned or torchrun ranks): the
    root cause's own error, "worker <rank> failed: <message>", a GnnbenchError where it was an
    expected one, else a RuntimeError naming the type; it carries that rank's stack (where the
    record has one) as `worker_traceback`, for the run's error.log."""
    chosen = root_cause(records)
    message = f"worker {chosen['rank']} failed: {chosen['message']}"
    if chosen["expected"]:
        failure: Exception = from_record({**chosen, "message": message})
    else:
        failure = RuntimeError(f"{message} ({chosen['type']})")
    if chosen.get("traceback"):
        failure.worker_traceback = f"worker {chosen['rank']}:\n{chosen['traceback']}"
    return failure


def error_record(exc: GnnbenchError) -> dict:
    """What a child process writes so that its parent can raise the same error (`from_record`)."""
    return {"type": type(exc).__name__, "message": str(exc), "metrics": getattr(exc, "metrics", {})}


def from_record(record: dict) -> GnnbenchError:
    kinds = {
        cls.__name__: cls
        for cls in (ConfigError, DataError, BaselineUnavailable, Killed, NonFiniteLoss)
    }
    if record.get("type") == OutOfMemory.__name__:
        return OutOfMemory(record["message"], record.get("metrics"))
    return kinds.get(record.get("type", ""), GnnbenchError)(record["message"])
