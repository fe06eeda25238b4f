"""Dataset sources end to end: real files in shared/datasets, small hand-written files, the generator.

Every store is checked for the on-disk invariants (undirected edges once each, no self-loops, ids in
range, degrees, split ids valid); every malformed input must give one DataError line naming the file.
"""

from __future__ import annotations

import gzip
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import yaml
from helpers.configured import dataset_config
from helpers.datasets import CORA, RAW_DIR, requires_dataset

from gnnbench.data.datasets import prepare_dataset, store_path
from gnnbench.data.sources import SOURCES
from gnnbench.data.store import GraphStore
from gnnbench.errors import ConfigError, DataError
from gnnbench.paths import CONF_DIR as PACKAGE_CONF

CONF_DIR = PACKAGE_CONF / "dataset"


def assert_canonical(store: GraphStore) -> None:
    """The GraphStore invariants every importer must produce."""
    edges = store.edges().astype(np.int64)
    assert (edges[:, 0] < edges[:, 1]).all(), "each undirected edge once (low, high), no self-loops"
    assert edges.min(initial=0) >= 0 and edges.max(initial=0) < store.num_nodes
    keys = edges[:, 0] * store.num_nodes + edges[:, 1]
    assert len(np.unique(keys)) == len(keys), "no duplicate edges"
    assert store.degree().sum() == 2 * store.num_edges
    split = store.split()
    for part, ids in split.items():
        assert ids.dtype == np.int64 and (
            len(ids) == 0 or 0 <= ids.min() <= ids.max() < store.num_nodes
        ), part
    assert not set(split["train"]) & set(split["val"]) and not set(split["train"]) & set(
        split["test"]
    )
    if store.has_features:
        assert store.features().shape == (store.num_nodes, store.feature_dim)
        assert store.features().dtype == np.float32
    labels = store.labels()
    if labels is not None and not store.multilabel:
        assert labels.dtype == np.int64 and labels.max() < store.num_classes


@pytest.mark.parametrize("config_file", sorted(CONF_DIR.glob("*.yaml")), ids=lambda p: p.stem)
def test_dataset_configs_name_a_registered_source(config_file):
    config = yaml.safe_load(config_file.read_text())
    assert config["source"] in SOURCES.names() and config["name"]


# --- real datasets -------------------------------------------------------------------------------
# name: (nodes, undirected edges, feature dim, classes, (train, val, test) or None for 70/15/15)
REAL = {
    "cora": (2708, 5278, 1433, 7, (140, 500, 1000)),
    "citeseer": (3327, 4552, 3703, 6, (120, 500, 1000)),
    "amazon_cs": (13752, 245861, 767, 10, None),
    "amazon_photo": (7650, 119081, 745, 8, None),
    "coauthor_cs": (18333, 81894, 6805, 15, None),
    "actor": (7600, 26659, 932, 5, (3648, 2432, 1520)),
    "chameleon": (2277, 31371, 2325, 5, (1092, 729, 456)),
    "squirrel": (5201, 198353, 2089, 5, (2496, 1664, 1041)),
    "tolokers": (11758, 519000, 10, 2, (5879, 2939, 2940)),
    "email_enron": (36692, 183831, 0, 0, None),
}


def _real(name: str):
    """The dataset name as a parameter marked with the raw file it reads."""
    path = dataset_config(name)["path"]
    if path == "planetoid":
        path = f"planetoid/ind.{name}.graph"
    return pytest.param(name, marks=requires_dataset(path))


@pytest.mark.parametrize("name", [_real(name) for name in sorted(REAL)])
def test_real_dataset_counts(name, gnnbench_home):
    nodes, edges, dim, classes, split_sizes = REAL[name]
    store = prepare_dataset(dataset_config(name))
    assert (store.num_nodes, store.num_edges, store.feature_dim, store.num_classes) == (
        nodes,
        edges,
        dim,
        classes,
    )
    assert_canonical(store)
    split = store.split()
    sizes = tuple(len(split[part]) for part in ("train", "val", "test"))
    if split_sizes is None:  # seeded 70/15/15 over all nodes
        assert sum(sizes) == nodes and sizes[0] == round(0.7 * nodes)
    else:
        assert sizes == split_sizes


