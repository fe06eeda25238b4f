"""Training stage: sampler, F1, model averaging, and whole runs (centralized and model_avg)."""

from __future__ import annotations

import dataclasses
import shutil
import signal
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers.configured import FAST, SAGE
from helpers.graphs import community_store, random_csr

from gnnbench.data.store import GraphStore
from gnnbench.errors import ConfigError, DataError
from gnnbench.partition.stage.book import PartitionBook
from gnnbench.train.group import RankGroup
from gnnbench.train.metrics import confusion_counts, f1_scores
from gnnbench.train.models import MODELS
from gnnbench.train.record import EpochRecord
from gnnbench.train.result import TrainResult
from gnnbench.train.runner import check_training_config, run_training
from gnnbench.train.sampler import ALL_NEIGHBOURS, NeighbourSampler, batch_seed
from gnnbench.train.spec import TrainSpec, spec_from_conf
from gnnbench.train.sync import all_reduce_average, weighted_state_sum

RESULT_KEYS = {
    "epoch_time_s", "compute_time_s", "sync_time_s", "val_f1_micro", "test_f1_micro", "test_f1_macro",
    "num_epochs", "training_ranks", "device", "history", "sync_count",
    "train_nodes_per_epoch", "computation_cost", "batch_wait_s", "gpu_peak_mb", "sync_wait_s",
    "train_peak_rss_mb", "train_rss_sum_mb", "eval_peak_rss_mb", "load_time_s", "turn_load_time_s", "eval_time_s",
}  # fmt: skip


def spec(train: dict, model: dict = SAGE, workers: int = 1, sync_interval: int = 1) -> TrainSpec:
    """The YAML defaults of train.mode and model.name with the test's keys laid over them."""
    return spec_from_conf(train, model, num_gpus=workers, sync_interval=sync_interval, seed=0)


# --- sampler -------------------------------------------------------------------------------------
def test_sampler_blocks_are_valid_samples():
    indptr, indices = random_csr()
    fanouts = [3, 2]
    seeds = np.array([5, 0, 17, 42])
    batch = NeighbourSampler(indptr, indices.astype(np.int32), fanouts).sample(seeds, 7)
    assert np.array_equal(batch.n_id[: len(seeds)], seeds)
    assert len(np.unique(batch.n_id)) == len(batch.n_id)
    assert batch.blocks[-1].num_dst == len(seeds) and batch.blocks[0].num_src == len(batch.n_id)
    edges = {(u, v) for u in range(len(indptr) - 1) for v in indices[indptr[u] : indptr[u + 1]]}
    # blocks are in model order: blocks[-1] is the hop nearest the seeds, sampled with fanouts[0]
    for block, fanout in zip(batch.blocks, reversed(fanouts), strict=True):
        src, dst = block.edge_index
        assert (
            block.num_dst <= block.num_src
            and src.max() < block.num_src
            and dst.max() < block.num_dst
        )
        degree = np.diff(indptr)[batch.n_id[: block.num_dst]]
        assert np.array_equal(np.bincount(dst, minlength=block.num_dst), np.minimum(degree, fanout))
        pairs = set(zip(batch.n_id[dst].tolist(), batch.n_id[src].tolist(), strict=True))
        assert len(pairs) == len(src) and pairs <= edges  # without replacement, real edges only
    assert batch.blocks[0].num_dst == batch.blocks[1].num_src  # dst of a layer = src of the next


def same_blocks(first, second) -> bool:
    pairs = zip(first.blocks, second.blocks, strict=True)
    return all(np.array_equal(a.edge_index, b.edge_index) for a, b in pairs)


