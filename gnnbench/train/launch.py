"""Start the ranks: spawned processes on one machine, or the processes torchrun already started.

A spawned worker that raises writes its error to a file and exits; the parent, woken by the
process's exit, terminates the other ranks at once (they would otherwise wait in a collective until
the gloo timeout) and raises the error `errors.root_cause` picks, with its rank.
"""

from __future__ import annotations

import atexit
import datetime
import json
import logging
import os
import socket
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from gnnbench import errors
from gnnbench.errors import ConfigError
from gnnbench.process import lifecycle
from gnnbench.process.atomic import scratch_directory
from gnnbench.process.memory_limit import killed_by_signal
from gnnbench.process.torchrun import torchrun_rank, training_ranks
from gnnbench.train.batch_source import compute_threads
from gnnbench.train.spec import Job, TrainSpec
from gnnbench.train.worker import Worker


def resolve_device(spec: TrainSpec, local_rank: int) -> torch.device:
    """cuda:<local_rank> when CUDA is asked for or available (device: auto), else the CPU."""
    use_cuda = spec.device == "cuda" or (spec.device == "auto" and torch.cuda.is_available())
    if spec.backend == "gloo" and spec.device == "auto":
        use_cuda = False  # an explicit gloo run stays on the CPU: one kind of device per run
    if use_cuda and not torch.cuda.is_available():
        raise ConfigError("train.device: cuda requested but torch sees no CUDA device")
    if spec.backend == "nccl" and not use_cuda:
        raise ConfigError("train.backend: nccl needs CUDA devices (use gloo or auto on the CPU)")
    return torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")


def resolve_backend(spec: TrainSpec, device: torch.device) -> str:
    if spec.backend != "auto":
        return spec.backend
    return "nccl" if device.type == "cuda" else "gloo"


# Rank 0 may spend hours preparing and partitioning while the others wait for its word, so the
# handoff has a group of its own whose timeout is not train.timeout_s (meant for stuck collectives).
HANDOFF_TIMEOUT = datetime.timedelta(hours=12)
_handoff_group = None


def join_torchrun_group(spec: TrainSpec) -> None:
    """Under torchrun, join the process group early, so rank 0 can share its stages' products."""
    global _handoff_group
    device = resolve_device(spec, int(os.environ.get("LOCAL_RANK", 0)))
    if not dist.is_initialized():
        _init_group(spec, device, init_method="env://")
    # the group outlives a sweep's jobs (torch cannot re-create it reliably in one process)
    needed, existing = resolve_backend(spec, device), dist.get_backend()
    if needed != existing:
        raise ConfigError(
            f"train.backend: this job needs {needed}, but the torchrun sweep's process group is "
            f"{existing} (from its first job); sweep one backend or device per torchrun launch"
        )
    if _handoff_group is None:
        _handoff_group = dist.new_group(backend="gloo", timeout=HANDOFF_TIMEOUT)
        # The group outlives the jobs, so it is destroyed at exit while the interpreter is still
        # whole: gloo's worker threads, left to interpreter finalisation, abort the process
        # ("terminate called without an active exception", SIGABRT) now and then.
        atexit.register(_leave_torchrun_group)


def _leave_torchrun_group() -> None:
    global _handoff_group
    if dist.is_initialized():
        dist.destroy_process_group()
    _handoff_group = None


def broadcast_from_rank0(payload: Any) -> Any:
    """Rank 0's `payload` (any picklable value) on every rank, over the handoff group."""
    box = [payload]
    dist.broadcast_object_list(box, src=0, group=_handoff_group)
    return box[0]


def gather_from_ranks(payload: Any) -> list[Any]:
    """Every rank's `payload`, in rank order, on every rank, over the handoff group."""
    gathered: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, payload, group=_handoff_group)
    return gathered


def check_cuda_workers(spec: TrainSpec, num_gpus: int) -> None:
    """One process per GPU: never more workers than devices."""
    device = resolve_device(spec, 0)
    if device.type == "cuda" and num_gpus > torch.cuda.device_count():
        raise ConfigError(
            f"num_gpus={num_gpus} is larger than the {torch.cuda.device_count()} CUDA devices"
        )


