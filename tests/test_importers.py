"""Importers for files users bring: CSV edge lists with headers, node feature/label files, MATLAB
.mat graphs, pickled npz files, a missing dataset.path. Every input is a small file written here;
every failure must be one gnnbench error line naming the file or key."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from helpers.cli import gnnbench

from gnnbench.data.datasets import prepare_dataset
from gnnbench.data.store import GraphStore
from gnnbench.errors import ConfigError, DataError

RING = [(0, 1), (1, 2), (2, 3), (3, 0), (2, 4)]


def edgelist(path: Path, **options) -> GraphStore:
    return prepare_dataset({"name": "user", "source": "edgelist", "path": str(path), **options})


def write_edges(path: Path, header: str | None, delimiter: str, edges=RING) -> Path:
    lines = ([header] if header else []) + [f"{a}{delimiter}{b}" for a, b in edges]
    text = "\n".join(lines) + "\n"
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def edge_set(store: GraphStore) -> set[tuple[int, int]]:
    return {(int(a), int(b)) for a, b in store.edges()}


RING_SET = {(min(a, b), max(a, b)) for a, b in RING}


# --- 1. CSV / TSV edge lists ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "header", "delimiter"),
    [
        ("edges.csv", "id_1,id_2", ","),
        ("edges.csv.gz", "id_1,id_2", ","),
        ("edges.csv", None, ","),
        ("edges.tsv", "source\ttarget", "\t"),
        ("edges.txt", '"from" "to"', " "),
    ],
)
def test_delimiter_follows_the_suffix_and_a_header_is_skipped(
    gnnbench_home, tmp_path, name, header, delimiter
):
    store = edgelist(write_edges(tmp_path / name, header, delimiter))
    assert store.num_nodes == 5 and edge_set(store) == RING_SET


@pytest.mark.parametrize(("word", "char"), [("comma", ","), ("semicolon", ";"), ("tab", "\t")])
def test_delimiter_by_name(gnnbench_home, tmp_path, word, char):
    path = write_edges(tmp_path / "edges.dat", "a b".replace(" ", char), char)
    assert edge_set(edgelist(path, delimiter=word)) == RING_SET


@pytest.mark.fault("bad input: a non-numeric token in a CSV edge list")
def test_non_numeric_token_after_the_first_line_names_its_line(gnnbench_home, tmp_path):
    """A non-numeric token after the header line is a DataError naming the file, the line number
    and the line's text."""
    path = tmp_path / "edges.csv"
    path.write_text("id_1,id_2\n0,1\nx,2\n")
    with pytest.raises(DataError, match=r"edges\.csv: line 3: expected integers, found 'x,2'"):
        edgelist(path)


@pytest.mark.fault("bad input: a second header line in a CSV edge list")
def test_a_second_header_line_is_an_error(gnnbench_home, tmp_path):
    """Only one header line is skipped: a second one is a DataError at its line ('line 3:
    expected integers')."""
    path = tmp_path / "edges.csv"
    path.write_text("# exported\nid_1,id_2\nfrom,to\n0,1\n")
    with pytest.raises(DataError, match=r"line 3: expected integers"):
        edgelist(path)


@pytest.mark.fault("config: an unknown delimiter name")
def test_unknown_delimiter_name_is_a_config_error(gnnbench_home, tmp_path):
    """delimiter=pipes is a ConfigError on dataset.delimiter listing the names it accepts."""
    path = write_edges(tmp_path / "edges.csv", None, ",")
    with pytest.raises(ConfigError, match=r"dataset\.delimiter: expected one of comma, tab"):
        edgelist(path, delimiter="pipes")


# --- 3. node feature and label files beside an edge list -----------------------------------------
def musae(tmp_path: Path) -> dict:
    """A MUSAE-like trio: CSV edges with header, JSON bag of features, target CSV with text."""
    edges = write_edges(tmp_path / "edges.csv", "id_1,id_2", ",")
    features = {"0": [0, 3], "1": [1], "2": [], "3": [2, 2, 5], "4": [1], "6": [0]}
    (tmp_path / "features.json").write_text(json.dumps(features))
    targets = "id,name,ml_target\n" + "".join(
        f"{i},user#{i},{'web' if i % 2 else 'ml'}\n" for i in range(7)
    )
    (tmp_path / "target.csv").write_text(targets)
    return {
        "path": str(edges),
        "features_path": str(tmp_path / "features.json"),
        "labels_path": str(tmp_path / "target.csv"),
        "labels_column": "ml_target",
    }


