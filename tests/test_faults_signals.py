"""Signals and killed processes: no orphans, one line on the console, the run's status right.

Each `python -m gnnbench` here starts in a session of its own (start_new_session), so every
process it leads to, even one reparented after its parent died, is found by session id in /proc.
Signals go by pid; every wait is bounded.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers.cli import start

from gnnbench.data.datasets import prepare_dataset
from gnnbench.errors import Interrupted, Killed, OutOfMemory
from gnnbench.partition.spec import PartitionSpec
from gnnbench.partition.stage import runner as stage
from gnnbench.partition.stage.runner import run_partition_stage
from gnnbench.process import lifecycle

SPAWNED = "multiprocessing.spawn"  # a training rank's command line (its samplers are forks of it)
PARTITION_CHILD = "gnnbench.partition.stage.runner"
# A job that trains long enough to be interrupted: 2 spawned ranks, one sampler process each.
TRAINING = (
    "dataset.num_nodes=4000", "partitioner=hash", "p=2", "num_gpus=2",
    "train.epochs=500", "train.sampler_workers=1",
)  # fmt: skip


def session_members(sid: int) -> dict[int, str]:
    """pid -> command line of the live (not zombie) processes in session `sid`."""
    members = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:  # it exited meanwhile
            continue
        fields = stat.rpartition(")")[2].split()
        if int(fields[3]) == sid and fields[0] not in "ZX":
            members[int(entry)] = cmdline
    return members


def parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])
    except OSError:  # it exited meanwhile
        return None


def start_time(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19])


def wait_for(condition, timeout: float, what: str):
    """Poll `condition()` until it returns something truthy; fail naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")


def matching(sid: int, text: str) -> list[int]:
    """Pids in the session whose command line contains `text`, oldest first."""
    pids = [pid for pid, cmd in session_members(sid).items() if text in cmd]
    return sorted(pids, key=lambda pid: (start_time(pid), pid))


def assert_no_survivors(sid: int, within: float) -> None:
    deadline = time.monotonic() + within
    while session_members(sid) and time.monotonic() < deadline:
        time.sleep(0.2)
    survivors = session_members(sid)
    for pid in survivors:  # leave nothing behind for the next test, then fail
        os.kill(pid, signal.SIGKILL)
    assert not survivors, f"still alive {within:.0f} s later: {survivors}"


class Job:
    """`python -m gnnbench` in a session of its own, with a private store and output folder."""

    def __init__(self, tmp_path: Path, *overrides: str):
        self.tmp_path = tmp_path
        self.stderr_path = tmp_path / "stderr.txt"
        places = [
            f"tracking.uri=sqlite:///{tmp_path / 'mlflow.db'}",
            f"hydra.run.dir={tmp_path / 'outputs'}", f"hydra.sweep.dir={tmp_path / 'multirun'}",
        ]  # fmt: skip
        with open(tmp_path / "stdout.txt", "w") as out, open(self.stderr_path, "w") as err:
            self.process = start(
                tmp_path, *overrides, *places, stdout=out, stderr=err, start_new_session=True
            )
        self.sid = self.process.pid

    def wait(self, timeout: float) -> int:
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.sid, signal.SIGKILL)
            self.process.wait()
            pytest.fail(f"gnnbench still running {timeout:.0f} s later:\n{self.stderr()}")

    def stderr(self) -> str:
        return self.stderr_path.read_text()

    def stdout(self) -> str:
        return (self.tmp_path / "stdout.txt").read_text()

    def runs(self) -> list:
        import mlflow

        client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{self.tmp_path / 'mlflow.db'}")
        experiment = client.get_experiment_by_name("gnnbench")
        return client.search_runs([experiment.experiment_id]) if experiment else []

    def artifact_text(self, run, name: str) -> str:
        import mlflow

        mlflow.set_tracking_uri(f"sqlite:///{self.tmp_path / 'mlflow.db'}")
        return mlflow.artifacts.load_text(f"{run.info.artifact_uri}/{name}")

    def kill_now(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.sid, signal.SIGKILL)
        self.process.wait()
        for pid in session_members(self.sid):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def job_in(tmp_path, gnnbench_home):
    jobs = []

    def start(*overrides: str) -> Job:
        jobs.append(Job(tmp_path, *overrides))
        return jobs[-1]

    yield start
    for job in jobs:
        job.kill_now()


def ranks_training(job: Job, count: int = 4) -> list[int]:
    """The spawned ranks (oldest first) once they and their samplers are up and rank 0 has
    reported its first epoch (issue 17: a distributed job is not silent)."""
    wait_for(lambda: len(matching(job.sid, SPAWNED)) >= count, 180, f"{count} training processes")
    wait_for(lambda: "training round 1/500: epoch 1: loss" in job.stdout(), 60, "epoch 1's line")
    return matching(job.sid, SPAWNED)


