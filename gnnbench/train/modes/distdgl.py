"""`train=distdgl`: DistDGL's own training as a baseline, on any partition book.

The book's owners (METIS's from partitioner=distdgl_metis, or SPRING's, LDG's, ...) are written in
DistDGL's partition format, then one graph server per partition and num_gpus / p trainers per
partition run DGL's distributed recipe (gnnbench/train/baselines/distdgl_train.py, in the DistDGL
environment that `python -m gnnbench setup distdgl_metis` builds). In DistDGL's runtime a cut edge
is a remote sample and a remote feature fetch, so the edge cut shows in the epoch time.

gnnbench launches the processes itself on this host (DGL's launch.py needs ssh): each partition's
server and trainers in a private mount namespace with their own /dev/shm (two servers on one
host would share segment names), every process in one session that is killed whole when the job
ends, fails or is stopped, so no server, trainer or shared-memory segment outlives the job.

Meter (docs/design.md, "Metrics"): epoch_time_s is the slowest trainer's wall clock of an epoch,
compute_time_s its forward, backward (DDP's all-reduce inside) and step, batch_wait_s its wait for
DGL's sampler and remote feature fetches; train_peak_rss_mb the largest resident peak of any
trainer or server process and train_rss_sum_mb their sum (what a DistDGL user pays; pages of a
server's shared memory that its trainers map count in both); prepare_time_s the conversion of the
book into DistDGL's format.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import numpy as np

from gnnbench.errors import ConfigError, GnnbenchError
from gnnbench.paths import gnnbench_home
from gnnbench.process import lifecycle
from gnnbench.process.atomic import remove_stale_in, temporary_name
from gnnbench.setup.baseline_envs import distdgl_environment
from gnnbench.train import metrics
from gnnbench.train.baselines import BaselineMode, summary
from gnnbench.train.modes import TRAINING_MODES
from gnnbench.train.spec import Job, TrainSpec

log = logging.getLogger(__name__)
NAME = "distdgl"
DRIVER = Path(__file__).resolve().parents[1] / "baselines" / "distdgl_train.py"  # DGL's env runs it
SHM_SIZE = "50%"  # each partition's private /dev/shm, a tmpfs (pages are used as written)


@TRAINING_MODES.register(NAME)
class DistDGL(BaselineMode):
    ignored_axes = ("sync_interval",)  # DDP averages gradients every step
    RECIPE = {"model.name": "sage", "train.strategy": "minibatch", "train.batching": "random",
              "train.sampler_workers": 0, "train.batches_per_epoch": 0}  # fmt: skip

    @classmethod
    def check(cls, spec: TrainSpec, p: int | None) -> None:
        """DistDGL's recipe, its environment set up, and num_gpus a multiple of p (each
        partition's machine runs num_gpus / p trainers)."""
        super().check(spec, p)
        if p is not None and spec.num_gpus % p:
            raise ConfigError(f"train={NAME}: num_gpus={spec.num_gpus} must be a multiple of p={p} "
                              "(one graph server and num_gpus / p trainers per partition)")  # fmt: skip
        from gnnbench.setup.baseline_envs import distdgl_python

        distdgl_python(f"train={NAME}")  # set up, or one line naming the setup command

    @classmethod
    def train_outside(cls, job: Job) -> dict:
        from gnnbench.partition.stage.book import PartitionBook
        from gnnbench.setup.baseline_envs import distdgl_python

        job = cls.on_cpu(job)
        p = PartitionBook(job.book_path).p
        cls.check(job.spec, p)  # p=auto has chosen now
        python = distdgl_python(f"train={NAME}")
        folder = gnnbench_home() / "baselines"
        remove_stale_in(folder)  # a killed job's partitions and logs
        scratch = temporary_name(folder / NAME)
        scratch.mkdir(parents=True)
        try:
            return _train(python, job, p, scratch)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


def _train(python: Path, job: Job, p: int, scratch: Path) -> dict:
    started = time.perf_counter()
    _run_convert(python, job, p, scratch)
    prepare_s = time.perf_counter() - started
    spec_file = _job_file(job, p, scratch)
    _run_machines(python, p, spec_file, scratch, job.spec.timeout_s)
    return _summary(job, p, scratch, prepare_s)


def _run_convert(python: Path, job: Job, p: int, scratch: Path) -> None:
    command = [str(python), str(DRIVER), "convert", "--store", str(job.store_path),
               "--owner", str(job.book_path / "owner.npy"), "--parts", str(p), "--out", str(scratch)]  # fmt: skip
    completed = subprocess.run(command, capture_output=True, text=True, env=distdgl_environment(),
                               preexec_fn=lifecycle.tied_to_parent())  # fmt: skip
    if completed.returncode != 0:
        raise GnnbenchError(f"train={NAME}: converting the book to DistDGL's format failed: "
                            f"{_last_line(completed.stderr)}")  # fmt: skip