def test_json_features_and_csv_labels_keep_the_edge_list_ids(gnnbench_home, tmp_path):
    store = edgelist(**musae(tmp_path))
    # node 5 appears in no file but node 6 (features, labels) does: ids kept, 7 nodes
    assert store.num_nodes == 7 and edge_set(store) == RING_SET
    features = store.features()
    assert features.shape == (7, 6)
    np.testing.assert_array_equal(features[3], [0, 0, 1, 0, 0, 1])  # feature 2 listed twice
    np.testing.assert_array_equal(features[5], np.zeros(6))
    np.testing.assert_array_equal(features[6], [1, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(store.labels(), [0, 1, 0, 1, 0, 1, 0])  # ml → 0, web → 1
    assert store.meta["class_names"] == ["ml", "web"]


def test_label_column_by_index_and_dense_csv_features(gnnbench_home, tmp_path):
    edges = write_edges(tmp_path / "edges.csv", "id_1,id_2", ",")
    (tmp_path / "x.csv").write_text(
        "id,a,b\n" + "".join(f"{i},{i}.5,{-i}\n" for i in (4, 0, 1, 2, 3))
    )
    (tmp_path / "y.tsv").write_text("".join(f"{i}\t{i % 3}\t9\n" for i in range(5)))
    store = edgelist(
        edges,
        features_path=str(tmp_path / "x.csv"),
        labels_path=str(tmp_path / "y.tsv"),
        labels_column=1,
    )
    np.testing.assert_array_equal(store.features()[:, 0], [0.5, 1.5, 2.5, 3.5, 4.5])
    np.testing.assert_array_equal(store.labels(), [0, 1, 2, 0, 1])


@pytest.mark.fault("bad input: a feature file with the wrong row count")
def test_npy_features_row_count_must_match_the_nodes(gnnbench_home, tmp_path):
    """A 6-row .npy feature file for a 5-node edge list adds node 5 as isolated; with num_nodes=9
    it is a DataError naming the file and both counts."""
    edges = write_edges(tmp_path / "edges.csv", None, ",")
    np.save(tmp_path / "x.npy", np.ones((6, 3), dtype=np.float32))
    store = edgelist(edges, features_path=str(tmp_path / "x.npy"))
    assert store.num_nodes == 6 and store.feature_dim == 3  # row 5: an isolated node
    with pytest.raises(DataError, match=r"x\.npy: 6 feature rows, but the graph has 9 nodes"):
        edgelist(edges, features_path=str(tmp_path / "x.npy"), num_nodes=9)


@pytest.mark.fault("bad input: a label file missing a node")
def test_label_file_missing_a_node_is_an_error(gnnbench_home, tmp_path):
    """A label file without a row for node 5 is a DataError naming the file, how many nodes have
    labels and the node that has none."""
    config = musae(tmp_path)
    (tmp_path / "target.csv").write_text("id,target\n0,1\n1,0\n2,1\n3,0\n4,1\n6,0\n")
    config.pop("labels_column")
    with pytest.raises(DataError, match=r"target\.csv: labels for 6 of 7 nodes.*node 5 has none"):
        edgelist(**config)


@pytest.mark.fault("bad input: an ambiguous label file")
def test_label_file_with_many_columns_needs_labels_column(gnnbench_home, tmp_path):
    """A label file with three columns and no labels_column is a ConfigError on labels_column
    listing the columns."""
    config = musae(tmp_path)
    config.pop("labels_column")
    with pytest.raises(ConfigError, match=r"labels_column: .*3 columns \(id, name, ml_target\)"):
        edgelist(**config)


@pytest.mark.fault("bad input: a node twice in a feature file")
def test_duplicate_node_in_a_feature_file_is_an_error(gnnbench_home, tmp_path):
    """A node id listed twice in a feature file is a DataError naming the file and the id."""
    edges = write_edges(tmp_path / "edges.csv", None, ",")
    (tmp_path / "x.csv").write_text("0,1\n1,1\n1,2\n")
    with pytest.raises(DataError, match=r"x\.csv: node id 1 appears twice"):
        edgelist(edges, features_path=str(tmp_path / "x.csv"))


@pytest.mark.fault("bad input: a node file id beyond the graph")
def test_node_file_id_beyond_num_nodes_is_an_error(gnnbench_home, tmp_path):
    """A feature file holding node id 6 with num_nodes=6 is a DataError naming the file and the
    out-of-range id."""
    config = musae(tmp_path)
    with pytest.raises(DataError, match=r"features\.json: node id 6 out of range"):
        edgelist(**config, num_nodes=6)


@pytest.mark.fault("config: an unknown feature file kind")
def test_unknown_feature_file_kind_is_a_config_error(gnnbench_home, tmp_path):
    """A features_path with an unsupported suffix (.parquet) is a ConfigError naming the file and
    listing the suffixes accepted."""
    edges = write_edges(tmp_path / "edges.csv", None, ",")
    (tmp_path / "x.parquet").write_bytes(b"PAR1")
    with pytest.raises(ConfigError, match=r"features_path: .*x\.parquet: expected one of \.json"):
        edgelist(edges, features_path=str(tmp_path / "x.parquet"))


# --- 2. MATLAB .mat ------------------------------------------------------------------------------
def blogcatalog_like(path: Path, num_nodes: int = 60, classes: int = 4) -> Path:
    """Sparse `network`, sparse 0/1 multi-label `group`, dense `features` (BlogCatalog's layout
    plus features, so the graph can train)."""
    rng = np.random.default_rng(0)
    adjacency = sp.random(num_nodes, num_nodes, density=0.08, random_state=1, format="csc")
    adjacency.data[:] = 1
    group = sp.csc_matrix((rng.random((num_nodes, classes)) < 0.3).astype(np.float64))
    features = rng.random((num_nodes, 8))
    scipy.io.savemat(path, {"network": adjacency, "group": group, "features": features})
    return path


def mat(path: Path, **options) -> GraphStore:
    return prepare_dataset({"name": "user_mat", "source": "mat", "path": str(path), **options})


def test_mat_blogcatalog_like_is_multilabel_with_features(gnnbench_home, tmp_path):
    path = blogcatalog_like(tmp_path / "blog.mat")
    store = mat(path, labels_key="group", features_key="features")
    raw = scipy.io.loadmat(path)
    adjacency = sp.coo_matrix(raw["network"])
    expected = {
        (min(a, b), max(a, b)) for a, b in zip(adjacency.row, adjacency.col, strict=True) if a != b
    }
    assert store.num_nodes == 60 and edge_set(store) == expected
    assert store.multilabel and store.num_classes == 4
    np.testing.assert_array_equal(store.labels(), raw["group"].toarray())
    np.testing.assert_allclose(store.features(), raw["features"].astype(np.float32))
    assert store.meta["adjacency_key"] == "network"


def facebook_like(path: Path, num_nodes: int = 30) -> Path:
    """Sparse `A` and a dense (N, 7) `local_info` table, as in Facebook100."""
    adjacency = sp.random(num_nodes, num_nodes, density=0.1, random_state=2, format="csc")
    adjacency.data[:] = 1
    info = np.stack([np.arange(num_nodes) % k + 1 for k in (2, 3, 5, 4, 6, 7, 3)], axis=1)
    scipy.io.savemat(path, {"A": adjacency, "local_info": info.astype(np.float64)})
    return path


def test_mat_table_labels_use_labels_column(gnnbench_home, tmp_path):
    store = mat(facebook_like(tmp_path / "fb.mat"), labels_key="local_info", labels_column=1)
    assert not store.multilabel and store.num_nodes == 30 and not store.has_features
    assert set(np.unique(store.labels())) == {0, 1, 2}


def test_mat_labels_one_to_k_give_k_classes(gnnbench_home, tmp_path):
    """Column 1 holds 1..3 (MATLAB-style, no class 0): three classes, ids 0..2."""
    store = mat(facebook_like(tmp_path / "fb.mat"), labels_key="local_info", labels_column=1)
    assert store.num_classes == 3
    np.testing.assert_array_equal(store.labels(), np.arange(30) % 3)


@pytest.mark.fault("config: a .mat label table without labels_column")
def test_mat_table_labels_without_column_is_a_config_error(gnnbench_home, tmp_path):
    """labels_key naming a many-column table (local_info) without labels_column is a ConfigError
    on labels_column naming the key and the file."""
    with pytest.raises(ConfigError, match=r"labels_column: 'local_info' of .*fb\.mat is a"):
        mat(facebook_like(tmp_path / "fb.mat"), labels_key="local_info")


@pytest.mark.fault("config: a .mat labels_column out of range")
def test_mat_labels_column_out_of_range_is_a_config_error(gnnbench_home, tmp_path):
    """labels_column 7 or 'gender' for a 7-column table is a ConfigError giving the valid columns
    0..6."""
    path = facebook_like(tmp_path / "fb.mat")
    for column in (7, "gender"):
        with pytest.raises(ConfigError, match=r"labels_column: 'local_info' .* columns 0\.\.6"):
            mat(path, labels_key="local_info", labels_column=column)


@pytest.mark.fault("bad input: a .mat with several square matrices")
def test_mat_ambiguous_adjacency_names_the_keys(gnnbench_home, tmp_path):
    """A .mat with two square matrices and no adjacency_key is a ConfigError listing them and the
    other keys with their shapes; with adjacency_key=A the file imports."""
    square = sp.csc_matrix(np.roll(np.identity(5), 1, axis=1))  # a 5-cycle
    scipy.io.savemat(tmp_path / "two.mat", {"A": square, "B": square, "y": np.arange(5)})
    with pytest.raises(ConfigError, match=r"adjacency_key: .*two\.mat has A, B square .*y \(1x5\)"):
        mat(tmp_path / "two.mat")
    assert mat(tmp_path / "two.mat", adjacency_key="A").num_nodes == 5


@pytest.mark.fault("bad input: a .mat without the named key")
def test_mat_missing_key_names_the_keys_found(gnnbench_home, tmp_path):
    """A labels_key the .mat does not hold is a ConfigError naming the file, the key and the keys
    found."""
    path = blogcatalog_like(tmp_path / "blog.mat")
    with pytest.raises(ConfigError, match=r"labels_key: .*blog\.mat has no key 'labels' \(found"):
        mat(path, labels_key="labels")


@pytest.mark.fault("bad input: a MATLAB v7.3 (HDF5) file")
def test_mat_v73_file_says_to_convert(gnnbench_home, tmp_path):
    """A MATLAB v7.3 (HDF5) file is a DataError naming the file and pointing to a save with
    '-v7'."""
    # the 128-byte MATLAB header of a v7.3 file: text, subsystem offset, version 0x0200, 'IM'
    header = b"MATLAB 7.3 MAT-file, Platform: GLNXA64, HDF5 schema 1.00 .".ljust(116)
    (tmp_path / "big.mat").write_bytes(header + bytes(8) + b"\x00\x02IM" + bytes(512))
    with pytest.raises(DataError, match=r"big\.mat: MATLAB v7\.3 \(HDF5\) file.*'-v7'"):
        mat(tmp_path / "big.mat")


@pytest.mark.fault("bad input: a file that is not a .mat")
def test_not_a_mat_file_is_one_error(gnnbench_home, tmp_path):
    """A text file named .mat is a DataError naming it as not a readable MATLAB .mat file."""
    (tmp_path / "edges.mat").write_text("0 1\n1 2\n")
    with pytest.raises(DataError, match=r"edges\.mat: not a readable MATLAB \.mat file"):
        mat(tmp_path / "edges.mat")


@pytest.mark.slow
def test_mat_trains_end_to_end(gnnbench_home, tmp_path):
    path = blogcatalog_like(tmp_path / "blog.mat")
    completed = gnnbench(
        tmp_path, "dataset=mat", f"dataset.path={path}", "dataset.labels_key=group",
        "dataset.features_key=features", "train=centralized", "train.epochs=1",
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-2000:]
    log = completed.stdout + completed.stderr  # Hydra's job log goes to stdout
    assert "data: mat, 60 nodes" in log
    assert re.search(r"train: centralized test micro-F1=\d", log)


# --- 4. pickled npz ------------------------------------------------------------------------------
@pytest.mark.fault("bad input: an npz of pickled scipy matrices")
def test_pickled_npz_error_gives_a_working_conversion(gnnbench_home, tmp_path):
    """An npz of pickled scipy matrices is a one-line DataError naming the pickled keys and
    giving a `python -c` command; that command writes a plain npz that imports with the same
    nodes, features and classes."""
    adjacency = sp.random(20, 20, density=0.2, random_state=3, format="csr")
    attributes = sp.random(20, 5, density=0.5, random_state=4, format="csr")
    labels = np.arange(20) % 3
    path = tmp_path / "amazon.npz"
    np.savez(path, adj_matrix=adjacency, attr_matrix=attributes, labels=labels)
    config = {"name": "pickled", "source": "npz", "path": str(path)}
    with pytest.raises(DataError, match=r"pickled Python objects \(adj_matrix, attr_matrix\)") as e:
        prepare_dataset(config)
    message = str(e.value)
    assert "\n" not in message
    code = re.search(r'python -c "(.*)"$', message).group(1)
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    store = prepare_dataset({**config, "path": str(tmp_path / "amazon_plain.npz")})
    assert store.num_nodes == 20 and store.feature_dim == 5 and store.num_classes == 3
    np.testing.assert_allclose(store.features(), attributes.toarray().astype(np.float32))


def test_python_objects_beside_the_graph_do_not_refuse_the_file(gnnbench_home, tmp_path):
    """shchur/gnn-benchmark's npz files (what `dataset=amazon_cs` downloads) keep names beside
    the CSR keys; only keys the import reads are refused for holding objects."""
    adjacency = sp.random(20, 20, density=0.2, random_state=3, format="csr")
    path = tmp_path / "named.npz"
    names = np.array([f"node {i}" for i in range(20)], dtype=object)
    np.savez(path, adj_data=adjacency.data, adj_indices=adjacency.indices,
             adj_indptr=adjacency.indptr, adj_shape=adjacency.shape,
             labels=np.arange(20) % 3, node_names=names)  # fmt: skip
    store = prepare_dataset({"name": "named", "source": "npz", "path": str(path)})
    assert store.num_nodes == 20 and store.num_classes == 3


# --- 5. a missing dataset.path -------------------------------------------------------------------
@pytest.mark.fault("config: dataset.path missing")
def test_missing_path_says_it_is_required(gnnbench_home):
    """dataset.path left as ??? is a ConfigError saying 'dataset.path is required for
    dataset=edgelist'."""
    with pytest.raises(ConfigError, match=r"^dataset\.path is required for dataset=edgelist"):
        prepare_dataset({"name": "edgelist", "source": "edgelist", "path": "???"})


def test_a_changed_label_file_reimports(gnnbench_home, tmp_path):
    config = musae(tmp_path)
    first = edgelist(**config)
    (tmp_path / "target.csv").write_text(
        "id,name,ml_target\n" + "".join(f"{i},u,{'ml' if i < 3 else 'web'}\n" for i in range(7))
    )
    second = edgelist(**config)
    assert second.path != first.path
    np.testing.assert_array_equal(second.labels(), [0, 0, 0, 1, 1, 1, 1])


@pytest.mark.parametrize("dataset", ["edgelist", "mat", "npz"])
def test_command_line_accepts_the_required_path_key(dataset):
    """dataset.path is ??? (required) in these configs: still a known key on the command line."""
    from gnnbench.cli import HydraConfigs, check_overrides

    check_overrides(HydraConfigs([f"dataset={dataset}", "dataset.path=/data/g", "train=none"]))
    with pytest.raises(ConfigError, match=rf"dataset\.pth: unknown key for dataset={dataset}"):
        check_overrides(HydraConfigs([f"dataset={dataset}", "dataset.pth=/data/g"]))
