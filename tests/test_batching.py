"""train.strategy and train.batching: which nodes form a batch, and CM-GCN's computation cost."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from helpers.configured import FAST, SAGE
from helpers.graphs import community_store, random_csr

from gnnbench.data.features import CountedRows
from gnnbench.data.graph_ops import csr_from_edges
from gnnbench.process.io_counters import drop_from_page_cache, mb_between, storage_read_bytes
from gnnbench.train.batch_source import BatchMaker, BatchSource
from gnnbench.train.batching import (
    BatchPlan,
    bfs_order,
    cluster_plans,
    computation_cost,
    induced_batch,
    minibatch_plans,
    with_neighbours,
)
from gnnbench.train.clusters import clusters
from gnnbench.train.runner import run_training
from gnnbench.train.sampler import ALL_NEIGHBOURS, NeighbourSampler, SampledBatch
from gnnbench.train.spec import spec_from_conf


def path_csr(n: int):
    edges = np.stack([np.arange(n - 1), np.arange(1, n)], axis=1)
    return csr_from_edges(edges, n)


def test_bfs_order_covers_every_piece_once():
    # two paths, 0-1-2-3 and 4-5-6: every node once, each piece contiguous and in BFS order
    edges = np.array([[0, 1], [1, 2], [2, 3], [4, 5], [5, 6]])
    indptr, indices = csr_from_edges(edges, 7)
    order = bfs_order(indptr, indices, np.random.default_rng(0))
    assert sorted(order) == list(range(7))
    first, second = order[:4], order[4:]
    if first[0] >= 4:
        first, second = order[:3], order[3:]
    assert set(first) | set(second) == set(range(7))
    for piece in (first, second):
        distance = np.abs(piece - piece[0])  # along a path: hops from the piece's root
        assert set(piece) in ({0, 1, 2, 3}, {4, 5, 6}) and np.all(np.diff(distance) >= 0)


@pytest.mark.parametrize("cohesive", [False, True])
def test_minibatches_use_each_training_node_once(cohesive):
    indptr, indices = random_csr()
    train = np.arange(0, 60, 2)
    plans = minibatch_plans(indptr, indices, train, 7, cohesive, np.random.default_rng(1))
    seeds = np.concatenate([plan.seeds for plan in plans])
    assert sorted(seeds) == list(train) and len(plans) == 5  # ceil(30 / 7)
    assert all(plan.region is None for plan in plans)


def test_computation_cost_counts_node_layer_pairs():
    # path 0-1-2-3, seed 0, two full layers: inputs {0, 1, 2}, layer 1 {0, 1}, layer 2 {0}
    indptr, indices = path_csr(4)
    batch = NeighbourSampler(indptr, indices, [ALL_NEIGHBOURS] * 2).sample(np.array([0]), 0)
    assert computation_cost(batch) == 3 + 2 + 1


def test_cohesive_batches_cost_less_than_random_ones_on_a_path():
    """On a long path, BFS-consecutive seeds share their neighbourhoods; shuffled ones do not."""
    indptr, indices = path_csr(400)
    sampler = NeighbourSampler(indptr, indices, [ALL_NEIGHBOURS] * 2)
    train = np.arange(400)
    costs = {}
    for cohesive in (False, True):
        plans = minibatch_plans(indptr, indices, train, 20, cohesive, np.random.default_rng(0))
        costs[cohesive] = sum(computation_cost(sampler.sample(p.seeds, 0)) for p in plans)
    assert costs[True] < 0.5 * costs[False]


@pytest.mark.parametrize("boundary", [False, True])
@pytest.mark.parametrize("method", ["bfs", "metis", "louvain"])
def test_cluster_batches_cover_training_nodes_inside_their_region(method, boundary):
    indptr, indices = random_csr(num_nodes=80, num_edges=200)
    train = np.arange(0, 80, 3)
    parts = clusters(indptr, indices, 8, 0, method)
    assert sorted(np.concatenate(parts)) == list(range(80))  # every node in exactly one
    again = clusters(indptr, indices, 8, 0, method)
    assert [list(part) for part in parts] == [list(part) for part in again]  # seeded
    if method == "metis":
        assert len(parts) == 8
    plans = cluster_plans(indptr, indices, train, parts, 3, np.random.default_rng(0), boundary)
    assert sorted(np.concatenate([plan.seeds for plan in plans])) == list(train)
    for plan in plans:
        assert set(plan.seeds) <= set(plan.region)
        batch = induced_batch(indptr, indices, plan, 2)
        assert list(batch.n_id[: len(plan.seeds)]) == list(plan.seeds)
        assert set(batch.n_id) <= set(plan.region)


def test_without_the_boundary_a_cluster_batch_holds_its_clusters_alone():
    """GraphTheta's default: the region is the chosen clusters' nodes, no neighbour of theirs."""
    indptr, indices = path_csr(6)  # 0-1-2-3-4-5
    parts = [np.array([0, 1, 2]), np.array([3, 4, 5])]
    rng = np.random.default_rng(0)
    alone = cluster_plans(indptr, indices, np.arange(6), parts, 1, rng, boundary=False)
    assert sorted(tuple(plan.region) for plan in alone) == [(0, 1, 2), (3, 4, 5)]
    rng = np.random.default_rng(0)
    held = cluster_plans(indptr, indices, np.arange(6), parts, 1, rng, boundary=True)
    assert sorted(tuple(plan.region) for plan in held) == [(0, 1, 2, 3), (2, 3, 4, 5)]


def test_metis_and_louvain_clusters_cut_fewer_edges_than_bfs_pieces():
    """Community structure: two dense blocks joined by one edge are found by both methods."""
    block = [(i, j) for i in range(10) for j in range(i + 1, 10)]
    edges = np.array(block + [(i + 10, j + 10) for i, j in block] + [(0, 10)])
    indptr, indices = csr_from_edges(edges, 20)
    for method in ("metis", "louvain"):
        parts = clusters(indptr, indices, 2, 0, method)
        assert sorted(tuple(part) for part in parts) == [tuple(range(10)), tuple(range(10, 20))]


def test_induced_batch_keeps_only_edges_inside_the_region():
    # path 0-1-2-3-4; region {0, 1, 2}: seed 0 reaches 1 then 2, never 3
    indptr, indices = path_csr(5)
    region = with_neighbours(indptr, indices, np.array([0, 1]))
    assert list(region) == [0, 1, 2]
    batch = induced_batch(indptr, indices, BatchPlan(0, np.array([0]), region), 3)
    assert sorted(batch.n_id) == [0, 1, 2]
    assert [block.num_dst for block in batch.blocks] == [3, 2, 1]


@pytest.mark.distributed
@pytest.mark.parametrize(
    "strategy",
    [
        {"strategy": "full"},
        {"strategy": "cluster"},
        {"batching": "cohesive"},
        {"batching": "cmgcn"},
    ],
)
def test_strategies_train_every_node_and_log_cost(graph, strategy):  # noqa: F811 (fixture)
    store, book = graph
    train = {"mode": "grad_avg", **FAST, **strategy, "num_clusters": 4}
    result = run_training(
        store_path=store.path,
        book_path=book,
        spec=spec_from_conf(train, SAGE, num_gpus=2, sync_interval=1, seed=0),
    )
    assert result.train_nodes_per_epoch == len(store.split()["train"])
    assert result.computation_cost > 0
    assert 0 < result.largest_batch_nodes <= result.train_nodes_per_epoch
    assert result.computation_cost_s > 0 and len(result.cost_model) == 8  # 2 layers x 4
    assert result.history[-1]["train_loss"] < result.history[0]["train_loss"]


def test_full_strategy_costs_at_most_the_partition_times_layers(tmp_path):
    store = community_store(tmp_path / "store", num_nodes=120)
    train = {"mode": "centralized", **FAST, "epochs": 1, "strategy": "full"}
    result = run_training(
        store_path=store.path,
        book_path=None,
        spec=spec_from_conf(train, SAGE, num_gpus=1, sync_interval=1, seed=0),
    )
    assert 0 < result.computation_cost <= 3 * store.num_nodes


@pytest.mark.distributed
@pytest.mark.parametrize("mode", ["model_avg", "grad_avg"])
def test_sampler_processes_train_exactly_as_the_trainer_alone(graph, mode):  # noqa: F811
    """Armada's disaggregation moves batch preparation, not what is trained; both runs log their
    storage reads (each starts with the store and book out of the page cache). The samplers' share
    of them is the next test's: on this small graph the trainers' own reads dominate."""
    store, book = graph
    runs = []
    for k in (0, 2):
        _drop_from_page_cache(Path(book), Path(store.path))
        spec = spec_from_conf({"mode": mode, **FAST, "sampler_workers": k}, SAGE, num_gpus=2,
                              sync_interval=1, seed=0)  # fmt: skip
        runs.append(run_training(store_path=store.path, book_path=book, spec=spec))
    losses = [[epoch["train_loss"] for epoch in run.history] for run in runs]
    assert np.allclose(losses[0], losses[1], rtol=1e-5)
    assert runs[0].computation_cost == runs[1].computation_cost
    assert all(run.batch_wait_s > 0 for run in runs)
    if storage_read_bytes() is None or not hasattr(os, "posix_fadvise"):
        return
    if all(run.bytes_read_mb == 0 for run in runs):
        pytest.skip(f"{book}: reads reached no block device here (tmpfs?)")
    assert all(run.bytes_read_mb > 0 and run.eval_bytes_read_mb >= 0 for run in runs)


@pytest.mark.distributed
def test_a_helper_thread_trains_exactly_as_the_trainer_alone(graph):  # noqa: F811
    """batch_preparation=thread moves preparation beside the step, not what is trained: the
    same losses, cost and F1 as inline (the kernels reseed per batch, on whichever thread)."""
    store, book = graph
    runs = []
    for preparation in ("inline", "thread"):
        spec = spec_from_conf({"mode": "model_avg", **FAST, "batch_preparation": preparation},
                              SAGE, num_gpus=2, sync_interval=1, seed=0)  # fmt: skip
        runs.append(run_training(store_path=store.path, book_path=book, spec=spec))
    losses = [[epoch["train_loss"] for epoch in run.history] for run in runs]
    assert np.allclose(losses[0], losses[1], rtol=1e-5)
    assert runs[0].computation_cost == runs[1].computation_cost
    assert runs[0].test_f1_micro == pytest.approx(runs[1].test_f1_micro, abs=1e-9)


@pytest.mark.distributed
@pytest.mark.parametrize(
    "preparation",
    [{}, {"batch_preparation": "thread"}, {"sampler_workers": 1}],
    ids=["inline", "thread", "sampler process"],
)
def test_superbatches_train_exactly_as_batches_alone(graph, preparation):  # noqa: F811
    """train.superbatch reads the rows of several batches together; what is trained stays the
    same batches with the same rows: the same losses, cost and F1 (3 per superbatch, so the last
    of a partition's batches make a shorter one)."""
    store, book = graph
    runs = []
    for superbatch in (1, 3):
        train = {"mode": "model_avg", **FAST, **preparation, "superbatch": superbatch}
        spec = spec_from_conf(train, SAGE, num_gpus=2, sync_interval=1, seed=0)
        runs.append(run_training(store_path=store.path, book_path=book, spec=spec))
    losses = [[epoch["train_loss"] for epoch in run.history] for run in runs]
    assert np.allclose(losses[0], losses[1], rtol=1e-6, atol=0)
    assert runs[0].computation_cost == runs[1].computation_cost
    assert runs[0].test_f1_micro == pytest.approx(runs[1].test_f1_micro, abs=1e-9)


def test_a_superbatch_reads_each_row_once_in_one_gather(monkeypatch):
    """Three batches whose neighbourhoods overlap: one gather of their rows, sorted and each once;
    each batch gets exactly its own n_id's rows, in its order; a taken batch is handed over (the
    superbatch keeps no reference to it) and the buffer holds no more than the distinct rows."""
    rows = 40
    features = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3)
    counted = CountedRows(features, keep=True)
    gathers = counted.reads
    part = SimpleNamespace(index=0, features=counted, labels=torch.zeros(rows, dtype=torch.long))
    n_ids = {0: np.array([5, 1, 9]), 1: np.array([9, 30, 1, 2]), 2: np.array([17, 5])}
    monkeypatch.setattr(BatchMaker, "sample",
                        lambda self, part, plan, epoch: SampledBatch(n_id=n_ids[plan.key], blocks=[]))  # fmt: skip
    specs = tuple((0, BatchPlan(key=k, seeds=n_ids[k][:1]), 0) for k in range(3))
    superbatch = BatchMaker(part, "minibatch", seed=0)[specs]
    assert len(gathers) == 1 and gathers[0].tolist() == [1, 2, 5, 9, 17, 30]
    assert len(superbatch.rows) == 6  # the distinct rows, not the 9 the batches name
    for k in range(3):
        batch = superbatch.take(k)
        assert np.array_equal(batch.x.numpy(), features[n_ids[k]])
        assert superbatch.batches[k] is None
    with pytest.raises(RuntimeError, match="taken twice"):
        superbatch.take(0)