def run_single(job: Job) -> dict:
    """The centralized reference: one process, no process group (on the CPU, with the torch
    threads batch_preparation leaves it, given back afterwards: the process runs on)."""
    device = resolve_device(job.spec, 0)
    before = torch.get_num_threads()
    if device.type == "cpu":
        torch.set_num_threads(compute_threads(before, job.spec.batch_preparation))
    try:
        return Worker(job, 0, 1, device).run()
    finally:
        torch.set_num_threads(before)


def run_torchrun(job: Job) -> dict:
    """This process is one rank of a torchrun launch; every rank returns the same summary."""
    rank, num_gpus = torchrun_rank(), training_ranks(job.spec.num_gpus)
    device = resolve_device(job.spec, int(os.environ.get("LOCAL_RANK", 0)))
    owns_group = not dist.is_initialized()
    if owns_group:
        _init_group(job.spec, device, init_method="env://")
    try:
        result = Worker(job, rank, num_gpus, device).run()
        dist.barrier()
        return result
    finally:
        if owns_group:
            dist.destroy_process_group()


def _init_group(spec: TrainSpec, device: torch.device, **rendezvous) -> None:
    """Join the process group on this rank's device (NCCL binds each rank to its own GPU)."""
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(
        resolve_backend(spec, device),
        timeout=datetime.timedelta(seconds=spec.timeout_s),
        **({"device_id": device} if device.type == "cuda" else {}),
        **rendezvous,
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _record_error(scratch: Path, rank: int, exc: BaseException) -> None:
    """The error as one line for the parent (errors.error_record, plus where an unexpected one
    was raised), with its traceback for the run's error.log (the console shows one line)."""
    record = {**errors.error_record(exc), "expected": isinstance(exc, errors.GnnbenchError)}
    if not record["expected"]:
        frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
        where = f" (at {Path(frame.filename).name}:{frame.lineno})" if frame else ""
        record["message"] = f"{type(exc).__name__}: {exc}{where}"
    record["traceback"] = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    record["at"] = time.time()
    partial = scratch / f"error-{rank}.json.tmp"  # the parent may read at any moment: rename
    partial.write_text(json.dumps(record, default=str))
    partial.rename(scratch / f"error-{rank}.json")


def _log_like_parent(level: int) -> None:
    """A spawned rank starts with logging unconfigured: send the gnnbench loggers' lines (rank 0's
    progress) to stdout in the format Hydra gives the parent's, at the parent's level."""
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("[%(asctime)s][%(name)s][%(levelname)s] - %(message)s"))
    logger = logging.getLogger("gnnbench")
    logger.addHandler(handler)
    logger.setLevel(level)


def train_rank(job: Job, rank: int, num_gpus: int, device: torch.device, payload: Any) -> dict:
    """gnnbench's own rank: a Worker of the job's training mode (payload unused)."""
    return Worker(job, rank, num_gpus, device).run()