@requires_dataset("npz/amazon_cs.npz")
def test_amazon_features_are_row_normalized(gnnbench_home):
    """normalize_features divides each row by its sum, as PyG's NormalizeFeatures does."""
    raw = np.load(RAW_DIR / "npz" / "amazon_cs.npz")
    attributes = sp.csr_matrix(
        (raw["attr_data"], raw["attr_indices"], raw["attr_indptr"]), shape=raw["attr_shape"]
    )
    store = prepare_dataset(dataset_config("amazon_cs"))
    features = np.asarray(store.features())
    sums = np.asarray(attributes.sum(axis=1)).ravel()
    expected = attributes.toarray() / np.maximum(sums, 1.0)[:, None]
    np.testing.assert_allclose(features, expected, rtol=1e-6)
    assert store.meta["feature_normalization"] == "row (L1)"


@requires_dataset(CORA, "planetoid/ind.citeseer.graph")
def test_planetoid_matches_kipf_loading(gnnbench_home):
    """Cora's class sizes, the test-row reordering, and Citeseer's padded isolated nodes."""
    from gnnbench.data.sources.planetoid import load_pickle

    cora = prepare_dataset(dataset_config("cora"))
    assert np.bincount(cora.labels()).tolist() == [351, 217, 418, 818, 426, 298, 180]
    test_index = np.loadtxt(RAW_DIR / "planetoid" / "ind.cora.test.index", dtype=np.int64)
    tx = load_pickle(RAW_DIR / "planetoid" / "ind.cora.tx").toarray()
    np.testing.assert_array_equal(cora.features()[test_index], tx)  # tx row i is node test_index[i]
    assert np.array_equal(cora.split()["train"], np.arange(140))

    citeseer = prepare_dataset(dataset_config("citeseer"))
    test_ids = np.loadtxt(RAW_DIR / "planetoid" / "ind.citeseer.test.index", dtype=np.int64)
    padded = np.setdiff1d(np.arange(test_ids.min(), test_ids.max() + 1), test_ids)
    assert len(padded) == 15
    assert not np.asarray(citeseer.features())[padded].any()
    assert (citeseer.labels()[padded] == 0).all()  # argmax of an all-zero row, as in PyG
    assert not np.isin(padded, np.concatenate(list(citeseer.split().values()))).any()


@requires_dataset("heterophilous/chameleon.npz")
def test_heterophilous_split_index(gnnbench_home):
    first = prepare_dataset(dataset_config("chameleon"))
    second = prepare_dataset(dataset_config("chameleon", split=3))
    assert not np.array_equal(first.split()["train"], second.split()["train"])
    with pytest.raises(ConfigError, match="dataset.split"):
        prepare_dataset(dataset_config("chameleon", split=10))


# --- METIS ---------------------------------------------------------------------------------------
@requires_dataset("walshaw/graphs/3elt.graph")
def test_metis_3elt_matches_header(gnnbench_home):
    path = RAW_DIR / "walshaw" / "graphs" / "3elt.graph"
    num_nodes, num_edges = map(int, path.read_text().split("\n", 1)[0].split()[:2])
    store = prepare_dataset({"name": "3elt", "source": "metis_graph", "path": str(path)})
    assert (store.num_nodes, store.num_edges) == (num_nodes, num_edges) == (4720, 13722)
    assert store.feature_dim == 0 and store.labels() is None
    assert_canonical(store)


# The same 4-vertex graph (edges 1-2, 1-3, 2-3, 3-4) in every fmt, weights differing per fmt.
METIS_FORMATS = {
    "0": "% comment\n4 4\n2 3\n1 3\n1 2 4\n3\n",
    "1": "4 4 1\n2 7 3 1\n1 7 3 2\n1 1 2 2 4 5\n3 5\n",
    "10": "4 4 10\n5 2 3\n6 1 3\n7 1 2 4\n8 3\n",
    "11": "4 4 11 2\n5 1 2 7 3 1\n6 1 1 7 3 2\n7 1 1 1 2 2 4 5\n8 1 3 5\n",
    "100": "4 4 100\n9 2 3\n9 1 3\n9 1 2 4\n9 3\n",
}