def test_a_superbatch_of_one_is_the_batch_alone(monkeypatch):
    """superbatch=1 (the default): a batch's rows are gathered in its own n_id order and become
    its x as they are, no buffer indexed, as before the key."""
    features = np.arange(30, dtype=np.float32).reshape(10, 3)
    part = SimpleNamespace(index=0, features=features, labels=torch.zeros(10, dtype=torch.long))
    n_id = np.array([7, 2, 4])
    monkeypatch.setattr(BatchMaker, "sample",
                        lambda self, part, plan, epoch: SampledBatch(n_id=n_id, blocks=[]))  # fmt: skip
    superbatch = BatchMaker(part, "minibatch", seed=0)[((0, BatchPlan(key=0, seeds=n_id), 0),)]
    assert superbatch.positions is None
    rows = superbatch.rows
    assert superbatch.take(0).x is rows and np.array_equal(rows.numpy(), features[n_id])


def test_a_superbatch_below_one_is_refused():
    from gnnbench.errors import ConfigError

    with pytest.raises(ConfigError, match="train.superbatch"):
        spec_from_conf({"mode": "model_avg", "superbatch": 0})


@pytest.mark.parametrize("sampler_workers", [0, 1], ids=["inline", "sampler process"])
def test_superbatch_mb_bounds_every_buffer_and_trains_the_same_rows(monkeypatch, sampler_workers):
    """train.superbatch_mb: with batches of 4 seeds and fanouts 3, 2 a batch names at most
    4 x (1 + 3 + 6) = 40 rows of 64 bytes, so a bound of 3 such batches groups 3 of the 8 that
    train.superbatch asks for; no buffer holds more, and every batch gets the rows it gets alone."""
    indptr, indices = random_csr(num_nodes=200, num_edges=1500)
    features = np.random.default_rng(0).standard_normal((200, 16)).astype(np.float32)
    part = SimpleNamespace(index=0, features=features, labels=torch.zeros(200, dtype=torch.long),
                           sampler=NeighbourSampler(indptr, indices, (3, 2)))  # fmt: skip
    specs = [(0, BatchPlan(key=k, seeds=np.arange(4 * k, 4 * k + 4)), 0) for k in range(11)]
    bound_mb = 3 * 40 * 16 * 4 / 2**20
    buffers = []
    real = BatchMaker.__getitem__

    def recorded(self, group):
        superbatch = real(self, group)
        buffers.append((len(group), superbatch.rows.nbytes))
        return superbatch

    monkeypatch.setattr(BatchMaker, "__getitem__", recorded)
    alone = BatchSource("minibatch", 0, sampler_workers=0, timeout_s=60, pin=False)
    expected = [batch.x.clone() for batch in alone.batches(part, specs)]
    buffers.clear()
    bounded = BatchSource("minibatch", 0, sampler_workers=sampler_workers, timeout_s=120,
                          pin=False, superbatch=8, superbatch_mb=bound_mb)  # fmt: skip
    try:
        got = [batch.x.clone() for batch in bounded.batches(part, specs)]
    finally:
        bounded.close()
    assert all(torch.equal(a, b) for a, b in zip(got, expected, strict=True))
    assert bounded.group_size(part, specs) == 3
    if sampler_workers == 0:  # a forked sampler's record stays in its own process
        assert [size for size, _ in buffers] == [3, 3, 3, 2]
        assert max(nbytes for _, nbytes in buffers) <= bound_mb * 2**20