def test_sampler_is_deterministic_and_takes_all_with_minus_one():
    indptr, indices = random_csr()
    sampler = NeighbourSampler(indptr, indices, [4, 4])
    seeds = np.arange(10)
    first, again = sampler.sample(seeds, 1), sampler.sample(seeds, 1)
    assert same_blocks(first, again) and np.array_equal(first.n_id, again.n_id)
    assert not same_blocks(first, sampler.sample(seeds, 2))
    full = NeighbourSampler(indptr, indices, [ALL_NEIGHBOURS]).sample(seeds, 0)
    assert full.blocks[0].edge_index.shape[1] == int(np.diff(indptr)[seeds].sum())
    assert batch_seed(0, 1, 2, 3) == batch_seed(0, 1, 2, 3) != batch_seed(0, 1, 2, 4)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_with_neighbours_is_the_full_samples_nodes(dtype):
    """The nodes a layer-wise evaluation needs one hop further out: what sampling every
    neighbour lists, in the same order, without building the edges."""
    from gnnbench.train.sampler import with_neighbours

    indptr, indices = random_csr()
    seeds = np.array([9, 2, 40, 3])
    full = NeighbourSampler(indptr, indices.astype(dtype), [ALL_NEIGHBOURS]).sample(seeds, 0)
    assert np.array_equal(with_neighbours(indptr, indices.astype(dtype), seeds), full.n_id)
    assert len(with_neighbours(indptr, indices, np.array([], dtype=np.int64))) == 0


def test_sampler_rejects_duplicate_seeds_and_stays_usable():
    indptr, indices = random_csr()
    sampler = NeighbourSampler(indptr, indices, [2])
    with pytest.raises(ValueError, match="unique"):
        sampler.sample(np.array([3, 4, 3]), 0)
    assert np.array_equal(sampler.sample(np.array([4, 3]), 0).n_id[:2], [4, 3])


# --- metrics and averaging -----------------------------------------------------------------------
def test_f1_from_counts_matches_hand_computation():
    target = torch.tensor([0, 0, 1, 1, 2, 2])
    prediction = torch.tensor([0, 1, 1, 1, 0, 2])
    counts = confusion_counts(prediction, target, num_classes=4)  # class 3 never occurs
    assert counts.tolist() == [[1, 2, 1, 0], [1, 1, 0, 0], [1, 0, 1, 0]]
    micro, macro = f1_scores(counts)
    assert micro == pytest.approx(4 / 6)  # accuracy
    assert macro == pytest.approx((2 / 4 + 4 / 5 + 2 / 3) / 3)  # per-class 2TP/(2TP+FP+FN)
    multi = confusion_counts(torch.tensor([[1, 0], [1, 1]]), torch.tensor([[1, 1], [0, 1]]), 2)
    assert multi.tolist() == [[1, 1], [1, 0], [0, 1]]
    assert f1_scores(multi) == pytest.approx((4 / 6, (2 / 3 + 2 / 3) / 2))


def sklearn_f1(prediction: np.ndarray, target: np.ndarray) -> tuple[float, float]:
    """sklearn's (micro, macro) F1 over the labels that occur in the truth or the predictions
    (for single-label data sklearn's own default; a multi-label column empty in both is left
    out, as gnnbench's macro-F1 leaves it)."""
    from sklearn.metrics import f1_score

    if target.ndim == 2:
        labels = np.flatnonzero(target.any(axis=0) | prediction.any(axis=0))
    else:
        labels = np.union1d(target, prediction)
    return tuple(
        f1_score(target, prediction, average=average, labels=labels, zero_division=0)
        for average in ("micro", "macro")
    )


@pytest.mark.parametrize("multilabel", [True, False], ids=["multilabel", "single-label"])
def test_f1_from_counts_matches_sklearn(multilabel):
    """Random predictions against random truth, 5 classes of which the last is never predicted
    nor true: the F1 from summed confusion counts is sklearn's, and counts of two halves added
    (as ranks all-reduce them) give the F1 of the whole."""
    rng = np.random.default_rng(7)
    if multilabel:
        target = (rng.random((200, 5)) < [0.5, 0.3, 0.1, 0.7, 0]).astype(np.uint8)
        prediction = (rng.random((200, 5)) < [0.4, 0.4, 0.2, 0.6, 0]).astype(np.uint8)
    else:
        target, prediction = rng.integers(0, 4, 200), rng.integers(0, 4, 200)
    halves = [
        confusion_counts(torch.from_numpy(prediction[part]), torch.from_numpy(target[part]), 5)
        for part in (slice(0, 120), slice(120, None))
    ]
    expected = sklearn_f1(prediction, target)
    assert f1_scores(halves[0] + halves[1]) == pytest.approx(expected, abs=1e-12)
    assert expected[0] != pytest.approx(expected[1])  # micro and macro differ: each is checked