def _free_ports(count: int) -> list[int]:
    """Ports free on 127.0.0.1 now (held together while chosen, so they differ)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _job_file(job: Job, p: int, scratch: Path) -> Path:
    """job.json: what every server and trainer reads."""
    spec, model = job.spec, job.spec.model
    *server_ports, master_port = _free_ports(p + 1)
    ip_config = scratch / "ip_config.txt"
    ip_config.write_text("".join(f"127.0.0.1 {port}\n" for port in server_ports))
    processes = spec.num_gpus + p
    payload = {
        "parts": p, "num_trainers": spec.num_gpus, "out": str(scratch),
        "part_config": str(scratch / "dgl" / "graph.json"), "ip_config": str(ip_config),
        "master_port": master_port, "threads": max(1, len(os.sched_getaffinity(0)) // processes),
        "seed": spec.seed, "epochs": spec.epochs, "eval_every": spec.eval_every,
        "batch_size": spec.batch_size, "eval_batch_size": spec.eval_batch_size,
        "fanouts": list(spec.fanouts), "lr": spec.lr, "weight_decay": spec.weight_decay,
        "layers": model.layers, "hidden": model.hidden, "dropout": model.dropout,
        "num_classes": job.num_classes, "metrics_py": metrics.__file__,
    }  # fmt: skip
    path = scratch / "job.json"
    path.write_text(json.dumps(payload))
    return path


def _namespace_command(command: list[str]) -> list[str]:
    """`command` in a private mount namespace with its own /dev/shm (a tmpfs that goes with it)."""
    mount = f'mount -t tmpfs -o size={SHM_SIZE} tmpfs /dev/shm && exec "$0" "$@"'
    user = [] if os.geteuid() == 0 else ["--map-root-user"]
    return ["unshare", "--mount", "--propagation", "private", *user, "sh", "-c", mount, *command]


def _run_machines(python: Path, p: int, job_file: Path, scratch: Path, timeout_s: float) -> None:
    """Every partition's machine (server + trainers); the first failure, a stall past the
    timeout or an interrupt kills them all (their sessions whole)."""
    if shutil.which("unshare") is None:
        raise GnnbenchError(
            f"train={NAME}: needs util-linux's unshare (a private /dev/shm per partition)"
        )
    machines = []
    try:
        for part in range(p):
            command = [str(python), str(DRIVER), "machine", "--part", str(part),
                       "--job", str(job_file)]  # fmt: skip
            with open(scratch / f"machine-{part}.log", "w") as logfile:  # the child keeps its own
                machines.append(subprocess.Popen(
                    _namespace_command(command), stdout=logfile, stderr=subprocess.STDOUT,
                    env=distdgl_environment(), start_new_session=True,
                    preexec_fn=lifecycle.tied_to_parent(),
                ))  # fmt: skip
        _wait(machines, scratch, timeout_s)
    finally:
        for process in machines:
            _kill_session(process)


def _wait(machines: list, scratch: Path, timeout_s: float) -> None:
    """Until every machine exits 0; a machine failing, or no trainer progress (no new byte in
    any log) for timeout_s, is one line naming the partition and its last log line."""
    last_change, sizes = time.monotonic(), None
    while True:
        codes = [process.poll() for process in machines]
        for part, code in enumerate(codes):
            if code not in (None, 0):
                log_text = (scratch / f"machine-{part}.log").read_text(errors="replace")
                raise GnnbenchError(f"train={NAME}: partition {part}'s server or trainer failed "
                                    f"(exit {code}): {_last_line(log_text)}")  # fmt: skip
        if all(code == 0 for code in codes):
            return
        now_sizes = [
            (scratch / f"machine-{part}.log").stat().st_size for part in range(len(machines))
        ]
        if now_sizes != sizes:
            last_change, sizes = time.monotonic(), now_sizes
        elif time.monotonic() - last_change > timeout_s:
            raise GnnbenchError(f"train={NAME}: no progress for {timeout_s:.0f} s "
                                "(train.timeout_s); servers and trainers stopped")  # fmt: skip
        time.sleep(0.2)


def _kill_session(process: subprocess.Popen) -> None:
    """SIGKILL the machine's whole session (its server and trainers), then reap it."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    errors = [line for line in lines if "Error" in line or "error" in line]
    return (errors or lines or ["(no output)"])[-1][:400]


def _summary(job: Job, p: int, scratch: Path, prepare_s: float) -> dict:
    """The run's figures from every trainer's and server's JSON (baselines.summary)."""
    trainers = [json.loads(path.read_text()) for path in sorted(scratch.glob("trainer-*.json"))]
    servers = [json.loads(path.read_text()) for path in sorted(scratch.glob("server-*.json"))]
    if len(trainers) != job.spec.num_gpus or len(servers) != p:
        raise GnnbenchError(f"train={NAME}: {len(trainers)} trainer and {len(servers)} server "
                            "results, expected every process's")  # fmt: skip
    total_train = sum(t["train_nodes"] for t in trainers)
    losses = np.sum([t["train_loss"] for t in trainers], axis=0) / max(total_train, 1)
    names = ("epoch_time_s", "compute_time_s", "batch_wait_s")
    return summary(
        {name: [t[name] for t in trainers] for name in names}, losses,
        {int(epoch): scores for epoch, scores in trainers[0]["evaluations"].items()},
        [t["peak_rss_mb"] for t in trainers] + [s["peak_rss_mb"] for s in servers],
        [t["eval_time_s"] for t in trainers],
        sync_count=float(max(-(-t["train_nodes"] // job.spec.batch_size) for t in trainers)),
        train_nodes_per_epoch=float(total_train), prepare_time_s=prepare_s,
        training_ranks=job.spec.num_gpus, device="cpu",
    )  # fmt: skip
