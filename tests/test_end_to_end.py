"""`python -m gnnbench` as a user runs it: a FINISHED MLflow run with every metric, and clean errors."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from helpers.cli import gnnbench
from helpers.datasets import CORA, requires_dataset
from helpers.runs import runs

from gnnbench.data.store import GraphStore
from gnnbench.track.mlflow_run import HEADLINE_METRICS

REQUIRED_METRICS = {*HEADLINE_METRICS, "train_loss"}
TWO_RANKS = ["--nproc_per_node=2"]  # torchrun's options: two ranks on this machine


def books(home: Path) -> dict[tuple[str, int], Path]:
    """{(algorithm, p): book directory} of the partition books under GNNBENCH_HOME."""
    found = {}
    for meta_path in (home / "partitions").glob("*/meta.json"):
        meta = json.loads(meta_path.read_text())
        found[(meta["algorithm"], int(meta["p"]))] = meta_path.parent
    return found


def replication_factor(book: Path) -> float:
    """sum_i |O_i + N(O_i)| / |V| (docs/design.md, Metrics) from the book's owner.npy and its
    store's edge list alone, not from the GNN-ready step that logs it: |V| owned nodes plus one
    halo copy per distinct (node, partition) where the node neighbours one the partition owns."""
    meta = json.loads((book / "meta.json").read_text())
    assert meta["hops"] == 1  # the 1-hop halo counted here
    owner = np.load(book / "owner.npy")
    edges = GraphStore(Path(meta["store"])).edges().astype(np.int64)
    copies = np.concatenate(
        [np.stack([edges[:, a], owner[edges[:, b]]], axis=1) for a, b in ((0, 1), (1, 0))]
    )
    halo = np.unique(copies[owner[copies[:, 0]] != copies[:, 1]], axis=0)
    return (len(owner) + len(halo)) / len(owner)


@pytest.mark.slow
@pytest.mark.distributed
def test_default_run_logs_every_metric(tmp_path, gnnbench_home):
    completed = gnnbench(tmp_path, "train.epochs=3")
    assert completed.returncode == 0, completed.stderr[-3000:]
    client, found = runs(tmp_path)
    assert len(found) == 1
    run = found[0]
    assert run.info.status == "FINISHED"
    assert REQUIRED_METRICS <= set(run.data.metrics)
    assert run.data.params["p"] == "4" and run.data.params["dataset.name"] == "synthetic"
    (book,) = books(gnnbench_home).values()
    expected = replication_factor(book)
    assert run.data.metrics["replication_factor"] == pytest.approx(expected, rel=1e-12)
    history = client.get_metric_history(run.info.run_id, "train_loss")
    assert [m.step for m in history] == [1, 2, 3]
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"config.yaml", "partition_metrics.json", "partition_flamegraph.html"} <= artifacts


@requires_dataset(CORA)
def test_sweep_partition_only(tmp_path, gnnbench_home):
    completed = gnnbench(
        tmp_path, "-m", "dataset=cora", "partitioner=spring,hash", "p=2,4", "train=none"
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    _, found = runs(tmp_path)
    assert len(found) == 4 and all(r.info.status == "FINISHED" for r in found)
    by_name = {
        (r.data.params["partitioner.name"], r.data.params["p"]): r.data.metrics for r in found
    }
    assert len(books(gnnbench_home)) == 4
    for (name, p), book in books(gnnbench_home).items():
        logged = by_name[(name, str(p))]["replication_factor"]
        assert logged == pytest.approx(replication_factor(book), rel=1e-12), (name, p)
    assert (
        by_name[("spring", "4")]["replication_factor"]
        < by_name[("hash", "4")]["replication_factor"]
    )


@pytest.mark.fault("config: an unknown dataset")
def test_unknown_dataset_is_one_line(tmp_path, gnnbench_home):
    """dataset=nope exits 2 with exactly one stderr line, which names dataset=nope as an unknown
    dataset and mentions cora, a known one."""
    completed = gnnbench(tmp_path, "dataset=nope", "train=none")
    assert completed.returncode == 2
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and "dataset=nope: unknown dataset" in lines[0] and "cora" in lines[0]


@pytest.mark.fault("config: p larger than the node count")
@requires_dataset(CORA)
def test_p_larger_than_nodes_is_one_line(tmp_path, gnnbench_home):
    """p=100000 on cora exits 2 with the last stderr line 'gnnbench: error: p=100000 is larger
    than the number of nodes of cora (2708)'; no partition is left under GNNBENCH_HOME/partitions
    and the run is FAILED with error_type ConfigError."""
    completed = gnnbench(tmp_path, "dataset=cora", "p=100000", "train=none")
    assert completed.returncode == 2
    lines = completed.stderr.strip().splitlines()
    assert (
        lines[-1] == "gnnbench: error: p=100000 is larger than the number of nodes of cora (2708)"
    )
    assert (
        not list((gnnbench_home / "partitions").glob("*"))
        if (gnnbench_home / "partitions").exists()
        else True
    )
    _, found = runs(tmp_path)
    assert found[0].info.status == "FAILED" and found[0].data.tags["error_type"] == "ConfigError"


@pytest.mark.fault("cache: a truncated edges.bin")
@requires_dataset(CORA)
def test_truncated_edge_file_is_one_line(tmp_path, gnnbench_home):
    """After a successful run, cutting 5 bytes off the cached edges.bin makes the next run exit 2
    with a last stderr line 'gnnbench: error: ...' naming edges.bin as truncated."""
    assert gnnbench(tmp_path, "dataset=cora", "p=2", "train=none").returncode == 0
    (edges,) = (gnnbench_home / "graphs").glob("cora-*/edges.bin")
    data = edges.read_bytes()
    edges.write_bytes(data[: len(data) - 5])
    completed = gnnbench(tmp_path, "dataset=cora", "p=2", "train=none")
    assert completed.returncode == 2
    line = completed.stderr.strip().splitlines()[-1]
    assert line.startswith("gnnbench: error: ") and "edges.bin" in line and "truncated" in line


@pytest.mark.fault("sweep: one failing job among others")
@requires_dataset(CORA)
def test_sweep_failure_goes_on(tmp_path, gnnbench_home):
    """A sweep over p=2,100000 runs both jobs and exits 1, stderr reporting '1 job(s) failed' and
    p=100000; one run is FINISHED, one FAILED, and no logged edge_cut is NaN or inf."""
    completed = gnnbench(
        tmp_path, "-m", "dataset=cora", "partitioner=hash", "p=2,100000", "train=none"
    )
    assert completed.returncode == 1
    assert "1 job(s) failed" in completed.stderr and "p=100000" in completed.stderr
    _, found = runs(tmp_path)
    assert sorted(r.info.status for r in found) == ["FAILED", "FINISHED"]
    assert np.isfinite([r.data.metrics.get("edge_cut", 0) for r in found]).all()


def test_sweep_of_jobs_failing_their_config_check_fails(tmp_path, gnnbench_home):
    """Jobs refused by their config check (before any run opens) are FAILED children with
    error_type and the one-line message, counted in the summary, and the sweep exits 1."""
    completed = gnnbench(tmp_path, "-m", "p=4,8", "partitioner=spring", "train.epochs=abc")
    assert completed.returncode == 1, completed.stderr[-3000:]
    assert ", 2 failed; report: " in completed.stderr and "2 job(s) failed" in completed.stderr
    jobs = [r for r in all_runs(tmp_path) if r.data.tags.get("gnnbench.role") == "job"]
    assert sorted(r.info.status for r in jobs) == ["FAILED", "FAILED"]
    assert {r.data.tags["error_type"] for r in jobs} == {"ConfigError"}
    assert all("train.epochs: expected a whole number" in r.data.tags["error"] for r in jobs)
    (parent,) = [r for r in all_runs(tmp_path) if r.data.tags.get("gnnbench.role") == "parent"]
    assert parent.info.status == "FAILED"
    assert {r.data.tags["mlflow.parentRunId"] for r in jobs} == {parent.info.run_id}


def test_sweep_with_one_refused_job_runs_the_other_and_fails(tmp_path, gnnbench_home):
    """A mixed sweep: the job with an impossible key fails its check, the other finishes."""
    completed = gnnbench(
        tmp_path, "-m", "p=2", "partitioner=hash", "train=none",
        "partitioner.chunk_edges=0,65536",
    )  # fmt: skip
    assert completed.returncode == 1, completed.stderr[-3000:]
    assert "1 finished, 0 skipped, 1 failed" in completed.stderr
    jobs = {
        r.data.params.get("partitioner.chunk_edges"): r
        for r in all_runs(tmp_path)
        if r.data.tags.get("gnnbench.role") == "job"
    }
    assert jobs["0"].info.status == "FAILED" and jobs["0"].data.tags["error_type"] == "ConfigError"
    assert jobs["65536"].info.status == "FINISHED"


@requires_dataset(CORA)
@pytest.mark.slow
@pytest.mark.distributed
def test_cora_model_avg_matches_centralized(tmp_path, gnnbench_home):
    for train in ("model_avg", "centralized"):
        completed = gnnbench(
            tmp_path, "dataset=cora", "partitioner=spring", "p=4", "num_gpus=2", f"train={train}"
        )
        assert completed.returncode == 0, completed.stderr[-3000:]
    _, found = runs(tmp_path)
    by_mode = {r.data.params["train.mode"]: r.data.metrics for r in found}
    expected = replication_factor(books(gnnbench_home)[("spring", 4)])
    assert by_mode["model_avg"]["replication_factor"] == pytest.approx(expected, rel=1e-12)
    assert by_mode["centralized"]["test_f1_micro"] >= 0.75
    assert (
        abs(by_mode["model_avg"]["test_f1_micro"] - by_mode["centralized"]["test_f1_micro"]) <= 0.05
    )


@requires_dataset("npz/amazon_cs.npz")
def test_spring_beats_hash_on_amazon_cs(gnnbench_home, tmp_path):
    from gnnbench.data.datasets import prepare_dataset
    from gnnbench.partition.spec import PartitionSpec
    from gnnbench.partition.stage.gnn_ready import build_partitions

    store = prepare_dataset({"name": "amazon_cs", "source": "npz", "path": "npz/amazon_cs.npz"})
    factors = {}
    for name in ("spring", "hash"):
        out = tmp_path / name
        out.mkdir()
        owner = PartitionSpec.defaults(name).run(store, 8, 0).owner
        factors[name] = build_partitions(store, owner, 8, out)["replication_factor"]
    assert factors["spring"] < factors["hash"]


def all_runs(cwd: Path):
    client, _ = runs(cwd)
    experiment = client.get_experiment_by_name("gnnbench")
    return client.search_runs([experiment.experiment_id])


SWEEP = ("-m", "dataset=cora", "partitioner=spring,hash", "p=2,4,100000", "train=none")


@pytest.mark.fault("sweep: resuming a sweep with failed jobs")
@requires_dataset(CORA)
def test_sweep_parent_failures_and_resume(tmp_path, gnnbench_home):
    """A six-job sweep with two impossible jobs exits 1: one FAILED parent run, four FINISHED and
    two FAILED (ConfigError) jobs under it, and one report.md under reports/<sweep_id>, its path
    printed. Rerunning the sweep exits 1 with the same failure summary, skips the four FINISHED
    jobs, runs only the two failed ones again and adds no second parent."""
    first = gnnbench(tmp_path, *SWEEP)
    assert first.returncode == 1
    assert "2 job(s) failed" in first.stderr and first.stderr.count("p=100000 is larger") == 2
    found = all_runs(tmp_path)
    parents = [r for r in found if r.data.tags.get("gnnbench.role") == "parent"]
    jobs = [r for r in found if r.data.tags.get("gnnbench.role") == "job"]
    assert len(parents) == 1 and parents[0].info.status == "FAILED"
    assert sorted(r.info.status for r in jobs) == ["FAILED"] * 2 + ["FINISHED"] * 4
    assert all(r.data.tags["mlflow.parentRunId"] == parents[0].info.run_id for r in jobs)
    assert {r.data.tags.get("error_type") for r in jobs if r.info.status == "FAILED"} == {
        "ConfigError"
    }
    sweep_id = parents[0].data.tags["sweep_id"]
    report = tmp_path / "reports" / sweep_id / "report.md"
    assert report.is_file() and f"; report: {report}" in first.stderr  # one place, printed
    assert not list(tmp_path.glob("multirun/*/*/report"))

    again = gnnbench(tmp_path, *SWEEP)

    def summary(completed):
        return completed.stderr[completed.stderr.index("gnnbench: 2 job(s) failed") :]

    assert again.returncode == 1 and summary(again) == summary(first)
    assert ": 0 finished, 4 skipped (already FINISHED: " in again.stderr  # this invocation's
    assert "), 2 failed; report: " in again.stderr
    rerun = all_runs(tmp_path)
    assert sum(r.data.tags.get("gnnbench.role") == "parent" for r in rerun) == 1
    statuses = sorted(r.info.status for r in rerun if r.data.tags.get("gnnbench.role") == "job")
    assert statuses == ["FAILED"] * 4 + ["FINISHED"] * 4  # only the two failed jobs ran again


@requires_dataset(CORA)
def test_sweep_keeps_a_job_resume_skipped(tmp_path, gnnbench_home):
    """A job that FINISHED before the sweep (a single run) is skipped by resume, yet stays in the
    sweep: a row of its report, and counted as skipped (with its run id) in the end line."""
    single = gnnbench(tmp_path, "dataset=cora", "partitioner=spring", "p=4", "train=none")
    assert single.returncode == 0, single.stderr[-3000:]
    (earlier,) = [r.info.run_id for r in all_runs(tmp_path)]
    sweep = gnnbench(
        tmp_path, "-m", "dataset=cora", "partitioner=spring,hash", "p=4,8", "train=none"
    )
    assert sweep.returncode == 0, sweep.stderr[-3000:]
    (end,) = [line for line in sweep.stderr.splitlines() if line.startswith("gnnbench: sweep ")]
    assert f": 3 finished, 1 skipped (already FINISHED: {earlier}), 0 failed; report: " in end
    report = tmp_path / end.rsplit("report: ", 1)[1]
    with open(report.with_name("report.csv"), newline="") as handle:
        rows = list(csv.DictReader(handle))
    jobs = sorted((row["partitioner.name"], row["p"], row["status"]) for row in rows)
    assert jobs == [(name, p, "FINISHED") for name in ("hash", "spring") for p in ("4", "8")]
    assert [row["run_id"] for row in rows if row["skipped"] == "True"] == [earlier]
    assert f"`{earlier}`" in report.read_text()

    # in the UI, the reused job sits inside the sweep: a link child with its figures and a note
    def runs_by_role(role):
        return [r for r in all_runs(tmp_path) if r.data.tags.get("gnnbench.role") == role]

    (parent,) = runs_by_role("parent")
    (link,) = runs_by_role("reused")
    original = next(r for r in all_runs(tmp_path) if r.info.run_id == earlier)
    assert link.data.tags["mlflow.parentRunId"] == parent.info.run_id
    assert link.data.tags["reused_run_id"] == earlier and link.info.status == "FINISHED"
    assert link.info.run_name == f"{original.info.run_name} (reused)"
    assert link.data.metrics == original.data.metrics and link.data.params == original.data.params
    assert f"measured by run {earlier} (" in link.data.tags["mlflow.note.content"]
    again = gnnbench(
        tmp_path, "-m", "dataset=cora", "partitioner=spring,hash", "p=4,8", "train=none"
    )  # the same sweep resumed: every job skipped, the link not made twice
    assert again.returncode == 0, again.stderr[-3000:]
    assert len(runs_by_role("reused")) == 1 and len(runs_by_role("parent")) == 1


@pytest.mark.fault("concurrency: parallel joblib jobs on one SQLite store")
@requires_dataset(CORA)
def test_joblib_sweep_loses_no_run(tmp_path, gnnbench_home):
    """The same six-job sweep with the joblib launcher (3 parallel jobs) on one SQLite store
    exits 1 and records all six job runs: four FINISHED, two FAILED."""
    completed = gnnbench(tmp_path, *SWEEP, "hydra/launcher=joblib", "hydra.launcher.n_jobs=3")
    assert completed.returncode == 1, completed.stderr[-2000:]
    jobs = [r for r in all_runs(tmp_path) if r.data.tags.get("gnnbench.role") == "job"]
    assert sorted(r.info.status for r in jobs) == ["FAILED"] * 2 + ["FINISHED"] * 4


@requires_dataset(CORA)
def test_auto_p_is_logged(tmp_path, gnnbench_home):
    """cora: 2708 x 1433 float32 features + 5278 int32 edges; 0.01 GB workers keep a third."""
    completed = gnnbench(
        tmp_path, "dataset=cora", "p=auto", "train=none", "+train.worker_mem_gb=0.01"
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    _, (run,) = runs(tmp_path)
    data_bytes = 5278 * 2 * 4 + 2708 * 1433 * 4
    share = 0.01 * 2**30 * (1 - 2 / 3)
    assert run.data.metrics["num_parts"] == int(np.ceil(data_bytes / share)) == 5
    assert run.data.params["p"] == "auto"


@requires_dataset(CORA)
@pytest.mark.distributed
def test_more_partitions_than_workers_train_in_turn(tmp_path, gnnbench_home):
    """p=8 on 2 workers (model_avg): each worker trains 4 partitions from the averaged model."""
    completed = gnnbench(
        tmp_path, "dataset=cora", "partitioner=spring", "p=8", "num_gpus=2", "train=model_avg",
        "train.epochs=3",
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    _, (run,) = runs(tmp_path)
    metrics = run.data.metrics
    assert run.info.status == "FINISHED"
    assert run.data.params["p"] == "8" and run.data.params["num_gpus"] == "2"
    assert metrics["train_nodes_per_epoch"] == 140  # every partition's training nodes, each epoch
    assert metrics["sync_count"] == 1 and metrics["sync_time_s"] > 0
    assert metrics["test_f1_micro"] > 0.5  # trained (7 classes: chance is about 0.14-0.3)
    # each rank loads its 4 partitions in turn: loading, evaluation and both peaks are logged
    assert metrics["load_time_s"] > 0 and metrics["eval_time_s"] > 0
    # the turns re-read 3 of them an epoch: all but each rank's first load
    assert 0 < metrics["turn_load_time_s"] < metrics["load_time_s"]
    assert 0 < metrics["train_peak_rss_mb"] and 0 < metrics["eval_peak_rss_mb"]


@requires_dataset(CORA)
@pytest.mark.distributed
def test_torchrun_two_ranks_log_one_run(tmp_path, gnnbench_home):
    """torchrun's processes are the ranks: rank 0 prepares, partitions and logs; both train."""
    completed = gnnbench(
        tmp_path, "dataset=cora", "train=grad_avg", "train.epochs=2", torchrun=TWO_RANKS
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    _, found = runs(tmp_path)
    assert [r.info.status for r in found] == ["FINISHED"]
    assert found[0].data.metrics["train_nodes_per_epoch"] == 140  # cora's public split
    output = completed.stdout + completed.stderr
    assert output.count("train: grad_avg test micro-F1") == 2  # each rank trained


@pytest.mark.fault("processes: torchrun rank 0 failing before training")
@pytest.mark.distributed
def test_torchrun_rank0_failing_before_training_fails_every_rank(tmp_path, gnnbench_home):
    """Rank 0 prepares the data while the others wait for its word: when it fails, they are told
    and fail with the same one-line error, rather than waiting out the hand-off's timeout."""
    missing = tmp_path / "missing.txt"
    completed = gnnbench(
        tmp_path, "dataset=edgelist", f"dataset.path={missing}", "train=grad_avg",
        "train.epochs=1", torchrun=TWO_RANKS,
    )  # fmt: skip
    assert completed.returncode != 0
    errors = [line for line in completed.stderr.splitlines() if "gnnbench: error: " in line]
    assert sum("missing.txt" in line for line in errors) == 2, completed.stderr[-3000:]


@requires_dataset(CORA)
@pytest.mark.distributed
def test_torchrun_sweep_resumes_on_rank0s_word(tmp_path, gnnbench_home):
    """Under torchrun a sweep keeps one set of records: rank 0 opens the parent, logs each job
    and decides which jobs resume skips, for every rank; a job that does not train on partitions
    runs on rank 0 alone."""
    sweep = ["-m", "dataset=cora", "train=grad_avg", "train.epochs=1", "seed=0,1"]

    def launch(*args: str) -> str:
        completed = gnnbench(tmp_path, *args, torchrun=TWO_RANKS)
        assert completed.returncode == 0, completed.stderr[-3000:]
        return completed.stdout + completed.stderr

    first = launch(*sweep)
    assert first.count("train: grad_avg test micro-F1") == 4  # 2 jobs x 2 ranks
    again = launch(*sweep)
    assert again.count("skipped: already FINISHED") == 4  # both ranks skip both jobs
    assert "train: grad_avg" not in again
    # centralized right after a grad_avg job: the process group is still up, and rank 0 must
    # train alone without entering it (the other rank is not there to meet it)
    mixed = launch(*sweep[:2], "train=grad_avg,centralized", "train.epochs=1", "seed=2")
    assert "runs on rank 0 alone" in mixed
    assert mixed.count("train: centralized test micro-F1") == 1
    client, found = runs(tmp_path)
    modes = sorted(r.data.params["train.mode"] for r in found)
    assert modes == ["centralized", "grad_avg", "grad_avg", "grad_avg"]
    assert {r.info.status for r in found} == {"FINISHED"}
    experiment = client.get_experiment_by_name("gnnbench").experiment_id
    parents = [
        r for r in client.search_runs([experiment]) if r.data.tags.get("gnnbench.role") == "parent"
    ]
    # one parent per sweep, opened by rank 0 only (the resumed sweep reopened the first one's)
    assert sorted(r.data.params["overrides"] for r in parents) == [
        "dataset=cora train=grad_avg train.epochs=1 seed=0,1",
        "dataset=cora train=grad_avg,centralized train.epochs=1 seed=2",
    ]