def test_weighted_average_of_two_states():
    first = {"w": torch.tensor([1.0, 2.0]), "steps": torch.tensor(7)}
    second = {"w": torch.tensor([5.0, 10.0]), "steps": torch.tensor(9)}
    averaged = all_reduce_average(
        weighted_state_sum([first, second], [1.0, 3.0]), total_weight=4.0, distributed=False
    )
    assert torch.allclose(averaged["w"], torch.tensor([4.0, 8.0]))
    assert int(averaged["steps"]) == 7  # integer buffers are not averaged


def test_models_are_registered():
    assert {"sage", "mlp", "gcn", "gat"} <= set(MODELS.names())


@pytest.mark.usefixtures("pyg_generated_code_removed")
def test_block_gcn_matches_pyg_gcn_on_a_whole_graph():
    """On a symmetric graph taken whole (targets = sources) the block GCN is PyG's GCNConv."""
    from torch_geometric.nn import GCNConv

    from gnnbench.train.models.gcn import BlockGCNConv

    indptr, indices = random_csr()
    n = len(indptr) - 1
    target = torch.from_numpy(np.repeat(np.arange(n), np.diff(indptr)))
    edge_index = torch.stack([torch.from_numpy(indices), target])
    x = torch.randn(n, 8)
    ours, pyg = BlockGCNConv(8, 4), GCNConv(8, 4)
    with torch.no_grad():
        pyg.lin.weight.copy_(ours.linear.weight)
        pyg.bias.zero_()
    assert torch.allclose(ours((x, x), edge_index, (n, n)), pyg(x, edge_index), atol=1e-5)


@pytest.mark.fault("config: GAT hidden width not a multiple of heads")
def test_gat_hidden_must_divide_into_heads():
    """A GAT with hidden=30 and heads=4 is a ConfigError saying hidden must be a multiple of
    model.heads=4."""
    from gnnbench.train.models import build_model

    with pytest.raises(ConfigError, match="multiple of model.heads=4"):
        build_model(8, 3, {"name": "gat", "layers": 2, "hidden": 30, "heads": 4, "dropout": 0.5})


# --- whole runs ----------------------------------------------------------------------------------
def check_result(result: TrainResult, epochs: int) -> None:
    assert RESULT_KEYS <= set(result.as_dict())
    assert [entry["epoch"] for entry in result.history] == list(range(1, epochs + 1))
    assert all(entry["val_f1_micro"] is not None for entry in result.history)
    assert 0 <= result.test_f1_macro <= 1 and 0 <= result.test_f1_micro <= 1
    assert result.epoch_time_s > 0


@pytest.mark.parametrize("model", ["sage", "mlp", "gcn", "gat"])
def test_centralized_run(graph, model):
    store, _ = graph
    result = run_training(
        store_path=store.path,
        book_path=None,
        spec=spec({"mode": "centralized", **FAST}, {**SAGE, "name": model}),
    )
    check_result(result, 3)
    assert result.sync_time_s == 0 and result.training_ranks == 1
    assert result.history[-1]["train_loss"] < result.history[0]["train_loss"]


def test_centralized_multilabel_f1_is_sklearns_on_its_predictions(tmp_path, monkeypatch):
    """A trained multi-label model: every epoch's val micro-F1 and the test micro- and macro-F1
    it reports are sklearn's on the 0/1 predictions its evaluation counted (the two splits told
    apart by their sizes, 20 and 19 nodes)."""
    from gnnbench.train import evaluation

    store = community_store(tmp_path / "multi", num_nodes=130, multilabel=True)
    split = {len(ids): key for key, ids in store.split().items() if key != "train"}
    assert sorted(split) == [19, 20]
    counted: dict[str, list] = {"val": [], "test": []}

    def counting(prediction, target, num_classes):
        counted[split[len(target)]].append((prediction.numpy().copy(), target.numpy().copy()))
        return confusion_counts(prediction, target, num_classes)

    monkeypatch.setattr(evaluation, "confusion_counts", counting)
    result = run_training(
        store_path=store.path,
        book_path=None,
        spec=spec({"mode": "centralized", **FAST, "epochs": 2}),
    )
    check_result(result, 2)
    assert len(counted["val"]) == len(counted["test"]) == 2  # one evaluation per epoch
    val = [sklearn_f1(prediction, target)[0] for prediction, target in counted["val"]]
    assert [entry["val_f1_micro"] for entry in result.history] == pytest.approx(val, abs=1e-12)
    test = sklearn_f1(*counted["test"][result.best_epoch - 1])
    assert (result.test_f1_micro, result.test_f1_macro) == pytest.approx(test, abs=1e-12)
    assert 0 < result.test_f1_micro < 1  # neither nothing nor everything predicted right