@pytest.mark.fault("signals: a training rank SIGKILLed")
@pytest.mark.slow
@pytest.mark.distributed
def test_killed_worker_is_one_line_and_failed_run(job_in):
    """A rank SIGKILLed: one line naming it and the signal, exit 2, no traceback on the console;
    the run FAILED with error_type Killed and its stack in the error.log artifact."""
    job = job_in(*TRAINING)
    ranks = ranks_training(job)
    os.kill(ranks[1], signal.SIGKILL)  # rank 1: the second rank started
    assert job.wait(60) == 2
    stderr = job.stderr()
    assert stderr.strip().splitlines()[-1] == (
        "gnnbench: error: worker 1 failed: killed by signal SIGKILL"
    )
    assert "Traceback" not in stderr
    assert_no_survivors(job.sid, 15)
    (run,) = job.runs()
    assert run.info.status == "FAILED" and run.data.tags["error_type"] == "Killed"
    assert "Traceback" in job.artifact_text(run, "error.log")


@pytest.mark.fault("signals: SIGTERM or SIGINT to the main process during training")
@pytest.mark.slow
@pytest.mark.distributed
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda sig: sig.name)
def test_interrupted_training_stops_workers_and_kills_run(job_in, sig):
    """SIGTERM / SIGINT to the main process: ranks and samplers gone within 15 s, the run KILLED
    (error_type Interrupted), one line on stderr, exit 128 + the signal."""
    job = job_in(*TRAINING)
    ranks_training(job)
    os.kill(job.process.pid, sig)
    assert_no_survivors(job.sid, 15)
    assert job.wait(30) == 128 + sig
    stderr = job.stderr()
    assert stderr.strip().splitlines()[-1] == f"gnnbench: interrupted by {sig.name}"
    assert "Traceback" not in stderr
    (run,) = job.runs()
    assert run.info.status == "KILLED" and run.data.tags["error_type"] == "Interrupted"


@pytest.mark.fault("signals: the main process SIGKILLed during training")
@pytest.mark.slow
@pytest.mark.distributed
def test_sigkilled_main_takes_its_workers_along(job_in):
    """SIGKILL to the main process: its ranks, their samplers and torch's resource tracker go
    too (the kernel's parent-death signal), instead of training on as orphans."""
    job = job_in(*TRAINING)
    ranks_training(job)
    os.kill(job.process.pid, signal.SIGKILL)
    job.process.wait(10)
    assert_no_survivors(job.sid, 15)


@pytest.mark.fault("signals: Ctrl-C during a sweep")
@pytest.mark.slow
@pytest.mark.distributed
def test_ctrl_c_in_sweep_is_one_line_and_closes_parent(job_in):
    """Ctrl-C (SIGINT to the whole process group) during a sweep's first job: one line, exit 130,
    no KeyboardInterrupt traceback; the job's run KILLED and the parent run not left RUNNING."""
    job = job_in("-m", *TRAINING, "seed=0,1")
    ranks_training(job)
    os.killpg(job.sid, signal.SIGINT)
    assert job.wait(60) == 130
    stderr = job.stderr()
    assert stderr.strip().splitlines()[-1] == "gnnbench: interrupted by SIGINT"
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    assert_no_survivors(job.sid, 15)
    by_role = {run.data.tags.get("gnnbench.role"): run for run in job.runs()}
    assert by_role["job"].info.status == "KILLED"
    assert by_role["parent"].info.status == "KILLED"


@pytest.mark.fault("signals: the main process SIGKILLed while partitioning")
@pytest.mark.slow
def test_sigkilled_main_takes_its_partition_process_along(job_in):
    """SIGKILL to the main process while it partitions: the partition subprocess goes too, at
    once (it has about 10 s of work left, which an orphan would go on with)."""
    job = job_in("dataset.num_nodes=400000", "partitioner=spring", "p=8", "train=none")
    wait_for(lambda: matching(job.sid, PARTITION_CHILD), 180, "the partition subprocess")
    time.sleep(1)
    os.kill(job.process.pid, signal.SIGKILL)
    job.process.wait(10)
    assert_no_survivors(job.sid, 4)