def test_a_batch_bound_by_every_row_is_bounded_by_its_partition():
    """A fanout of -1 (every neighbour), a full or a cluster batch: its rows are bounded by the
    partition's alone; a sampled tree larger than the partition by the partition too."""
    from gnnbench.train.batch_source import batch_rows_bound

    indptr, indices = random_csr(num_nodes=60, num_edges=400)
    part = SimpleNamespace(features=np.zeros((60, 2)), sampler=None)
    for fanouts, sampled, expected in [((3, 2), True, 40), ((3, -1), True, 60),
                                       ((3, 2), False, 60), ((25, 10), True, 60)]:  # fmt: skip
        part.sampler = NeighbourSampler(indptr, indices, fanouts)
        assert batch_rows_bound(part, 4, sampled) == expected, fanouts


def test_a_superbatch_bound_needs_superbatches_and_a_positive_size():
    from gnnbench.errors import ConfigError

    with pytest.raises(ConfigError, match="train.superbatch_mb: bounds .* train.superbatch=1"):
        spec_from_conf({"mode": "model_avg", "superbatch_mb": 64})
    with pytest.raises(ConfigError, match=r"train.superbatch_mb: expected a number > 0, got 0"):
        spec_from_conf({"mode": "model_avg", "superbatch": 4, "superbatch_mb": 0})
    assert spec_from_conf({"mode": "model_avg", "superbatch": 4}).superbatch_mb is None