@pytest.mark.distributed
@pytest.mark.parametrize("optimizer_state", ["local", "reset", "average"])
def test_model_avg_two_workers_matches_one_worker(graph, optimizer_state):
    """Each partition trains from the same averaged model with seeds of its own, so the run does
    not depend on which rank trains which partition (up to float rounding of thread counts); with
    averaged Adam moments, that holds only if the second all-reduce averages them over ranks."""
    store, book = graph
    train = {"mode": "model_avg", **FAST, "epochs": 4, "optimizer_state": optimizer_state}
    two = run_training(store_path=store.path, book_path=book, spec=spec(train, SAGE, 2, 2))
    assert RESULT_KEYS <= set(two.as_dict()) and two.training_ranks == 2 and two.sync_time_s > 0
    assert [e["val_f1_micro"] is not None for e in two.history] == [False, True, False, True]
    one = run_training(store_path=store.path, book_path=book, spec=spec(train, SAGE, 1, 2))
    losses = [[e["train_loss"] for e in run.history] for run in (one, two)]
    assert np.allclose(losses[0], losses[1], rtol=1e-3)


def test_optimizer_state_changes_the_run(graph):
    """local, reset and average train differently from the second round on (the first starts
    from fresh Adam states in all three)."""
    store, book = graph
    losses = {}
    for optimizer_state in ("local", "reset", "average"):
        train = {"mode": "model_avg", **FAST, "optimizer_state": optimizer_state}
        result = run_training(store_path=store.path, book_path=book, spec=spec(train))
        losses[optimizer_state] = [e["train_loss"] for e in result.history]
    assert losses["local"][0] == losses["reset"][0] == losses["average"][0]
    assert len({tuple(curve[1:]) for curve in losses.values()}) == 3


def test_epoch_record_fields_become_the_logged_metrics_of_their_names():
    """Each field of the epoch record is the metric of its name: the run's figures are
    TrainResult fields (logged under those names), train_loss the per-epoch curve; the slowest
    rank's mean time, the fewest trained nodes, the mean sync count, the loss per training node."""
    record = EpochRecord.zeros(3)
    record.epoch_time_s[:] = [1.0, 2.0, 6.0]
    record.compute_time_s[:] = [0.5, 1.0, 3.0]
    record.train_loss[:] = [4.0, 2.0, 1.0]
    record.sync_count[:] = [3.0, 0.0, 0.0]
    record.train_nodes_per_epoch[:] = [4.0, 4.0, 2.0]
    record.sync_time_s[:] = [0.5, 0.25, 0.0]
    figures, losses = record.run_figures(RankGroup(0, 1, torch.device("cpu")), total_train=4.0)
    fields = {field.name for field in dataclasses.fields(EpochRecord)}
    assert set(figures) == fields - {"train_loss"}
    assert set(figures) <= {field.name for field in dataclasses.fields(TrainResult)}
    assert losses.tolist() == [1.0, 0.5, 0.25]
    assert (figures["epoch_time_s"], figures["sync_count"]) == (3.0, 1.0)
    assert figures["compute_time_s"] == 1.5
    assert (figures["train_nodes_per_epoch"], figures["sync_time_s"]) == (2.0, 0.75)


def test_averaged_adam_moments_are_weighted_by_training_nodes():
    from types import SimpleNamespace

    from gnnbench.train.context import ModelState, TrainingContext
    from gnnbench.train.modes.model_avg import ModelAverage

    model = torch.nn.Linear(3, 2)
    optimizers = {index: torch.optim.Adam(model.parameters()) for index in range(3)}
    for scale, index in zip((1.0, -2.0), (0, 1), strict=True):  # the third never steps
        optimizers[index].zero_grad()
        (scale * model(torch.ones(4, 3)).sum()).backward()
        optimizers[index].step()
    before = [
        {key: optimizers[i].state[model.weight][key].clone() for key in ("exp_avg", "exp_avg_sq")}
        for i in (0, 1)
    ]
    partitions = SimpleNamespace(indices=[0, 1, 2], num_train={0: 1, 1: 3, 2: 0})
    context = TrainingContext(
        spec({"mode": "model_avg", "optimizer_state": "average"}),
        RankGroup(0, 1, torch.device("cpu")), partitions, source=None, multilabel=False,
        total_train=4.0, state=ModelState(model, optimizers, model.state_dict()),
    )  # fmt: skip
    ModelAverage(context).average_optimizer_states()
    for optimizer in optimizers.values():  # every partition, the one without training nodes too
        state = optimizer.state[model.weight]
        for key in ("exp_avg", "exp_avg_sq"):
            assert torch.allclose(state[key], (before[0][key] + 3 * before[1][key]) / 4)
        assert state["step"].device.type == "cpu" and float(state["step"]) == 1.0