@pytest.mark.parametrize("fmt", sorted(METIS_FORMATS))
def test_metis_formats_skip_weights(fmt, tmp_path, gnnbench_home):
    path = tmp_path / f"g{fmt}.graph"
    path.write_text(METIS_FORMATS[fmt])
    store = prepare_dataset({"name": f"g{fmt}", "source": "metis_graph", "path": str(path)})
    assert store.num_nodes == 4
    assert sorted(map(tuple, store.edges().tolist())) == [(0, 1), (0, 2), (1, 2), (2, 3)]


def test_metis_isolated_vertex_is_an_empty_line(tmp_path, gnnbench_home):
    path = tmp_path / "iso.graph"
    path.write_text("3 1\n2\n1\n\n")
    store = prepare_dataset({"name": "iso", "source": "metis_graph", "path": str(path)})
    assert (store.num_nodes, store.num_edges) == (3, 1) and store.degree().tolist() == [1, 1, 0]


MALFORMED_METIS = {
    "neighbour out of range": ("3 2\n2\n1 5\n2\n", r"line 3: neighbour id 5 outside \[1, 3\]"),
    "neighbour zero": ("3 2\n2\n1 0\n2\n", r"line 3: neighbour id 0 outside"),
    "too few lines": ("4 2\n2\n1 3\n2\n", r"expected 4 adjacency lines \(header\), found 3"),
    "too many lines": ("2 1\n2\n1\n1\n", r"line 4: more adjacency lines than the 2"),
    "not an integer": ("3 2\n2\n1 x\n2\n", r"line 3: expected integers, found '1 x'"),
    "edge count": ("3 3\n2\n1 3\n2\n", r"header declares 3 edges"),
    "odd weights": ("2 1 1\n2 4\n1 4 7\n", r"line 3: expected .*pairs"),
    "bad header": ("3\n2\n", r"line 1: expected header"),
    "bad fmt": ("2 1 12\n2\n1\n", r"fmt must be 3 binary digits"),
    "no header": ("% only a comment\n", r"no header line"),
}


@pytest.mark.fault("bad input: a malformed METIS .graph file")
@pytest.mark.parametrize("case", sorted(MALFORMED_METIS))
def test_metis_malformed_is_one_line_error(case, tmp_path, gnnbench_home):
    """Each malformed .graph file is one DataError on a single line that starts with the file's
    path and states the fault; neither a store nor a temporary directory is left."""
    text, message = MALFORMED_METIS[case]
    path = tmp_path / "bad.graph"
    path.write_text(text)
    config = {"name": "bad", "source": "metis_graph", "path": str(path)}
    with pytest.raises(DataError, match=message) as error:
        prepare_dataset(config)
    assert str(error.value).startswith(str(path)) and "\n" not in str(error.value)
    assert not store_path(config).exists() and not list(store_path(config).parent.glob(".*tmp*"))


# --- edge lists ----------------------------------------------------------------------------------
def test_edgelist_csv_keeps_ids_with_num_nodes(tmp_path, gnnbench_home):
    path = tmp_path / "edges.csv"
    path.write_text("# comment\n0,1\n1,0\n\n2,2\n% other comment\n3,1\n1,3\n")
    store = prepare_dataset(
        {"name": "csv", "source": "edgelist", "path": str(path), "delimiter": ",", "num_nodes": 6}
    )
    assert store.num_nodes == 6 and store.edges().tolist() == [[0, 1], [1, 3]]
    assert_canonical(store)


def test_edgelist_relabels_without_num_nodes(tmp_path, gnnbench_home):
    path = tmp_path / "edges.txt"
    # A byte order mark is skipped; the extra integer column is ignored; no final newline.
    path.write_bytes(b"\xef\xbb\xbf10 30 1700000000\r\n30 20 1700000001")
    store = prepare_dataset({"name": "txt", "source": "edgelist", "path": str(path)})
    assert store.num_nodes == 3 and store.edges().tolist() == [[0, 2], [1, 2]]
    assert np.load(store.path / "original_ids.npy").tolist() == [10, 20, 30]