def _helper_threads() -> list:
    import threading

    return [t for t in threading.enumerate() if t.name.startswith("gnnbench-batch")]


def test_a_pass_left_early_leaves_no_helper_thread_and_errors_reach_the_trainer(monkeypatch):
    rows = 64
    part = SimpleNamespace(index=0, features=np.ones((rows, 4), dtype=np.float32),
                           labels=torch.zeros(rows, dtype=torch.long))  # fmt: skip
    every_row = SampledBatch(n_id=np.arange(rows), blocks=[])
    monkeypatch.setattr(BatchMaker, "sample", lambda self, part, plan, epoch: every_row)
    source = BatchSource("minibatch", 0, sampler_workers=0, timeout_s=60, pin=False, ahead=True)
    specs = [(0, BatchPlan(key=k, seeds=np.arange(k, k + 4)), 0) for k in range(5)]
    stream = source.batches(part, specs)
    assert [int(next(stream).seeds[0]) for _ in range(2)] == [0, 1]
    stream.close()  # the trainer stops mid-pass (an error in its step, a signal)
    assert _helper_threads() == []
    calls = []

    def broken(self, part, plan, epoch):
        calls.append(plan.key)
        if plan.key == 2:
            raise ValueError("sampling broke")
        return every_row

    monkeypatch.setattr(BatchMaker, "sample", broken)
    with pytest.raises(ValueError, match="sampling broke"):
        list(source.batches(part, specs))
    assert _helper_threads() == [] and calls == [0, 1, 2]