def test_bad_optimizer_state_is_one_line():
    with pytest.raises(ConfigError, match="train.optimizer_state: expected one of local, reset"):
        spec({"mode": "model_avg", "optimizer_state": "shared"})


def test_model_avg_trains_on_a_book_without_halo(graph, tmp_path, monkeypatch):
    """partitioner.hops=0 (claim 5): each partition is its owned nodes and the edges among them;
    training runs on it and every training node is still trained once an epoch."""
    from gnnbench.partition.spec import PartitionSpec
    from gnnbench.partition.stage.runner import run_partition_stage

    store, with_halo = graph
    monkeypatch.setenv("GNNBENCH_HOME", str(tmp_path))
    book, _ = run_partition_stage(
        store, partitioner=PartitionSpec.defaults("hash", hops=0), p=2, seed=0
    )
    assert book.path != with_halo and book.meta["metrics"]["replication_factor"] == 1.0
    parts = [PartitionBook(book.path).load(i) for i in range(2)]
    assert all(part.num_owned == len(part.nodes) for part in parts)
    result = run_training(
        store_path=store.path, book_path=book.path, spec=spec({"mode": "model_avg", **FAST})
    )
    check_result(result, FAST["epochs"])
    assert result.train_nodes_per_epoch == len(store.split()["train"])


@pytest.mark.fault("config: more workers than partitions")
def test_more_workers_than_partitions_is_one_line(graph):
    """num_gpus=3 on a p=2 book is exactly the ConfigError 'num_gpus=3 is larger than p=2'; one
    fanout for a 2-layer model and lr=0 are ConfigErrors naming train.fanouts and train.lr. For
    centralized training the check accepts 8 workers with p=4."""
    store, book = graph
    with pytest.raises(ConfigError, match=r"^num_gpus=3 is larger than p=2$"):
        run_training(
            store_path=store.path,
            book_path=book,
            spec=spec({"mode": "model_avg", **FAST}, SAGE, 3, 1),
        )
    with pytest.raises(ConfigError, match="train.fanouts"):
        run_training(
            store_path=store.path,
            book_path=None,
            spec=spec({"mode": "centralized", "fanouts": [5]}),
        )
    with pytest.raises(ConfigError, match=r"^train.lr: expected a number > 0"):
        check_training_config(spec=spec({"mode": "model_avg", "lr": 0}, SAGE, 2), p=4)
    check_training_config(spec=spec({"mode": "centralized"}, SAGE, 8), p=4)  # workers unused


@pytest.mark.fault("processes: a worker raising during model averaging")
@pytest.mark.distributed
def test_failing_worker_fails_the_run_fast(graph, tmp_path):
    """With rank 1's partition unreadable, model-averaging training raises DataError 'worker 1
    failed: ... part-1: unreadable partition' within 30 s, rather than rank 0 waiting in a
    collective."""
    store, book = graph
    broken = tmp_path / "book"
    shutil.copytree(book, broken)
    (broken / "part-1" / "indptr.npy").unlink()  # rank 1 fails while rank 0 waits in a collective

    def hung(signum, frame):
        raise TimeoutError("run_training did not return within 60 s")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    started = time.monotonic()
    try:
        with pytest.raises(DataError, match=r"^worker 1 failed: .*part-1: unreadable partition"):
            run_training(
                store_path=store.path,
                book_path=broken,
                spec=spec({"mode": "model_avg", **FAST}, SAGE, 2, 1),
            )
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert time.monotonic() - started < 30