def _spawned_worker(
    rank: int,
    num_gpus: int,
    job: Job,
    port: int,
    scratch: Path,
    parent_pid: int,
    log_level: int,
    rank_main: Callable[[Job, int, int, torch.device, Any], dict],
    payload: Any,
) -> None:
    """Entry point of one spawned rank: result (rank 0) or error goes to a file in `scratch`.

    The rank dies with the launching process (even a SIGKILLed one), and leaves Ctrl-C to it: the
    parent stops every rank, so that one interrupt ends the run in one line.

    The process ends with os._exit: its work is on disk, and native libraries' destructors at
    interpreter shutdown sometimes abort ("terminate called without an active exception"), which
    would turn a finished run into a failed one.
    """
    exit_code = 0
    try:
        lifecycle.die_with_parent(parent_pid)
        lifecycle.ignore_interrupts_from_terminal()
        _temporary_files_in(scratch / f"tmp-{rank}")
        if rank == 0:
            _log_like_parent(log_level)
        device = resolve_device(job.spec, rank)
        if device.type == "cpu":  # the ranks share the cores instead of oversubscribing them
            torch.set_num_threads(compute_threads(_cores() // num_gpus, job.spec.batch_preparation))
        _init_group(
            job.spec,
            device,
            init_method=f"tcp://127.0.0.1:{port}",
            rank=rank,
            world_size=num_gpus,  # torch's name for it
        )
        result = rank_main(job, rank, num_gpus, device, payload)
        dist.barrier()  # no rank tears its connections down while another still uses them
        dist.destroy_process_group()
        if rank == 0:
            (scratch / "result.tmp").write_text(json.dumps(result))
            (scratch / "result.tmp").rename(scratch / "result.json")
    except BaseException as exc:  # noqa: BLE001 - every failure must reach the parent
        _record_error(scratch, rank, exc)
        exit_code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(exit_code)


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _temporary_files_in(folder: Path) -> None:
    """This rank's temporary files and folders (multiprocessing's pymp-*, its sampler processes'
    too: they inherit it) go in `folder`, inside the launch's scratch directory, which the
    launcher removes: a rank ends with os._exit or is killed, and both skip the clean-up that
    would remove them from /tmp."""
    folder.mkdir()
    tempfile.tempdir = str(folder)
    os.environ["TMPDIR"] = str(folder)


def _failure(scratch: Path, processes: list, rank: int) -> Exception:
    """Why the ranks failed, as one line: a rank a signal ended (the others' errors then follow
    from its vanishing from the collectives), else the recorded error `errors.root_cause` picks
    (the rest are usually its consequence). Read before `_stop` signals the survivors itself."""
    recorded = [
        {**json.loads(path.read_text()), "rank": int(path.stem.split("-")[1])}
        for path in scratch.glob("error-*.json")
    ]
    signalled = [
        other
        for other, process in enumerate(processes)
        if (process.exitcode or 0) < 0 and other not in {item["rank"] for item in recorded}
    ]
    if signalled:
        killed = signalled[0] if rank not in signalled else rank
        name = killed_by_signal(processes[killed].exitcode)
        return errors.Killed(f"worker {killed} failed: killed by signal {name}")
    if not recorded:
        return RuntimeError(f"worker {rank} failed: exited with code {processes[rank].exitcode}")
    return errors.worker_failure(recorded)  # with the rank's stack, for the run's error.log


def _stop(processes: list) -> None:
    processes = [process for process in processes if process.pid is not None]  # started ones
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=5)
        if process.is_alive():
            process.kill()
            process.join()


def spawn_workers(
    job: Job,
    num_gpus: int,
    rank_main: Callable[[Job, int, int, torch.device, Any], dict] = train_rank,
    payload: Any = None,
) -> dict:
    """Run `num_gpus` ranks as spawned processes on this machine; rank 0's summary. Each rank
    runs `rank_main(job, rank, num_gpus, device, payload)` in the process group (a module-level
    function: it is pickled; a baseline's rank passes its own, with the data it shares as
    `payload`: torch tensors in it reach the ranks through shared memory, not copies)."""
    context = mp.get_context("spawn")
    port = _free_port()
    log_level = logging.getLogger("gnnbench").getEffectiveLevel()
    with scratch_directory("train") as scratch:
        processes = [
            context.Process(
                target=_spawned_worker,
                args=(
                    rank,
                    num_gpus,
                    job,
                    port,
                    scratch,
                    os.getpid(),
                    log_level,
                    rank_main,
                    payload,
                ),  # fmt: skip
                daemon=False,  # a rank may start sampler processes; _stop ends it on any exit
            )
            for rank in range(num_gpus)
        ]
        try:
            for process in processes:
                process.start()
            running = {process.sentinel: rank for rank, process in enumerate(processes)}
            while running:
                for sentinel in wait(list(running)):
                    rank = running.pop(sentinel)
                    processes[rank].join()
                    if processes[rank].exitcode != 0:
                        failure = _failure(scratch, processes, rank)
                        _stop(processes)
                        raise failure
        finally:
            _stop(processes)
        result_file = scratch / "result.json"
        if not result_file.is_file():
            raise RuntimeError("worker 0 failed: exited without a result")
        return json.loads(result_file.read_text())
