"""run_key: a job's identity holds what changes its result and nothing its train mode ignores."""

from __future__ import annotations

import pytest
from helpers.cli import gnnbench
from helpers.configured import BASE
from helpers.runs import runs

from gnnbench import config_values
from gnnbench.config_values import is_neutral
from gnnbench.identity import run_key, run_keys
from gnnbench.track.report.query import ALIASES_TAG, newest_per_job
from gnnbench.track.sweep import SweepTracker
from gnnbench.track.tags import SKIPPED_ALIASES_TAG, SKIPPED_TAG


def key(mode: str, **changes) -> str:
    return run_key({**BASE, "train": {"mode": mode, "epochs": 3}, **changes})


def test_ignored_axes_do_not_change_the_key():
    assert key("grad_avg", sync_interval=1) == key("grad_avg", sync_interval=5)
    assert key("centralized", p=4, num_gpus=2) == key("centralized", p=8, num_gpus=1)
    assert key("centralized") == key("centralized", partitioner={"name": "hash"})
    assert key("none", model={"name": "gcn"}, num_gpus=1) == key("none")
    assert key("model_avg", tracking={"uri": "sqlite:///b.db"}, resume=False) == key("model_avg")


def test_axes_that_matter_change_the_key():
    assert key("model_avg", sync_interval=1) != key("model_avg", sync_interval=5)
    assert key("grad_avg", p=4) != key("grad_avg", p=8)
    assert key("none", p=4) != key("none", p=8)
    assert key("none", p="auto", num_gpus=1) != key("none", p="auto", num_gpus=2)
    assert key("centralized", seed=0) != key("centralized", seed=1)


def test_a_key_added_later_at_its_neutral_value_keeps_the_older_key():
    """train.optimizer_state came after runs existed: `local` is what they computed."""
    before = key("model_avg")
    added = {"mode": "model_avg", "epochs": 3, "optimizer_state": "local"}
    assert key("model_avg", train=added) == before
    assert key("model_avg", train={**added, "optimizer_state": "average"}) != before
    assert (
        key("model_avg", partitioner={"name": "spring", "refine_objective": "edge_cut"}) == before
    )


def test_cluster_keys_count_only_where_the_cluster_strategy_reads_them():
    """train.cluster_method and cluster_boundary came later, read by strategy=cluster alone:
    every other job keeps its key whatever they hold; a cluster job keeps its key at what runs
    before them computed (bfs clusters with their boundary) and changes with either."""

    def with_train(**train):
        return {"mode": "model_avg", "epochs": 3, **train}

    for strategy in ("minibatch", "full"):
        before = key("model_avg", train=with_train(strategy=strategy))
        for method, boundary in (("bfs", False), ("metis", True), ("louvain", False)):
            now = with_train(strategy=strategy, cluster_method=method, cluster_boundary=boundary)
            assert key("model_avg", train=now) == before
    before = key("model_avg", train=with_train(strategy="cluster"))
    same = with_train(strategy="cluster", cluster_method="bfs", cluster_boundary=True)
    assert key("model_avg", train=same) == before
    for changed in ({"cluster_boundary": False}, {"cluster_method": "metis"}):
        assert key("model_avg", train={**same, **changed}) != before


def test_run_keys_hold_the_key_runs_were_tagged_with_while_the_key_counted(monkeypatch):
    config = {**BASE, "train": {"mode": "model_avg", "epochs": 3, "optimizer_state": "local"},
              "partitioner": {"name": "spring", "chunk_edges": 1048576}}  # fmt: skip
    monkeypatch.setattr(config_values, "KEYS_ADDED_LATER", {})  # the version before this rule
    tagged_then = run_key(config)
    monkeypatch.undo()
    keys = run_keys(config)
    assert keys[0] == run_key(config) != tagged_then
    assert tagged_then in keys and len(set(keys)) == 4  # each of the 2 neutral keys in or out