def test_edgelist_spans_several_blocks(tmp_path, gnnbench_home, monkeypatch):
    """Blocks cut mid-file: line numbers and edges must be the same as in one block."""
    import gnnbench.data.sources._io as io

    monkeypatch.setattr(io, "BLOCK_BYTES", 64)
    rng = np.random.default_rng(0)
    edges = rng.integers(0, 1000, size=(500, 2))
    path = tmp_path / "many.txt.gz"
    lines = "".join(f"{u}\t{v}\n" for u, v in edges) + "12 x\n"
    path.write_bytes(gzip.compress(lines.encode()))
    config = {"name": "many", "source": "edgelist", "path": str(path), "num_nodes": 1000}
    with pytest.raises(DataError, match=r"line 501: expected integers, found '12 x'"):
        prepare_dataset(config)
    path.write_bytes(gzip.compress(lines.rsplit("12 x", 1)[0].encode()))
    store = prepare_dataset(config)
    low, high = np.minimum(edges[:, 0], edges[:, 1]), np.maximum(edges[:, 0], edges[:, 1])
    expected = {(a, b) for a, b in zip(low.tolist(), high.tolist(), strict=True) if a != b}
    assert set(map(tuple, store.edges().tolist())) == expected


@pytest.mark.parametrize(
    ("text", "options", "message"),
    [
        ("0 1\n1 7\n", {"num_nodes": 5}, r"node id 7 out of range"),
        ("0 1\n1 a b\n", {}, r"line 2: expected integers, found '1 a b'"),
        ("0,1\n1,a\n", {"delimiter": ","}, r"line 2: expected integers, found '1,a'"),
        ("0 1\n1 2 3\n", {}, r"line 2: expected at least 2 integer node ids"),
        ("0\n1\n", {}, r"line 1: expected at least 2 integer node ids"),
        ("0 1.5\n", {}, r"line 1: expected integers"),
        ("0 -1\n", {}, r"negative node id -1"),
        ("0 1\n2 99999999999999999999999\n", {}, r"line 2: integer out of range for int64"),
        ("# only comments\n\n", {}, r"no edges found"),
    ],
)
@pytest.mark.fault("bad input: a malformed edge list")
def test_edgelist_malformed(text, options, message, tmp_path, gnnbench_home):
    """Each malformed edge list (a non-integer token, a line with the wrong number of ids, a
    negative, out-of-range or over-int64 id, no edges at all) is a DataError naming the file and
    the fault, with the line number where there is one."""
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(DataError, match=message) as error:
        prepare_dataset({"name": "bad", "source": "edgelist", "path": str(path), **options})
    assert str(path) in str(error.value)


@pytest.mark.fault("bad input: a truncated gzip edge list")
def test_edgelist_truncated_gzip(tmp_path, gnnbench_home):
    """A gzip edge list cut in half is a DataError that starts with the file's path and says
    'truncated or corrupt gzip'."""
    data = gzip.compress(b"".join(b"%d %d\n" % (i, i + 1) for i in range(20000)))
    path = tmp_path / "cut.txt.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(DataError, match=r"truncated or corrupt gzip") as error:
        prepare_dataset({"name": "cut", "source": "edgelist", "path": str(path)})
    assert str(error.value).startswith(str(path))


@pytest.mark.fault("bad input: a missing raw file, a bad delimiter")
def test_missing_raw_file_and_bad_delimiter(tmp_path, gnnbench_home):
    """A raw file that does not exist is a DataError saying 'not found'; a delimiter of ';;' is a
    ConfigError naming dataset.delimiter."""
    with pytest.raises(DataError, match="not found"):
        prepare_dataset({"name": "x", "source": "edgelist", "path": str(tmp_path / "nope.txt")})
    (tmp_path / "e.txt").write_text("0 1\n")
    with pytest.raises(ConfigError, match="dataset.delimiter"):
        prepare_dataset(
            {"name": "x", "source": "edgelist", "path": str(tmp_path / "e.txt"), "delimiter": ";;"}
        )


