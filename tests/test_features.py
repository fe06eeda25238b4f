"""Feature rows without copies: shared vs copied books, float16 storage, memory-mapped reads, and
the one-line failures of feature generation, the GNN-ready step and partition loading when disk or
memory runs out (nothing half-written)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from helpers.configured import dataset_config
from helpers.datasets import requires_dataset
from helpers.disk import assert_refused_for_disk, pretend_free

from gnnbench.data import features as features_module
from gnnbench.data.builder import seeded_split
from gnnbench.data.datasets import prepare_dataset
from gnnbench.data.features import FeatureRows
from gnnbench.errors import ConfigError, DataError
from gnnbench.partition.spec import PartitionSpec
from gnnbench.partition.stage.book import PartitionBook
from gnnbench.partition.stage.gnn_ready import build_partitions
from gnnbench.partition.stage.runner import run_partition_stage
from gnnbench.paths import CONF_DIR, REPO_ROOT
from gnnbench.process.atomic import atomic_directory
from gnnbench.process.peak_rss import PeakRss


def synthetic(**overrides) -> dict:
    """A small contextual DC-SBM config (gnnbench/conf/dataset/synthetic.yaml's keys, smaller)."""
    return {
        "name": "feat",
        "source": "synthetic",
        "num_nodes": 3000,
        "avg_degree": 8,
        "feature_dim": 24,
        **overrides,
    }


def book(store, feature_rows: str, p: int = 4) -> PartitionBook:
    spec = PartitionSpec.defaults("ldg", feature_rows=feature_rows)
    return run_partition_stage(store, partitioner=spec, p=p, seed=0)[0]


def all_rows(part) -> np.ndarray:
    return part.features[np.arange(len(part.features))]


def test_shared_and_copied_books_give_the_same_rows(gnnbench_home):
    """A shared book writes no feature file and reads the store's rows by global id: the same
    float32 rows, partition by partition, as the book that copies them."""
    store = prepare_dataset(synthetic())
    copy, shared = book(store, "copy"), book(store, "shared")
    assert copy.path != shared.path and shared.meta["feature_rows"] == "shared"
    assert (
        not any(shared.path.glob("part-*/feat.npy")) and (copy.path / "part-0/feat.npy").is_file()
    )
    store_rows = store.features()
    for i in range(copy.p):
        copied, referenced = copy.load(i), shared.load(i)
        assert referenced.features.shape == copied.features.shape == (len(copied.nodes), 24)
        rows = all_rows(referenced)
        assert rows.dtype == np.float32
        np.testing.assert_array_equal(rows, all_rows(copied))
        np.testing.assert_array_equal(rows, store_rows[copied.nodes])
        picked = np.array([len(rows) - 1, 0, 0])
        np.testing.assert_array_equal(referenced.features[picked], rows[picked])


def test_float16_storage_rounds_rows_once_and_halves_the_file(gnnbench_home):
    """dataset.feature_dtype=float16: another store (fingerprint, path) holding the float32
    rows to float16 precision, read back as float32, in partitions (copied or shared) too."""
    wide = prepare_dataset(synthetic())
    half = prepare_dataset(synthetic(feature_dtype="float16"))
    assert half.path != wide.path and half.fingerprint != wide.fingerprint
    assert half.meta["feature_dtype"] == "float16"
    assert np.load(half.path / "feat.npy", mmap_mode="r").dtype == np.float16
    header = 128
    assert (half.path / "feat.npy").stat().st_size - header == 3000 * 24 * 2
    exact, rounded = wide.features()[:], half.features()[:]
    assert rounded.dtype == np.float32 and not np.array_equal(exact, rounded)
    np.testing.assert_allclose(rounded, exact, rtol=2**-11, atol=2**-24)  # float16's half ulp
    for rows in ("copy", "shared"):
        part_book = book(half, rows, p=2)
        part = part_book.load(1)
        np.testing.assert_array_equal(all_rows(part), rounded[part.nodes])


def test_bad_feature_dtype_and_split_fractions_are_one_line(gnnbench_home):
    with pytest.raises(
        ConfigError, match=r"dataset.feature_dtype: expected one of float32, float16"
    ):
        prepare_dataset(synthetic(feature_dtype="int8"))
    with pytest.raises(ConfigError, match=r"dataset.split_fractions: expected three fractions"):
        prepare_dataset(synthetic(split_fractions=[0.9, 0.2, 0.1]))
    graphs = gnnbench_home / "graphs"
    assert not graphs.is_dir() or not any(graphs.iterdir())


def test_papers_split_fractions_leave_the_rest_unlabelled():
    """Papers100M-like shares: 1.1 / 0.1 / 0.2 % of the nodes, disjoint, the rest in no split;
    the default 70/15/15 still gives every node left over to the test set."""
    split = seeded_split(100_000, 0, (0.011, 0.001, 0.002))
    assert [len(split[key]) for key in ("train", "val", "test")] == [1100, 100, 200]
    assert len(np.unique(np.concatenate(list(split.values())))) == 1400
    default = seeded_split(1001, 0)
    assert sum(len(ids) for ids in default.values()) == 1001


def test_feature_rows_are_mapped_not_read(tmp_path, monkeypatch):
    """Opening a 96 MB feature file, or a partition sharing it, and gathering every row in random
    batches grows the resident size by about one mapped window (8 MB here), not by the file."""
    path = tmp_path / "feat.npy"
    rows = np.lib.format.open_memmap(path, mode="w+", dtype=np.float16, shape=(393216, 128))
    rows[::4096] = 1.0
    rows.flush()
    del rows
    file_mb = path.stat().st_size / 2**20
    monkeypatch.setattr(features_module, "WINDOW_BYTES", 8 << 20)
    order = np.random.default_rng(0).permutation(393216)
    with PeakRss() as rss:
        features = FeatureRows(path)
        shared = FeatureRows(path, global_ids=np.arange(393216)[::-1].copy())
        for batch in np.array_split(order, 96):
            rows, reversed_rows = features[batch], shared[batch]
    assert rows.dtype == np.float32 and rows.shape == (4096, 128) and len(features) == 393216
    np.testing.assert_array_equal(reversed_rows, features[393215 - batch])
    assert rss.reset, "clear_refs unavailable: the peak would be the process's lifetime peak"
    assert rss.growth_mb < file_mb / 2, (
        f"{rss.growth_mb:.0f} MB resident for a {file_mb:.0f} MB file"
    )


def test_sparse_gathers_read_rows_one_by_one_and_read_the_same_rows(tmp_path, monkeypatch):
    """A reader's first gather wanting few pages of a window reads each row by a pread of its own,
    on a descriptor advised POSIX_FADV_RANDOM (npy_file.NpyLayout), and, where the file is larger
    than half the memory, first asks for the rows' pages (POSIX_FADV_WILLNEED); a dense one
    maps its windows and does neither; all return exactly the file's rows."""
    from gnnbench.data import npy_file

    path = tmp_path / "feat.npy"
    expected = np.random.default_rng(0).standard_normal((50000, 37)).astype(np.float16)
    np.save(path, expected)
    read_one_by_one = []
    real = npy_file.NpyLayout.read_rows
    monkeypatch.setattr(
        npy_file.NpyLayout,
        "read_rows",
        lambda self, rows, handle: read_one_by_one.append(len(rows)) or real(self, rows, handle),
    )
    sparse = np.random.default_rng(1).choice(50000, 40, replace=False)
    advised = []
    fadvise = getattr(os, "posix_fadvise", None)

    def record(handle, offset, length, advice):
        advised.append(advice)
        fadvise(handle, offset, length, advice)

    if fadvise is not None:
        monkeypatch.setattr(os, "posix_fadvise", record)
        np.testing.assert_array_equal(
            FeatureRows(path)[sparse], expected[sparse].astype(np.float32)
        )
        assert os.POSIX_FADV_WILLNEED not in advised, (
            "a file the page cache can hold asked for its pages one by one"
        )
        assert os.POSIX_FADV_RANDOM in advised, "the preads' descriptor reads ahead"
        advised.clear()
    read_one_by_one.clear()
    monkeypatch.setattr(npy_file, "_physical_memory", lambda: 0)  # as if larger than RAM
    features = FeatureRows(path)
    np.testing.assert_array_equal(features[sparse], expected[sparse].astype(np.float32))
    if hasattr(os, "preadv"):
        assert read_one_by_one and sum(read_one_by_one) == 40, "40 rows of 3.7 MB were mapped"
    if fadvise is not None:  # one read-ahead request per page of the rows
        willneed = [advice for advice in advised if advice == os.POSIX_FADV_WILLNEED]
        assert 0 < len(willneed) <= 40
    read_one_by_one.clear()
    advised.clear()
    np.testing.assert_array_equal(features[:], expected.astype(np.float32))
    assert not read_one_by_one, "a full scan read its rows one by one"
    assert not advised, "a full scan asked for its pages one by one"


@pytest.mark.skipif(not hasattr(os, "preadv"), reason="no os.preadv: sparse rows are mapped")
def test_sparse_windows_go_the_way_measured_cheaper_and_try_the_other_now_and_then(
    tmp_path, monkeypatch
):
    """SparseReads: the first sparse window of a reader is read by pread, the second mapped
    (MADV_RANDOM), then each goes the way whose measured cost a row is lower, the other way
    every EXPLORE_EVERY-th window; when the cheaper way turns dearer (the cache changed), the
    reader follows. Every way returns the file's rows."""
    from gnnbench.data import npy_file

    path = tmp_path / "feat.npy"
    expected = np.random.default_rng(0).standard_normal((50000, 37)).astype(np.float16)
    np.save(path, expected)
    ways = []
    cost = {"pread": 1.0, "map": 4.0}  # seconds a call, set by the test, not the machine
    clock = [0.0]

    def timed(way, real):
        def read(self, *args, **kwargs):
            ways.append(way)
            clock[0] += cost[way]
            return real(self, *args, **kwargs)

        return read

    monkeypatch.setattr(npy_file.time, "perf_counter", lambda: clock[0])
    monkeypatch.setattr(
        npy_file.NpyLayout, "read_rows", timed("pread", npy_file.NpyLayout.read_rows)
    )
    monkeypatch.setattr(
        npy_file.NpyLayout, "random_window", timed("map", npy_file.NpyLayout.random_window)
    )
    features = FeatureRows(path)
    every = npy_file.SparseReads.EXPLORE_EVERY
    gathers = np.random.default_rng(1).choice(50000, (3 * every, 40))

    def read(count):
        for rows in gathers[:count]:
            np.testing.assert_array_equal(features[rows], expected[rows].astype(np.float32))

    read(every)
    assert ways[:2] == ["pread", "map"]
    assert ways[2:] == ["pread"] * (every - 3) + ["map"], "the dearer way went first"
    cost.update(pread=8.0, map=0.5)  # the cache warmed into large folios: maps turn cheap
    ways.clear()
    read(2 * every)
    assert ways.count("map") > 1.5 * every, f"still reading by pread: {ways.count('pread')}"
    assert ways[-every:].count("pread") == 1, "the cheaper way was not followed"
    assert features.sparse_reads.cost["map"] < features.sparse_reads.cost["pread"]


def test_the_sparse_reads_experiment_times_each_way_in_each_cache_state(tmp_path):
    """scripts/sparse_reads.py's measurement, small: a row a state, a time a way, and the way
    the measured choice settled on."""
    from gnnbench.experiments.sparse_reads import STATES, measure, table

    rows = measure(rows=40000, share=0.004, gathers=3, folder=tmp_path)
    assert [row["state"] for row in rows] == list(STATES)
    for row in rows:
        assert all(row[way] > 0 for way in ("map", "pread", "chosen")), row
        assert row["settled_on"] in ("map", "pread")
    assert table(rows, 40000, 0.004, 3).count("\n| ") == 1 + len(STATES)
    assert not list(tmp_path.iterdir()), "the experiment's file was left behind"


def test_a_short_read_of_a_sparse_row_is_one_line(tmp_path):
    """A file cut short after its header was read (another process truncated it): the row that
    cannot be read whole is named, not returned half-filled."""
    from gnnbench.data import npy_file
    from gnnbench.errors import DataError

    path = tmp_path / "feat.npy"
    np.save(path, np.ones((50000, 37), dtype=np.float16))
    layout = npy_file.NpyLayout.read(path)
    os.truncate(path, layout.offset + 1000 * layout.row_bytes)
    if not hasattr(os, "preadv"):
        pytest.skip("no os.preadv on this platform: sparse rows are mapped")
    with pytest.raises(DataError, match=r"feat.npy: short read of row 40000"):
        list(layout.iter_rows_of(np.array([3, 40000])))


@pytest.mark.fault("disk: too little free for the synthetic graph's features")
def test_feature_generation_refuses_a_full_disk_in_one_line(gnnbench_home, monkeypatch):
    """10 MB free for a graph whose rows alone need 20.5 MB: one DataError line naming the graphs
    directory, the bytes needed and the bytes free, before anything is generated; nothing left.
    The same graph in float16 passes with room."""
    pretend_free(monkeypatch, 10 << 20)
    config = synthetic(num_nodes=20000, feature_dim=256)  # 20.5 MB of float32 rows
    assert_refused_for_disk(config, gnnbench_home, "the synthetic graph", f"{10 << 20} free")
    pretend_free(monkeypatch, 1 << 40)
    assert prepare_dataset(synthetic(num_nodes=20000, feature_dim=256, feature_dtype="float16"))


@pytest.mark.fault("disk: a real ENOSPC while the features are written")
def test_a_real_full_disk_during_feature_generation(tmp_path, monkeypatch):
    """GNNBENCH_HOME on a 20 MB tmpfs and the free-space check fooled: the writes themselves
    fail, and the import still ends in one line with nothing left on the tmpfs."""
    home = tmp_path / "small_disk"
    home.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=20m", "tmpfs", str(home)])
    if mounted.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        monkeypatch.setenv("GNNBENCH_HOME", str(home))
        pretend_free(monkeypatch, 1 << 40)
        with pytest.raises(DataError, match="disk full") as raised:
            prepare_dataset(synthetic(num_nodes=40000, feature_dim=256))  # 41 MB of rows
        assert "\n" not in str(raised.value)
        assert not any((home / "graphs").iterdir())
    finally:
        subprocess.run(["umount", str(home)], check=True)


@pytest.mark.fault("disk: too little free for the GNN-ready step's feature copies")
def test_gnn_ready_refuses_a_full_disk_before_writing_rows(gnnbench_home, monkeypatch):
    """Copying RF x |V| x F x 4 bytes is checked, exactly, once the partitions' sizes are known;
    a shared book needs only the labels' rows and passes the same check."""
    store = prepare_dataset(synthetic())
    owner = np.arange(store.num_nodes, dtype=np.int32) % 4
    label_bytes = 8 * 3000 * 4  # at most RF = p = 4 label rows per node
    pretend_free(monkeypatch, 4 * 8 * store.num_edges + label_bytes)
    dest = gnnbench_home / "partitions" / "book"
    dest.parent.mkdir(parents=True)
    with pytest.raises(DataError) as raised:
        with atomic_directory(dest) as tmp:
            build_partitions(store, owner, 4, tmp, feature_rows="copy")
    message = str(raised.value)
    assert "\n" not in message and "feat.npy and label.npy rows of every partition" in message
    assert message.startswith(f"{dest.parent}: not enough disk space")
    assert not any(dest.parent.iterdir())
    with atomic_directory(dest) as tmp:
        build_partitions(store, owner, 4, tmp, feature_rows="shared")
    assert not (dest / "part-0" / "feat.npy").exists() and (dest / "part-0" / "label.npy").exists()


CAPPED = textwrap.dedent(
    """
    import json, resource, sys
    from pathlib import Path
    from gnnbench.errors import GnnbenchError

    def vm_bytes():
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024

    def cap(extra_mb):
        limit = vm_bytes() + extra_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    def report(work):
        try:
            work()
        except GnnbenchError as exc:
            print(json.dumps({"type": type(exc).__name__, "message": str(exc)}))
            return 0
        print(json.dumps({"type": "none", "message": ""}))
        return 0
    """
)


def run_capped(script: str) -> dict:
    """Run `script` (after CAPPED's helpers) in a fresh process; its last stdout line as JSON."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "MALLOC_ARENA_MAX": "2"}
    done = subprocess.run(
        [sys.executable, "-c", CAPPED + textwrap.dedent(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.fault("memory: RLIMIT_AS reached while the synthetic features are generated")
def test_feature_generation_under_a_memory_cap_fails_in_one_line(gnnbench_home):
    """The edges of 20 k nodes fit in 48 MB more; a 64 MB chunk of feature noise does not."""
    config = synthetic(num_nodes=20000, feature_dim=8192, avg_degree=4)
    result = run_capped(
        f"""
        from gnnbench.data.datasets import prepare_dataset
        prepare_dataset({synthetic(name="warm")!r})  # numba, memray: loaded before the cap
        cap(48)
        sys.exit(report(lambda: prepare_dataset({config!r})))
        """
    )
    assert result["type"] == "OutOfMemory", result
    assert (
        "\n" not in result["message"]
        and "out of memory importing dataset feat" in result["message"]
    )
    assert "MiB for an array" in result["message"]  # what it needed
    assert [path.name.split("-")[0] for path in (gnnbench_home / "graphs").iterdir()] == ["warm"]


@pytest.mark.fault("memory: RLIMIT_AS reached while a partition is loaded")
def test_partition_loading_under_a_memory_cap_fails_in_one_line(gnnbench_home):
    """A partition whose CSR needs more than the cap ends in one OutOfMemory line naming it;
    with room to spare the same load succeeds (the cap is what failed it)."""
    store = prepare_dataset(synthetic(num_nodes=60000, avg_degree=40, feature_dim=8))
    shared = book(store, "shared", p=2)
    indices_mb = (shared.path / "part-0" / "indices.npy").stat().st_size / 2**20
    assert indices_mb > 4
    script = """
        from gnnbench.partition.stage.book import PartitionBook
        book = PartitionBook({path!r})
        book.load(1)  # warm: the modules a load imports
        cap({extra})
        sys.exit(report(lambda: book.load(0)))
        """
    tight = run_capped(script.format(path=str(shared.path), extra=2))
    assert tight["type"] == "OutOfMemory", tight
    message = tight["message"]
    assert message.startswith(f"{shared.path / 'part-0'}: out of memory loading partition 0 (")
    assert "\n" not in message and "MiB for an array" in message  # what it needed
    roomy = run_capped(script.format(path=str(shared.path), extra=int(8 * indices_mb) + 64))
    assert roomy["type"] == "none", roomy


def trained(name: str, feature_dtype: str, feature_rows: str):
    from gnnbench.train.runner import run_training
    from gnnbench.train.spec import spec_from_conf

    store = prepare_dataset(dataset_config(name, feature_dtype=feature_dtype))
    part_book = book(store, feature_rows, p=4)
    spec = spec_from_conf({"mode": "model_avg"}, {}, num_gpus=2, sync_interval=1, seed=0)
    return run_training(store_path=store.path, book_path=part_book.path, spec=spec)


@pytest.mark.slow
@pytest.mark.distributed
@pytest.mark.parametrize(
    "name",
    [
        pytest.param("cora", marks=requires_dataset("planetoid/ind.cora.graph")),
        pytest.param("amazon_cs", marks=requires_dataset("npz/amazon_cs.npz")),
    ],
)
def test_copy_shared_and_float16_train_alike(name, gnnbench_home):
    """A seeded model_avg run (LDG, p=4, 2 workers, conf defaults): identical F1 and losses
    with the feature rows copied or shared; float16 storage within 0.005 test F1."""
    copy = trained(name, "float32", "copy")
    shared = trained(name, "float32", "shared")
    half = trained(name, "float16", "shared")
    losses = [[epoch["train_loss"] for epoch in run.history] for run in (copy, shared, half)]
    assert (shared.test_f1_micro, shared.val_f1_micro) == (copy.test_f1_micro, copy.val_f1_micro)
    assert losses[1] == losses[0]
    assert abs(half.test_f1_micro - copy.test_f1_micro) <= 0.005, (half, copy)
    print(f"{name}: test F1 {copy.test_f1_micro:.4f} (float32), {half.test_f1_micro:.4f} (float16)")


def test_papers_scale_composes_to_a_papers100m_shaped_job():
    """100 M nodes, 1e9 raw edges, 128 float16 features, 172 classes, Papers100M's split, shared
    books; the import's up-front disk check asks for the 50.4 GB README states."""
    from hydra import compose, initialize_config_dir

    from gnnbench.data.sources.synthetic import SbmParams, disk_bytes
    from gnnbench.data.spec import DataSpec

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose("config", overrides=["experiment=papers_scale"], return_hydra_config=True)
    DataSpec.from_config(cfg.dataset)
    params = SbmParams.from_config(cfg.dataset)
    assert params.num_raw_edges == 1_000_000_000 and params.num_nodes == 100_000_000
    assert (params.feature_dim, params.num_classes) == (128, 172)
    assert cfg.dataset.feature_dtype == "float16" and list(cfg.dataset.split_fractions) == [
        0.011,
        0.001,
        0.002,
    ]
    assert PartitionSpec.from_config(cfg.partitioner).feature_rows == "shared"
    assert (cfg.p, cfg.num_gpus, cfg.train.mode, cfg.train.epochs) == (16, 2, "model_avg", 1)
    assert (cfg.model.name, cfg.model.layers, list(cfg.train.fanouts)) == ("sage", 2, [15, 10])
    assert cfg.hydra.sweeper.params.partitioner.split(",") == ["spring", "ldg"]
    # 48 B per raw edge (raw edges and bucket files) + 24 B per node (degree, label, split)
    assert disk_bytes(params, np.dtype(np.float16)) == 50_400_000_000


def test_the_new_keys_at_their_older_values_keep_run_keys():
    """dataset.feature_dtype=float32, the 70/15/15 split and copied rows are what every run
    before these keys computed: such a job keeps its run key; float16 or shared rows do not."""
    from helpers.configured import BASE

    from gnnbench.identity import run_key

    older = {**BASE, "train": {"mode": "model_avg"}}
    dataset = {"name": "cora", "feature_dtype": "float32", "split_fractions": [0.70, 0.15, 0.15]}
    newer = {**older, "dataset": dataset, "partitioner": {"name": "spring", "feature_rows": "copy"}}
    assert run_key(newer) == run_key(older)
    for section, key, value in (
        ("dataset", "feature_dtype", "float16"),
        ("dataset", "split_fractions", [0.011, 0.001, 0.002]),
        ("partitioner", "feature_rows", "shared"),
    ):
        changed = {**newer, section: {**newer[section], key: value}}
        assert run_key(changed) != run_key(older), key