def test_neutral_means_the_same_type_too():
    """chunk_refinement=1 or grid_dims=2.0 is no older config: it gets its own key (and its
    partitioner's error) instead of a cached book or a skipped job."""
    assert is_neutral("partitioner.chunk_refinement", True)
    assert not is_neutral("partitioner.chunk_refinement", 1)
    assert not is_neutral("partitioner.grid_dims", 2.0) and is_neutral("partitioner.grid_dims", 2)
    assert not is_neutral("partitioner.name", "grid")  # not a key added later


def test_run_keys_count_only_what_the_mode_does_not_ignore():
    """Centralized ignores the partitioner: its neutral chunk_edges makes no second key."""
    config = {**BASE, "train": {"mode": "centralized", "epochs": 3},
              "partitioner": {"name": "spring", "chunk_edges": 1048576}}  # fmt: skip
    assert run_keys(config) == [run_key(config)]


def test_resume_finds_a_run_under_any_of_its_keys(tmp_path):
    tracker = SweepTracker(f"sqlite:///{tmp_path / 'mlflow.db'}", "resume")
    run = tracker.client.create_run(tracker.experiment_id, tags={"run_key": "older"})
    assert tracker.finished_run(["newer", "older"]) is None  # RUNNING: not a result
    tracker.client.set_terminated(run.info.run_id, "FINISHED")
    assert tracker.finished_run(["newer", "older"]) == run.info.run_id
    assert tracker.finished_run(["newer"]) is None


def _child(tracker, sweep_id: str, key: str, status: str, aliases: str = ""):
    tags = {"sweep_id": sweep_id, "gnnbench.role": "job", "run_key": key}
    run = tracker.client.create_run(tracker.experiment_id, tags={**tags, ALIASES_TAG: aliases})
    tracker.client.set_terminated(run.info.run_id, status)
    return tracker.client.get_run(run.info.run_id)


@pytest.mark.parametrize("aliased", [True, False])
def test_a_job_failed_under_an_older_key_is_no_failure_once_skipped(tmp_path, aliased):
    """Before an upgrade a job FAILED in this sweep (key 'older'); now resume skips it as
    FINISHED elsewhere under 'newer'. The parent's alias tag ties the two together."""
    tracker = SweepTracker(f"sqlite:///{tmp_path / 'mlflow.db'}", "aliases")
    parent = tracker.open_parent("s1", [], "sweep p=2,4")
    older = _child(tracker, "s1", "older", "FAILED")
    this_invocation = older.info.start_time + 1  # the FAILED run came from an earlier one
    tracker.client.set_tag(parent, SKIPPED_TAG + "newer", "finished-elsewhere")
    if aliased:
        tracker.client.set_tag(parent, SKIPPED_ALIASES_TAG + "newer", "oldest,older")
    lines, counts = tracker.close_parent(parent, "s1", since_ms=this_invocation)
    assert (lines == []) is aliased
    assert tracker.client.get_run(parent).info.status == ("FINISHED" if aliased else "FAILED")
    assert counts.startswith("0 finished, 1 skipped")


def test_a_rerun_replaces_the_run_its_older_key_tagged(tmp_path):
    """The newest run of a job counts, whichever version tagged the older ones."""
    tracker = SweepTracker(f"sqlite:///{tmp_path / 'mlflow.db'}", "aliases")
    older = _child(tracker, "s1", "older", "FAILED")
    newer = _child(tracker, "s1", "newer", "FINISHED", aliases="oldest,older")
    other = _child(tracker, "s1", "other", "FINISHED")
    kept = {run.info.run_id for run in newest_per_job([older, newer, other])}
    assert kept == {newer.info.run_id, other.info.run_id}


@pytest.mark.slow
@pytest.mark.distributed
def test_grad_avg_sweep_over_sync_interval_runs_once(tmp_path, gnnbench_home):
    """`-m sync_interval=1,2 train=grad_avg` trains one job and resumes the other."""
    completed = gnnbench(
        tmp_path, "-m", "sync_interval=1,2", "train=grad_avg", "train.epochs=1",
        "dataset.num_nodes=2000", "p=2",
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-2000:]
    _, found = runs(tmp_path)
    assert len(found) == 1 and found[0].info.status == "FINISHED"
    assert "already FINISHED" in completed.stdout + completed.stderr
