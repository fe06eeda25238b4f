"""Issue 15: the bounded-memory import gives byte for byte the store of the in-memory import."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.datasets import CORA, RAW_DIR, requires_dataset

from gnnbench.data import canonical
from gnnbench.data.datasets import dataset_key, prepare_dataset
from gnnbench.errors import ConfigError, DataError
from gnnbench.paths import CONF_DIR

needs_raw = requires_dataset(CORA, "npz/amazon_cs.npz", "snap/email-Enron.txt.gz")
TINY_BUDGET_GB = 1e-5  # ~10 kB: a hundred or more bucket files and many raw chunks
STORE_FILES = ("edges.bin", "degree.npy", "original_ids.npy", "label.npy", "split.npz")


def build(dataset: dict, home: Path, monkeypatch, budget_gb: float, external: bool):
    """Import `dataset` into its own GNNBENCH_HOME; `external` forbids the in-memory path."""
    monkeypatch.setenv("GNNBENCH_HOME", str(home))
    monkeypatch.setenv("GNNBENCH_RAW_DIR", str(RAW_DIR))
    if external:
        monkeypatch.setattr(canonical, "_in_memory", _refuse_in_memory)
    try:
        return prepare_dataset({**dataset, "import_memory_gb": budget_gb})
    finally:
        monkeypatch.undo()


def _refuse_in_memory(*args):
    raise AssertionError("the tiny budget must take the external path")


def assert_same_store(
    dataset: dict, tmp_path: Path, monkeypatch, budget_gb: float = TINY_BUDGET_GB
) -> None:
    in_memory = build(dataset, tmp_path / "memory", monkeypatch, 2.0, external=False)
    external = build(dataset, tmp_path / "external", monkeypatch, budget_gb, external=True)
    assert external.meta["fingerprint"] == in_memory.meta["fingerprint"]
    assert external.num_edges == in_memory.num_edges > 0
    for name in STORE_FILES:
        mine, theirs = in_memory.path / name, external.path / name
        assert mine.is_file() == theirs.is_file(), name
        if mine.is_file():
            assert mine.read_bytes() == theirs.read_bytes(), name


def messy_edge_list(path: Path, id_scale: int = 1) -> Path:
    """Random edges over 600 nodes with repeats, reversed copies and self-loops, ids × id_scale."""
    rng = np.random.default_rng(7)
    edges = rng.integers(0, 600, size=(12_000, 2))
    edges = np.concatenate([edges, edges[::3, ::-1], edges[::5], np.repeat(edges[:200, :1], 2, 1)])
    edges = edges[rng.permutation(len(edges))] * id_scale
    np.savetxt(path, edges, fmt="%d")
    return path


@pytest.mark.parametrize("fixed_num_nodes", [True, False], ids=["num_nodes", "relabelled"])
def test_external_import_is_byte_identical_on_a_messy_edge_list(
    fixed_num_nodes, tmp_path, monkeypatch
):
    scale = 1 if fixed_num_nodes else 1_000_000_007  # relabelling sees sparse 64-bit ids
    path = messy_edge_list(tmp_path / "messy.txt", scale)
    dataset = {"name": "messy", "source": "edgelist", "path": str(path)}
    if fixed_num_nodes:
        dataset["num_nodes"] = 600
    assert_same_store(dataset, tmp_path, monkeypatch)


@needs_raw
@pytest.mark.parametrize(
    "dataset",
    [
        {"name": "cora", "source": "planetoid", "path": "planetoid", "planetoid_name": "cora"},
        {"name": "amazon_cs", "source": "npz", "path": "npz/amazon_cs.npz"},
        {"name": "email_enron", "source": "edgelist", "path": "snap/email-Enron.txt.gz"},
    ],
    ids=lambda d: d["name"],
)
def test_external_import_is_byte_identical_on_real_graphs(dataset, tmp_path, monkeypatch):
    # cora: ~100 buckets at 10 kB; the larger two: ~30 buckets of ~1 MB each
    budget_gb = TINY_BUDGET_GB if dataset["name"] == "cora" else 1e-3
    assert_same_store(dataset, tmp_path, monkeypatch, budget_gb)


def test_import_memory_is_not_part_of_the_store_key():
    base = {"name": "g", "source": "synthetic"}
    assert dataset_key({**base, "import_memory_gb": 0.5}) == dataset_key(base)
    assert dataset_key({**base, "nonfinite": "error"}) == dataset_key(base)
    assert dataset_key({**base, "nonfinite": "zero"}) != dataset_key(base)


@pytest.mark.parametrize("value", [0, -1, "lots"])
def test_bad_import_memory_is_a_config_error(value, gnnbench_home):
    with pytest.raises(ConfigError, match="dataset.import_memory_gb: expected a positive size"):
        prepare_dataset({"name": "g", "source": "synthetic", "import_memory_gb": value})


# --- the import's own figures --------------------------------------------------------------------
class RecordingMlflow:
    """Stands in for the mlflow module: records what RunLogger logs."""

    def __init__(self):
        self.params: dict = {}
        self.metrics: dict = {}

    def log_params(self, params):
        self.params.update(params)

    def log_metrics(self, metrics):
        self.metrics.update(metrics)


def test_import_figures_are_in_meta_and_logged_as_metrics(tmp_path, gnnbench_home):
    from gnnbench.track.mlflow_run import RunLogger

    path = messy_edge_list(tmp_path / "messy.txt")
    store = prepare_dataset({"name": "messy", "source": "edgelist", "path": str(path)})
    meta = store.meta
    assert meta["import_time_s"] > 0 and meta["import_rss_mb"] > 0
    # the in-memory path holds at least the raw pairs (16 bytes per raw line) at its peak
    assert meta["import_peak_mb"] * 2**20 >= 16 * len(path.read_text().splitlines())
    assert not list(store.path.glob("*.memray"))
    mlflow = RecordingMlflow()
    RunLogger(mlflow, "run").log_dataset({**meta, "nonfinite_features": 3})
    assert mlflow.metrics == {
        "import_time_s": meta["import_time_s"],
        "import_peak_mb": meta["import_peak_mb"],
        "import_rss_mb": meta["import_rss_mb"],
        "nonfinite_features": 3.0,
    }
    assert mlflow.params["graph.num_edges"] == store.num_edges


# --- structure-only synthetic graphs at any size -------------------------------------------------
def test_structure_only_synthetic_streams_in_bounded_memory(gnnbench_home):
    """feature_dim=0: edges and labels only; the heap stays far below the O(E) raw edge array."""
    dataset = {
        "name": "dense",
        "source": "synthetic",
        "num_nodes": 2000,
        "avg_degree": 3000,  # 3 M raw edges: 48 MB as int64 pairs, ~190 MB in-memory dedup
        "feature_dim": 0,
        "chunk_edges": 1 << 16,
        "import_memory_gb": 4 / 1024,
    }
    prepare_dataset({**dataset, "num_nodes": 100, "avg_degree": 4})  # compiles numba outside
    store = prepare_dataset(dataset)
    assert store.feature_dim == 0 and not (store.path / "feat.npy").exists()
    assert len(store.labels()) == 2000 and store.num_classes == 8
    assert store.num_edges > 500_000  # of the 2000 * 1999 / 2 possible
    assert store.meta["import_peak_mb"] < 40, store.meta["import_peak_mb"]  # raw pairs alone: 48


def test_billion_experiment_composes_to_a_structure_only_billion_edge_graph():
    from hydra import compose, initialize_config_dir

    from gnnbench.data.sources.synthetic import SbmParams

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose("config", overrides=["experiment=billion"], return_hydra_config=True)
    params = SbmParams.from_config(cfg.dataset)
    assert params.num_raw_edges == 1_000_000_000 and params.feature_dim == 0
    assert cfg.p == 16 and cfg.train.mode == "none"
    partitioners = cfg.hydra.sweeper.params.partitioner.split(",")
    assert partitioners == ["spring", "hash", "ldg", "fennel", "dbh", "hdrf", "metis"]
    assert cfg.partitioner.memory_limit_gb == 16  # METIS must end out of memory, in one line


# --- OGB's binary layout, read member by member in blocks ----------------------------------------
OGB_EDGES = np.array([[0, 1], [1, 2], [2, 3], [3, 0], [4, 5], [1, 0], [5, 5], [2, 4], [6, 2]])
OGB_LABELS = [0.0, 1.0, 2.0, np.nan, 1.0, 0.0, 2.0]
OGB_SPLIT = {"train": [0, 1, 3], "valid": [2, 6], "test": [4, 5]}


def write_ogb_layouts(root: Path, save, fortran: bool) -> tuple[Path, Path]:
    """The same 7-node graph as OGB's CSV release and as its binary (data.npz) release."""
    import gzip

    features = (np.arange(7 * 3).reshape(7, 3) / 4).astype(np.float32)  # exact in text and binary

    def gz(path: Path, rows) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(path, "wt") as handle:
            handle.write("".join(f"{row}\n" for row in rows))

    csv, binary = root / "ogbn_csv", root / "ogbn_bin"
    gz(csv / "raw" / "edge.csv.gz", [f"{u},{v}" for u, v in OGB_EDGES])
    gz(csv / "raw" / "num-node-list.csv.gz", [7])
    gz(csv / "raw" / "node-feat.csv.gz", [",".join(str(x) for x in row) for row in features])
    gz(csv / "raw" / "node-label.csv.gz", ["nan" if np.isnan(x) else int(x) for x in OGB_LABELS])
    (binary / "raw").mkdir(parents=True)
    edge_index = np.asfortranarray(OGB_EDGES.T) if fortran else OGB_EDGES.T.copy()
    save(binary / "raw" / "data.npz", edge_index=edge_index, num_nodes_list=np.array([7]),
         num_edges_list=np.array([len(OGB_EDGES)]), node_feat=features.astype(np.float16))  # fmt: skip
    np.savez(binary / "raw" / "node-label.npz", node_label=np.array(OGB_LABELS)[:, None])
    for directory in (csv, binary):
        for part, ids in OGB_SPLIT.items():
            gz(directory / "split" / "time" / f"{part}.csv.gz", ids)
    return csv, binary