def test_thread_preparation_beside_sampler_processes_is_refused():
    from gnnbench.errors import ConfigError

    with pytest.raises(ConfigError, match="batch_preparation=thread.*sampler_workers=2"):
        spec_from_conf({"mode": "centralized", "batch_preparation": "thread", "sampler_workers": 2})


def test_prefetching_partitions_beside_sampler_processes_is_refused():
    """Sampler processes are forked at each turn; a thread loading the next partition then could
    leave them a held lock: one line, before any data is read."""
    from gnnbench.errors import ConfigError

    with pytest.raises(ConfigError, match="prefetch_partitions.*sampler_workers=1"):
        spec_from_conf({"mode": "model_avg", "prefetch_partitions": True, "sampler_workers": 1})


def test_a_sampler_process_reads_count_for_its_trainer(tmp_path, monkeypatch):
    """Feature rows gathered in a sampler process from a file out of the page cache: the trainer's
    count (BatchSource.read_bytes) holds the sampler's reads, though the trainer read nothing,
    and holds them once after the sampler is stopped."""
    if storage_read_bytes() is None or not hasattr(os, "posix_fadvise"):
        pytest.skip("no /proc/<pid>/io or posix_fadvise here")
    probe = tmp_path / "probe.bin"  # whether a cold read here reaches a disk at all
    probe.write_bytes(os.urandom(1 << 20))
    drop_from_page_cache(probe)
    before = storage_read_bytes()
    probe.read_bytes()
    if storage_read_bytes() == before:
        pytest.skip(f"{tmp_path}: reads reach no block device here (tmpfs?)")
    rows, columns = 16384, 128  # 8 MiB of float32
    path = tmp_path / "feat.bin"
    path.write_bytes(np.ones((rows, columns), dtype=np.float32).tobytes())
    drop_from_page_cache(path)
    features = np.memmap(path, dtype=np.float32, mode="r", shape=(rows, columns))
    part = SimpleNamespace(index=0, features=features, labels=torch.zeros(rows, dtype=torch.long))
    every_row = SampledBatch(n_id=np.arange(rows), blocks=[])
    monkeypatch.setattr(BatchMaker, "sample", lambda self, part, plan, epoch: every_row)
    source = BatchSource("minibatch", 0, sampler_workers=1, timeout_s=120, pin=False)
    before = source.read_bytes()
    try:
        plan = BatchPlan(key=0, seeds=np.arange(4))
        assert [len(batch.x) for batch in source.batches(part, [(0, plan, 0)])] == [rows]
        read_mb = mb_between(before, source.read_bytes())
    finally:
        source.close()
    assert read_mb >= 0.9 * path.stat().st_size / 2**20, f"{read_mb:.2f} MiB counted"
    stopped = mb_between(before, source.read_bytes())  # the reaped sampler's reads are now ours
    assert abs(stopped - read_mb) < 1, f"{stopped:.2f} MiB after the sampler stopped, not once"