def skewed_book(store: GraphStore, path: Path, share: float) -> Path:
    """A p=2 book whose partition 0 owns `share` of the nodes (hence of the training nodes)."""
    import json

    from gnnbench.partition.stage.book import FORMAT_VERSION, manifest
    from gnnbench.partition.stage.gnn_ready import build_partitions

    owner = (np.random.default_rng(1).random(store.num_nodes) > share).astype(np.int32)
    path.mkdir()
    np.save(path / "owner.npy", owner)
    metrics = build_partitions(store, owner, 2, path)
    meta = {"format_version": FORMAT_VERSION, "p": 2, "metrics": metrics, "files": manifest(path)}
    (path / "meta.json").write_text(json.dumps(meta))
    return path


@pytest.mark.distributed
def test_grad_avg_two_workers(graph):
    store, book = graph
    train = {"mode": "grad_avg", **FAST}
    result = run_training(store_path=store.path, book_path=book, spec=spec(train, SAGE, 2, 1))
    check_result(result, 3)
    assert result.training_ranks == 2 and result.sync_time_s > 0
    train_nodes = len(store.split()["train"])
    assert result.train_nodes_per_epoch == train_nodes
    per_part = [len(PartitionBook(book).load(i).split["train"]) for i in range(2)]
    assert result.sync_count == max(-(-n // FAST["batch_size"]) for n in per_part)
    assert result.history[-1]["train_loss"] < result.history[0]["train_loss"]
    # the wall-clock epoch holds the compute and the syncs (sync_time_s is the run's total)
    assert result.epoch_time_s >= result.compute_time_s + result.sync_time_s / result.num_epochs


@pytest.mark.distributed
def test_grad_avg_skewed_partitions_use_every_training_node(graph, tmp_path):
    """One rank holds ~5x the other's batches: the run finishes and trains every node each epoch."""
    store, _ = graph
    book = skewed_book(store, tmp_path / "skewed", share=5 / 6)
    per_part = [len(PartitionBook(book).load(i).split["train"]) for i in range(2)]
    train = {"mode": "grad_avg", **FAST, "batch_size": 8}
    batches = [-(-n // 8) for n in per_part]
    assert max(batches) >= 4 * min(batches)
    result = run_training(store_path=store.path, book_path=book, spec=spec(train, SAGE, 2, 1))
    assert result.train_nodes_per_epoch == sum(per_part) == len(store.split()["train"])
    assert result.sync_count == max(batches)


@pytest.mark.fault("processes: a worker raising during gradient averaging")
@pytest.mark.distributed
def test_grad_avg_failing_worker_fails_fast(graph, tmp_path):
    """With rank 1's partition unreadable, gradient-averaging training raises DataError 'worker 1
    failed: ... part-1: unreadable partition' within 30 s."""
    store, book = graph
    broken = tmp_path / "book"
    shutil.copytree(book, broken)
    (broken / "part-1" / "indptr.npy").unlink()
    started = time.monotonic()
    with pytest.raises(DataError, match=r"^worker 1 failed: .*part-1: unreadable partition"):
        run_training(
            store_path=store.path,
            book_path=broken,
            spec=spec({"mode": "grad_avg", **FAST}, SAGE, 2, 1),
        )
    assert time.monotonic() - started < 30


def test_auto_p_follows_sdt_gnn_rule():
    from gnnbench.partition.num_parts import choose_num_parts

    gib = 2**30
    # M = 12 GiB, T = 2/3 M: 4 GiB per worker holds data.
    assert choose_num_parts(7 * gib, 2, 12 * gib, 2 / 3) == 2  # fits two workers' data shares
    assert choose_num_parts(8 * gib, 2, 12 * gib, 2 / 3) == 2  # exactly fits
    assert choose_num_parts(9 * gib, 2, 12 * gib, 2 / 3) == 3  # ceil(9 / 4)
    assert choose_num_parts(40 * gib, 4, 12 * gib, 2 / 3) == 10
    assert choose_num_parts(40 * gib, 4, 12 * gib, 0.0) == 4  # no compute reserve: 48 GiB > 40
    # train.prefetch_partitions: two partitions held at a time, so each is half the share
    assert choose_num_parts(9 * gib, 2, 12 * gib, 2 / 3, partitions_held=2) == 5  # ceil(18 / 4)
    assert choose_num_parts(8 * gib, 2, 12 * gib, 2 / 3, partitions_held=2) == 2  # no turns
    with pytest.raises(ConfigError, match="train.compute_mem_fraction"):
        choose_num_parts(1, 1, 1.0, 1.0)


@pytest.mark.parametrize(
    ("held_bytes", "chunk_bytes"),
    [(512 << 20, None), (1, None), (512 << 20, 1)],  # None: the module's own chunk bound
    ids=["one group", "a group per chunk", "a row per chunk"],
)
@pytest.mark.parametrize("model", ["sage", "gat", "mlp"])
@pytest.mark.parametrize("layers", [3, 1])
def test_layerwise_inference_is_the_model_on_full_neighbourhoods(
    graph, model, layers, held_bytes, chunk_bytes, monkeypatch
):
    """Evaluation runs each layer once over the nodes the targets need from it, in chunks; for
    SAGE, GAT and the MLP that is the same function as the model on each target's full K-hop
    neighbourhood. (The block GCN normalises by degrees inside each block, so its outputs depend
    on the chunking.) Three layers: two inner layers read rows of a restricted output; one layer:
    the feature rows feed the output layer. With a bound below one chunk's rows, every chunk of
    targets is a group of its own (bounded memory); with a chunk bound below one row's bytes (wide
    features), every chunk is one row."""
    from gnnbench.train import evaluation
    from gnnbench.train.forward import forward
    from gnnbench.train.spec import Job
    from gnnbench.train.worker import Worker

    monkeypatch.setattr(evaluation, "EVAL_HELD_BYTES", held_bytes)
    if chunk_bytes is not None:
        monkeypatch.setattr(evaluation, "EVAL_CHUNK_BYTES", chunk_bytes)

    store, _ = graph
    train = {"mode": "centralized", **FAST, "fanouts": [5] * layers, "eval_batch_size": 7}
    job_spec = spec(train, {**SAGE, "name": model, "layers": layers})
    job = Job(job_spec, store.path, None, store.feature_dim, store.num_classes, False, None)
    evaluator = Worker(job, 0, 1, torch.device("cpu")).evaluator
    model = evaluator.model
    model.eval()
    part = evaluator.partitions.get(0)
    targets = np.sort(np.random.default_rng(0).choice(store.num_nodes, 50, replace=False))
    if held_bytes == 1 and model.uses_graph:
        assert len(evaluator.target_groups(part, targets)) == -(-len(targets) // 7)
    with torch.no_grad():
        layerwise = evaluator.infer(part, targets)
        sampler = part.full_sampler if model.uses_graph else part.sampler
        batch = sampler.sample(targets, 0)
        x = torch.from_numpy(np.asarray(part.features[batch.n_id]))
        whole = forward(model, x, batch.blocks, torch.device("cpu"))
    assert layerwise.shape == (len(targets), store.num_classes)
    torch.testing.assert_close(layerwise, whole, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("held_bytes", [512 << 20, 1], ids=["one group", "a group per chunk"])
def test_evaluation_reads_each_groups_feature_rows_once(graph, held_bytes, monkeypatch):
    """Issue 46, item 4: a group of evaluation targets gathers its feature rows in one read,
    each row once (the first layer's chunks then take them from memory); before, every chunk
    gathered the rows of its own neighbourhood, so a row was read once per chunk holding it."""
    from gnnbench.data.features import CountedRows
    from gnnbench.train import evaluation
    from gnnbench.train.sampler import with_neighbours
    from gnnbench.train.spec import Job
    from gnnbench.train.worker import Worker

    monkeypatch.setattr(evaluation, "EVAL_HELD_BYTES", held_bytes)
    store, _ = graph
    train = {"mode": "centralized", **FAST, "fanouts": [5, 5], "eval_batch_size": 7}
    job = Job(spec(train), store.path, None, store.feature_dim, store.num_classes, False, None)
    evaluator = Worker(job, 0, 1, torch.device("cpu")).evaluator
    part = evaluator.partitions.get(0)
    part.features = counted = CountedRows(part.features, keep=True)
    reads = counted.reads
    targets = np.sort(np.random.default_rng(0).choice(store.num_nodes, 50, replace=False))
    groups = evaluator.target_groups(part, targets)
    with torch.no_grad():
        evaluator.infer(part, targets)
    graph_of = (part.hop_sampler.indptr, part.hop_sampler.indices)
    two_hops = [with_neighbours(*graph_of, with_neighbours(*graph_of, g)) for g in groups]
    assert len(reads) == len(groups) == (1 if held_bytes > 1 else -(-len(targets) // 7))
    for read, rows in zip(reads, two_hops, strict=True):
        assert len(read) == len(np.unique(read)) and set(read) == set(rows)


def test_evaluation_reads_script_measures_a_book(graph):
    """scripts/evaluation_reads.py's measurement on a small book: a cold and a warm evaluation,
    and the rows gathered, each partition's once (one group each)."""
    from gnnbench.experiments.evaluation_reads import measure

    store, book = graph
    figures = measure(store.path, book, [5, 5], eval_batch_size=7)
    assert figures.cold_s > 0 and figures.warm_s > 0
    assert figures.gathers == 2 and figures.rows_gathered == figures.rows_distinct > 0


@pytest.mark.fault("config: a torchrun sweep job needing another backend")
def test_torchrun_sweep_job_needing_another_backend_is_one_line(monkeypatch):
    """A torchrun sweep keeps its first job's process group: a later job that needs another
    backend fails on every rank alike, naming the key, instead of running on the wrong group."""
    from gnnbench.train import launch

    monkeypatch.setattr(launch.dist, "is_initialized", lambda: True)
    monkeypatch.setattr(launch.dist, "get_backend", lambda *args: "nccl")
    with pytest.raises(ConfigError, match="train.backend: this job needs gloo.*group is nccl"):
        launch.join_torchrun_group(spec({"mode": "grad_avg", "backend": "gloo"}))


def test_optimizer_state_is_model_avg_only():
    with pytest.raises(ConfigError, match="train.optimizer_state: only train=model_avg has one"):
        spec({"mode": "centralized", "optimizer_state": "average"})


@pytest.mark.parametrize(
    ("train", "loads_to_plan"),
    [
        ({"mode": "grad_avg", "batch_size": 7}, False),
        ({"mode": "grad_avg", "batches_per_epoch": 3}, False),
        ({"mode": "grad_avg", "batching": "cohesive", "batch_size": 7}, False),
        ({"mode": "grad_avg", "strategy": "full"}, False),
        ({"mode": "grad_avg", "strategy": "cluster"}, True),
    ],
)
def test_grad_avg_plans_without_loading_where_the_count_needs_no_graph(train, loads_to_plan):
    """grad_avg's ranks agree on the step count before training: mini-batches and the full batch
    are counted from each partition's training-node count (no load), and the count is what the
    plans hold; clusters are planned on the loaded partition."""
    from types import SimpleNamespace

    from gnnbench.train.batching import minibatch_plans
    from gnnbench.train.context import TrainingContext
    from gnnbench.train.modes.grad_avg import GradientAverage

    num_train = {0: 20, 2: 0, 4: 21}
    visited = []

    def in_turn(resident_first=False):
        visited.append(resident_first)
        return iter(())

    partitions = SimpleNamespace(
        indices=list(num_train), num_train=num_train, in_turn=in_turn, resident=None
    )
    spec = spec_from_conf(train)
    context = TrainingContext(spec, None, partitions, None, False, 41.0, None)
    specs, counts = GradientAverage(context).planned(epoch=1)
    assert bool(visited) == loads_to_plan
    if loads_to_plan:
        return
    assert specs == {}
    for index, n in num_train.items():
        if spec.strategy == "full":
            assert counts[index] == (1 if n else 0)
            continue
        size = 7 if "batch_size" in train else -(-n // 3) or 1
        chain = np.arange(n + 1)
        plans = minibatch_plans(chain, np.arange(n), np.arange(n), size,
                                spec.batching == "cohesive", np.random.default_rng(0))  # fmt: skip
        assert counts[index] == len(plans)


def test_no_logged_training_metric_shares_a_parameter_s_name():
    """Runs are read as one row of params and metrics where a metric wins over a param of the
    same name (the claims' frames): a metric named like a top-level key (num_gpus, p, seed)
    would shadow the job's value, with NaN in rows logged before the metric existed."""
    import dataclasses

    from gnnbench import schema
    from gnnbench.train.result import TrainResult

    metrics = {field.name for field in dataclasses.fields(TrainResult)}
    assert not metrics & set(schema.keys(schema.JobKeys))