@pytest.mark.parametrize(
    "save, fortran",
    [(np.savez, False), (np.savez_compressed, False), (np.savez, True)],
    ids=["stored", "deflated", "fortran"],
)
def test_ogb_binary_layout_is_read_in_blocks(save, fortran, tmp_path, gnnbench_home, monkeypatch):
    from gnnbench.data import npz_stream
    from gnnbench.data.sources import ogb

    csv, binary = write_ogb_layouts(tmp_path, save, fortran)
    expected = prepare_dataset({"name": "csv", "source": "ogb", "path": str(csv)})

    class NoWholeDataNpz(ogb.NpzArrays):
        def __init__(self, path, expected):
            assert Path(path).name != "data.npz", "data.npz must be streamed, not loaded"
            super().__init__(path, expected)

    monkeypatch.setattr(ogb, "NpzArrays", NoWholeDataNpz)
    monkeypatch.setattr(ogb, "EDGE_CHUNK", 2)  # several edge blocks, a short last one
    monkeypatch.setattr(ogb, "row_chunk", lambda width: 3)
    monkeypatch.setattr(npz_stream, "BLOCK_BYTES", 5)  # the skip to the target row in steps
    store = prepare_dataset({"name": "bin", "source": "ogb", "path": str(binary)})
    assert store.fingerprint == expected.fingerprint
    assert store.edges().tolist() == expected.edges().tolist()
    np.testing.assert_array_equal(store.features(), expected.features())
    assert store.labels().tolist() == [0, 1, 2, -1, 1, 0, 2]


def test_ogb_binary_truncated_member_is_one_line(tmp_path, gnnbench_home):
    import zipfile

    _, binary = write_ogb_layouts(tmp_path, np.savez, False)
    data = binary / "raw" / "data.npz"
    with zipfile.ZipFile(data) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    with zipfile.ZipFile(data, "w") as archive:
        for name, payload in members.items():
            archive.writestr(name, payload[:-8] if name == "edge_index.npy" else payload)
    with pytest.raises(DataError, match=r"data\.npz: 'edge_index' is truncated"):
        prepare_dataset({"name": "bin", "source": "ogb", "path": str(binary)})