def _drop_from_page_cache(*folders: Path) -> None:
    for path in (path for folder in folders for path in folder.rglob("*") if path.is_file()):
        if hasattr(os, "posix_fadvise"):
            drop_from_page_cache(path)


def test_a_failing_sampler_process_fails_the_run(graph, monkeypatch):  # noqa: F811
    from gnnbench.train.batch_source import BatchMaker

    def broken(self, spec):
        raise ValueError("sampler broke")

    monkeypatch.setattr(BatchMaker, "__getitem__", broken)
    store, _ = graph
    train = {"mode": "centralized", **FAST, "sampler_workers": 1}
    with pytest.raises(ValueError, match="sampler broke"):
        run_training(
            store_path=store.path,
            book_path=None,
            spec=spec_from_conf(train, SAGE, num_gpus=1, sync_interval=1, seed=0),
        )


def test_sampler_scratch_is_allocated_by_its_first_sample_and_narrow():
    """A partition builds three samplers and uses one at a time: only a sampler that samples
    holds the per-node scratch, int32 below 2^31 nodes, and it is clean between calls."""
    indptr, indices = random_csr()
    sampler = NeighbourSampler(indptr, indices, [3, 2])
    assert sampler._position is None
    seeds = np.array([5, 0, 17])
    first = sampler.sample(seeds, 7)
    assert sampler._position.dtype == np.int32
    assert (sampler._position == -1).all()
    again = sampler.sample(seeds, 7)
    assert np.array_equal(first.n_id, again.n_id)
    eager = NeighbourSampler(indptr, indices, [3, 2])
    eager._position = np.full(len(indptr) - 1, -1, dtype=np.int64)  # the old scratch
    assert np.array_equal(eager.sample(seeds, 7).n_id, first.n_id)