@pytest.mark.fault("signals: a child whose parent died before it asked to die with it")
def test_child_of_a_parent_already_gone_ends_itself():
    """die_with_parent closes the race of a parent dying before the child asked: a parent pid
    that is not its parent makes the child SIGKILL itself at once."""
    code = (
        "from gnnbench.process.lifecycle import die_with_parent; die_with_parent(1); print('alive')"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert completed.returncode == -signal.SIGKILL and "alive" not in completed.stdout


def test_interrupted_exit_status():
    assert Interrupted(signal.SIGINT).exit_status == 130
    assert Interrupted(signal.SIGTERM).exit_status == 143
    assert str(Interrupted(signal.SIGTERM)) == "interrupted by SIGTERM"


def _crash(returncode: int) -> subprocess.CompletedProcess:
    return subprocess.CompletedProcess([], returncode, "", "")


@pytest.mark.fault("signals: partition process SIGKILLed, no sign of memory pressure")
def test_partition_process_killed_without_evidence_is_killed_not_oom(monkeypatch):
    """SIGKILL alone is no evidence of the OOM killer: Killed, naming the signal."""
    monkeypatch.setattr(lifecycle, "oom_kill_count", lambda: 3)
    with pytest.raises(Killed, match="partition process for spring was killed by SIGKILL$"):
        stage._raise_for_crash(_crash(-9), PartitionSpec.defaults("spring"), oom_kills_before=3)


@pytest.mark.fault("signals: partition process killed under a memory cap or by the OOM killer")
def test_partition_process_killed_with_evidence_is_out_of_memory(monkeypatch):
    """Under a cap, or with the cgroup's OOM-kill counter risen meanwhile: OutOfMemory."""
    monkeypatch.setattr(lifecycle, "oom_kill_count", lambda: 4)
    with pytest.raises(OutOfMemory, match="out-of-memory killer"):
        stage._raise_for_crash(_crash(-9), PartitionSpec.defaults("spring"), oom_kills_before=3)
    with pytest.raises(OutOfMemory, match="under its memory cap"):
        stage._raise_for_crash(_crash(-11), PartitionSpec.defaults("spring", memory_limit_gb=1))
    with pytest.raises(OutOfMemory, match="under its memory cap"):  # a failed allocation aborts
        stage._raise_for_crash(_crash(-6), PartitionSpec.defaults("spring", memory_limit_gb=1))


@pytest.mark.fault("signals: a capped partition process SIGKILLed by another process")
def test_a_sigkill_under_a_cap_without_evidence_is_killed(monkeypatch):
    """A memory cap fails allocations, it never sends SIGKILL: a capped partition process
    SIGKILLed while the cgroup's OOM-kill counter stayed put was killed by someone else."""
    monkeypatch.setattr(lifecycle, "oom_kill_count", lambda: 3)
    capped = PartitionSpec.defaults("spring", memory_limit_gb=1)
    with pytest.raises(Killed, match="partition process for spring was killed by SIGKILL$"):
        stage._raise_for_crash(_crash(-9), capped, oom_kills_before=3)
    with pytest.raises(OutOfMemory, match="out-of-memory killer"):
        stage._raise_for_crash(_crash(-9), capped, oom_kills_before=2)


@pytest.mark.fault("signals: the real partition subprocess SIGKILLed by another process")
@pytest.mark.slow
def test_partition_process_killed_by_signal_ends_killed(gnnbench_home):
    """The real stage: its subprocess SIGKILLed by someone else (no cap, no OOM) -> Killed, and
    what the child was writing is removed at once, not by the next run's sweep."""
    store = prepare_dataset(
        {"name": "sig", "source": "synthetic", "num_nodes": 200000, "avg_degree": 8,
         "num_classes": 4, "feature_dim": 8, "seed": 1}
    )  # fmt: skip
    me = os.getpid()
    books = gnnbench_home / "partitions"

    def own_partition_children() -> list[int]:
        """This process's own partition child: the session may hold others' (a run started
        beside the suite from the same shell), which are not this test's to kill."""
        return [pid for pid in matching(os.getsid(me), PARTITION_CHILD) if parent(pid) == me]

    def kill_partition_child() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (found := own_partition_children()):
            time.sleep(0.1)
        # killed once it is writing its book (a temporary directory beside the books)
        while time.monotonic() < deadline and not list(books.glob(".*.tmp-*")):
            time.sleep(0.05)
        if found:
            os.kill(found[0], signal.SIGKILL)

    killer = threading.Thread(target=kill_partition_child)
    killer.start()
    try:
        with pytest.raises(Killed, match="killed by SIGKILL"):
            run_partition_stage(
                store, partitioner=PartitionSpec.defaults("hash"), p=8, seed=0, node_data=False
            )
    finally:
        killer.join()
    left = [path.name for folder in (store.path.parent, books) for path in folder.iterdir()]
    assert not [name for name in left if ".tmp-" in name]  # the killed child's book removed