# --- npz and pickles: malformed ------------------------------------------------------------------
@pytest.mark.fault("bad input: an npz missing a key, or truncated")
def test_npz_missing_key_and_truncated_file(tmp_path, gnnbench_home):
    """An npz without adj_shape is a DataError naming the missing key (with it the graph
    imports); a truncated npz is a DataError naming the file, and a text file is one saying it is
    not an .npz (zip) archive."""
    path = tmp_path / "g.npz"
    np.savez(
        path, adj_data=np.ones(2), adj_indices=np.array([1, 0]), adj_indptr=np.array([0, 1, 2])
    )
    with pytest.raises(DataError, match=r"missing key 'adj_shape'"):
        prepare_dataset({"name": "g", "source": "npz", "path": str(path)})
    np.savez(
        path,
        adj_data=np.ones(2),
        adj_indices=np.array([1, 0]),
        adj_indptr=np.array([0, 1, 2]),
        adj_shape=np.array([2, 2]),
    )
    store = prepare_dataset({"name": "g", "source": "npz", "path": str(path)})
    assert (store.num_nodes, store.num_edges, store.feature_dim) == (2, 1, 0)
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(DataError, match=str(path)):
        prepare_dataset({"name": "g2", "source": "npz", "path": str(path)})
    path.write_text("0 1\n")
    with pytest.raises(DataError, match=r"not an \.npz \(zip\) archive"):
        prepare_dataset({"name": "g3", "source": "npz", "path": str(path)})


@pytest.mark.fault("bad input: a truncated or foreign Planetoid pickle")
@requires_dataset(CORA)
def test_planetoid_truncated_or_foreign_pickle(tmp_path, gnnbench_home):
    """A truncated ind.cora.graph is a DataError saying it is not a readable Planetoid pickle; a
    pickle holding another object (shutil.rmtree) is a DataError naming that unexpected object."""
    folder = tmp_path / "planetoid"
    shutil.copytree(RAW_DIR / "planetoid", folder)
    config = {"name": "cora", "source": "planetoid", "path": str(folder), "planetoid_name": "cora"}
    graph = folder / "ind.cora.graph"
    graph.chmod(0o644)
    graph.write_bytes(graph.read_bytes()[:1000])
    with pytest.raises(DataError, match=r"ind\.cora\.graph: not a readable Planetoid pickle"):
        prepare_dataset(config)
    graph.write_bytes(pickle.dumps(shutil.rmtree, protocol=2))  # no code may run while loading
    with pytest.raises(DataError, match=r"unexpected object shutil\.rmtree"):
        prepare_dataset(config)


# --- OGB -----------------------------------------------------------------------------------------
def write_gzip_csv(path: Path, rows: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as handle:
        handle.write("".join(row + "\n" for row in rows))


def write_ogb(root: Path, labels: list[str], features: bool) -> Path:
    """A 6-node ogbn_tiny in OGB's raw layout (edges include a reverse duplicate and a loop)."""
    directory = root / "ogbn_tiny"
    write_gzip_csv(
        directory / "raw" / "edge.csv.gz", ["0,1", "1,2", "2,3", "3,0", "4,5", "1,0", "5,5"]
    )
    write_gzip_csv(directory / "raw" / "num-node-list.csv.gz", ["6"])
    write_gzip_csv(directory / "raw" / "num-edge-list.csv.gz", ["7"])
    write_gzip_csv(directory / "raw" / "node-label.csv.gz", labels)
    if features:
        rows = [",".join(f"{node + col / 4}" for col in range(3)) for node in range(6)]
        write_gzip_csv(directory / "raw" / "node-feat.csv.gz", rows)
    for part, ids in (("train", ["0", "1", "3"]), ("valid", ["2"]), ("test", ["4", "5"])):
        write_gzip_csv(directory / "split" / "time" / f"{part}.csv.gz", ids)
    return directory


def test_ogb_single_label_with_nan(tmp_path, gnnbench_home):
    write_ogb(tmp_path, ["0", "1", "2", "nan", "1", "0"], features=True)
    store = prepare_dataset(
        {"name": "tiny", "source": "ogb", "path": str(tmp_path), "ogb_name": "ogbn-tiny"}
    )
    assert (store.num_nodes, store.num_edges, store.feature_dim, store.num_classes) == (6, 5, 3, 3)
    assert store.labels().tolist() == [0, 1, 2, -1, 1, 0]
    split = store.split()
    assert (
        split["train"].tolist() == [0, 1]
        and split["val"].tolist() == [2]
        and split["test"].tolist() == [4, 5]
    )
    np.testing.assert_allclose(store.features()[5], [5.0, 5.25, 5.5])
    assert_canonical(store)


def test_ogb_multilabel_without_features(tmp_path, gnnbench_home):
    labels = ["1,0,1", "0,0,0", "1,1,1", "0,1,0", "1,0,0", "0,0,1"]
    directory = write_ogb(tmp_path, labels, features=False)
    store = prepare_dataset({"name": "tiny", "source": "ogb", "path": str(directory)})
    assert store.multilabel and store.num_classes == 3 and store.feature_dim == 0
    assert store.labels().dtype == np.uint8 and store.labels()[2].tolist() == [1, 1, 1]
    assert len(store.split()["train"]) == 3  # multi-label: no node dropped


def test_ogb_binary_layout(tmp_path, gnnbench_home):
    raw = tmp_path / "ogbn_bin" / "raw"
    raw.mkdir(parents=True)
    edge_index = np.array([[0, 1, 2], [1, 2, 3]])
    np.savez(raw / "data.npz", edge_index=edge_index, num_nodes_list=np.array([4]),
             num_edges_list=np.array([3]), node_feat=np.eye(4, dtype=np.float16))  # fmt: skip
    np.savez(raw / "node-label.npz", node_label=np.array([[1.0], [np.nan], [0.0], [2.0]]))
    for part, ids in (("train", ["0", "1"]), ("valid", ["2"]), ("test", ["3"])):
        write_gzip_csv(tmp_path / "ogbn_bin" / "split" / "time" / f"{part}.csv.gz", ids)
    store = prepare_dataset(
        {"name": "bin", "source": "ogb", "path": str(tmp_path), "ogb_name": "ogbn-bin"}
    )
    assert (store.num_nodes, store.num_edges, store.feature_dim) == (4, 3, 4)
    assert store.labels().tolist() == [1, -1, 0, 2] and store.split()["train"].tolist() == [0]


@pytest.mark.fault("bad input: a malformed OGB raw directory")
def test_ogb_malformed(tmp_path, gnnbench_home):
    """An OGB raw directory with a label file one row short, an edge to a node out of range, or a
    corrupt edge.csv.gz is a DataError naming the file and the fault; a missing ogb_name
    directory is a DataError saying 'not found'."""
    directory = write_ogb(tmp_path, ["0", "1", "2", "0", "1"], features=False)  # one label short
    config = {"name": "tiny", "source": "ogb", "path": str(tmp_path), "ogb_name": "ogbn-tiny"}
    with pytest.raises(DataError, match=r"node-label\.csv\.gz: labels has 5 rows, expected 6"):
        prepare_dataset(config)
    write_gzip_csv(directory / "raw" / "edge.csv.gz", ["0,1", "1,9"])
    with pytest.raises(DataError, match=r"edge\.csv\.gz: node id 9 out of range"):
        prepare_dataset(config)
    (directory / "raw" / "edge.csv.gz").write_bytes(b"\x1f\x8b" + b"garbage" * 10)
    with pytest.raises(DataError, match=r"edge\.csv\.gz: truncated or corrupt gzip"):
        prepare_dataset(config)
    with pytest.raises(DataError, match=r"ogbn_other/raw: not found"):
        prepare_dataset({**config, "ogb_name": "ogbn-other"})


# --- synthetic -----------------------------------------------------------------------------------
SMALL_SYNTHETIC = {
    "name": "syn",
    "source": "synthetic",
    "num_nodes": 3000,
    "avg_degree": 8,
    "chunk_edges": 4096,
}


def test_synthetic_is_deterministic(tmp_path, monkeypatch):
    stores = []
    for run in ("a", "b"):
        monkeypatch.setenv("GNNBENCH_HOME", str(tmp_path / run))
        stores.append(prepare_dataset(SMALL_SYNTHETIC))
    for name in ("edges.bin", "feat.npy", "label.npy", "split.npz"):
        assert (stores[0].path / name).read_bytes() == (stores[1].path / name).read_bytes(), name
    assert stores[0].fingerprint == stores[1].fingerprint
    monkeypatch.setenv("GNNBENCH_HOME", str(tmp_path / "c"))
    other = prepare_dataset({**SMALL_SYNTHETIC, "seed": 1})
    assert other.fingerprint != stores[0].fingerprint


def test_synthetic_shapes_and_homophily(gnnbench_home):
    store = prepare_dataset(
        {**SMALL_SYNTHETIC, "num_classes": 5, "feature_dim": 16, "homophily": 0.9}
    )
    assert (store.feature_dim, store.num_classes, store.num_nodes) == (16, 5, 3000)
    assert 0.8 * 12000 < store.num_edges <= 12000
    assert_canonical(store)
    labels, edges = store.labels(), store.edges()
    assert np.bincount(labels).tolist() == [600] * 5
    assert (labels[edges[:, 0]] == labels[edges[:, 1]]).mean() > 0.85
    degree = store.degree()
    assert degree.max() > 8 * np.median(degree)  # heavy-tailed degrees


def test_synthetic_default_is_small_and_learnable(gnnbench_home):
    """The default config: ~20k nodes, ~100k edges; features alone clearly below a neighbour mean."""
    store = prepare_dataset(dataset_config("synthetic"))
    assert store.num_nodes == 20000 and 90_000 < store.num_edges <= 100_000
    features, labels = np.asarray(store.features()), store.labels()
    means = np.stack([features[labels == c].mean(axis=0) for c in range(store.num_classes)])
    feature_only = (np.argmax(features @ means.T, axis=1) == labels).mean()
    indptr, indices = store.csr()
    adjacency = sp.csr_matrix(
        (np.ones(len(indices)), indices, indptr), shape=(store.num_nodes,) * 2
    )
    degree = np.maximum(np.diff(indptr), 1)[:, None]
    smoothed = adjacency @ features / degree + features
    neighbourhood = (np.argmax(smoothed @ means.T, axis=1) == labels).mean()
    assert 0.45 < feature_only < 0.7 and neighbourhood > feature_only + 0.2


@pytest.mark.fault("config: impossible synthetic generator values")
def test_synthetic_rejects_bad_values(gnnbench_home):
    """dataset.homophily=1.5 for the synthetic generator is a ConfigError naming
    dataset.homophily."""
    with pytest.raises(ConfigError, match="dataset.homophily"):
        prepare_dataset({**SMALL_SYNTHETIC, "homophily": 1.5})


# --- GraphStore checks ---------------------------------------------------------------------------
@pytest.mark.fault("cache: truncated files of a prepared GraphStore")
def test_truncated_store_files_are_data_errors(gnnbench_home):
    """A prepared store whose edges.bin lost 4 bytes is a DataError on opening that gives the
    size edges.bin should have; a truncated feat.npy is a DataError ('truncated') when its layout
    is read."""
    store = prepare_dataset(SMALL_SYNTHETIC)
    edges = store.path / "edges.bin"
    edges.write_bytes(edges.read_bytes()[:-4])
    with pytest.raises(DataError, match=r"edges\.bin: expected .* bytes"):
        GraphStore(store.path)
    features = store.path / "feat.npy"
    features.write_bytes(features.read_bytes()[:-64])
    with pytest.raises(DataError, match=r"feat\.npy: truncated"):
        store.feature_layout()
