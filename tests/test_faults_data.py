"""Faults at import: each ends in one DataError line (or is repaired on request), nothing left."""

from __future__ import annotations

import errno
import os
from collections import namedtuple
from pathlib import Path

import numpy as np
import pytest

from gnnbench.data import builder as builder_module
from gnnbench.data.datasets import prepare_dataset
from gnnbench.errors import ConfigError, DataError


def write_heterophilous(path: Path, features: np.ndarray, labels: np.ndarray, edges) -> Path:
    """A tiny graph in the heterophilous npz layout (features, labels, edges, one split)."""
    num_nodes = len(labels)
    masks = np.zeros((1, num_nodes), dtype=bool)
    np.savez(
        path,
        node_features=features,
        node_labels=labels,
        edges=np.asarray(edges, dtype=np.int64),
        train_masks=masks | (np.arange(num_nodes) < num_nodes // 2),
        val_masks=masks,
        test_masks=masks | (np.arange(num_nodes) >= num_nodes // 2),
    )
    return path


def config(path: Path, **overrides) -> dict:
    return {"name": "tiny", "source": "heterophilous", "path": str(path), **overrides}


def no_leftovers(home: Path) -> bool:
    """No temporary or half-written store directory under GNNBENCH_HOME/graphs."""
    graphs = home / "graphs"
    return not graphs.is_dir() or not any(graphs.iterdir())


EDGES = [[0, 1], [1, 2], [2, 3], [3, 4], [4, 5], [5, 0]]


# --- a. non-finite features ----------------------------------------------------------------------
@pytest.mark.fault("bad input: NaN or inf in node features")
def test_nan_features_are_refused_naming_file_count_and_first_row(tmp_path, gnnbench_home):
    """Features holding NaN or inf are one DataError naming the file, the number of such rows and
    the first of them; nothing is left under GNNBENCH_HOME/graphs."""
    features = np.ones((6, 3), dtype=np.float32)
    features[2, 1] = np.nan
    features[4, 0] = np.inf
    features[4, 2] = -np.inf
    path = write_heterophilous(tmp_path / "bad.npz", features, np.arange(6) % 2, EDGES)
    with pytest.raises(
        DataError, match=r"bad\.npz: 2 feature rows hold NaN or inf \(first: row 2\)"
    ):
        prepare_dataset(config(path))
    assert no_leftovers(gnnbench_home)


@pytest.mark.fault("bad input: NaN features with dataset.nonfinite=zero")
def test_nan_features_zeroed_on_request_and_counted(tmp_path, gnnbench_home, monkeypatch):
    """With dataset.nonfinite=zero the NaN and inf entries become 0, all other values are kept,
    and the store's meta records the count (nonfinite_features); any other value of
    dataset.nonfinite is a ConfigError listing error, zero."""
    monkeypatch.setattr("gnnbench.data.import_checks.FEATURE_BLOCK_BYTES", 12)  # one row a block
    features = np.ones((6, 3), dtype=np.float32)
    features[2, 1] = np.nan
    features[5, 2] = np.inf
    path = write_heterophilous(tmp_path / "bad.npz", features, np.arange(6) % 2, EDGES)
    store = prepare_dataset(config(path, nonfinite="zero"))
    assert store.meta["nonfinite_features"] == 2
    expected = np.ones((6, 3), dtype=np.float32)
    expected[2, 1] = expected[5, 2] = 0.0
    np.testing.assert_array_equal(store.features(), expected)
    with pytest.raises(ConfigError, match="dataset.nonfinite: expected one of error, zero"):
        prepare_dataset(config(path, nonfinite="drop"))


# --- b. node count beyond memory -----------------------------------------------------------------
@pytest.mark.fault("bad input: a huge dataset.num_nodes for a small file")
def test_huge_num_nodes_fails_before_allocating(tmp_path, gnnbench_home):
    """dataset.num_nodes=4000000000 for a small edge list is one DataError stating the GiB of
    memory needed and the GiB available, leaving nothing under GNNBENCH_HOME/graphs; the
    synthetic generator with that num_nodes is a DataError naming it too."""
    edges = tmp_path / "edges.txt"
    edges.write_text("".join(f"{k} {k + 1}\n" for k in range(600)))
    dataset = {"name": "huge", "source": "edgelist", "path": str(edges), "num_nodes": 4_000_000_000}
    with pytest.raises(DataError, match=r"dataset\.num_nodes=4000000000: .* need \d+\.\d GiB "
                       r"of memory, only \d+\.\d GiB is available"):  # fmt: skip
        prepare_dataset(dataset)
    assert no_leftovers(gnnbench_home)
    with pytest.raises(DataError, match=r"dataset\.num_nodes=4000000000"):
        prepare_dataset({"name": "syn", "source": "synthetic", "num_nodes": 4_000_000_000})


# --- c. only self-loops --------------------------------------------------------------------------
@pytest.mark.fault("bad input: an edge list of self-loops only")
def test_self_loops_only_is_like_an_empty_file(tmp_path, gnnbench_home):
    """An edge list of self-loops only is a DataError naming the file ('no edges after removing
    self-loops'); nothing is left under GNNBENCH_HOME/graphs."""
    loops = tmp_path / "loops.txt"
    loops.write_text("1 1\n2 2\n7 7\n")
    with pytest.raises(DataError, match=r"loops\.txt: no edges after removing self-loops"):
        prepare_dataset({"name": "loops", "source": "edgelist", "path": str(loops)})
    assert no_leftovers(gnnbench_home)


# --- d. labels not 0..C-1 ------------------------------------------------------------------------
@pytest.mark.fault("bad input: labels starting at 1 or with gaps")
def test_labels_with_gaps_are_renumbered(tmp_path, gnnbench_home):
    """Labels 1, 2, 5 become classes 0, 1, 2 in that order and -1 stays -1; num_classes is 3 and
    the store's meta keeps the original values (label_values)."""
    labels = np.array([1, 2, 5, -1, 5, 1])
    features = np.ones((6, 2), dtype=np.float32)
    store = prepare_dataset(
        config(write_heterophilous(tmp_path / "g.npz", features, labels, EDGES))
    )
    assert store.num_classes == 3
    assert store.labels().tolist() == [0, 1, 2, -1, 2, 0]
    assert store.meta["label_values"] == [1, 2, 5]


# --- e. read-only or full GNNBENCH_HOME ----------------------------------------------------------
@pytest.mark.fault("disk: read-only GNNBENCH_HOME")
def test_read_only_home_is_one_line(tmp_path, gnnbench_home, monkeypatch):
    """A GNNBENCH_HOME the import cannot write is one DataError naming its graphs directory as
    not writable, with the operating system's reason (Permission denied, or Not a directory when
    run as root)."""
    edges = tmp_path / "edges.txt"
    edges.write_text("0 1\n1 2\n")
    dataset = {"name": "ro", "source": "edgelist", "path": str(edges)}
    gnnbench_home.mkdir()
    if os.geteuid() == 0:  # root ignores permission bits: put the store directory under a file
        blocker = tmp_path / "a_file"
        blocker.write_text("")
        monkeypatch.setenv("GNNBENCH_HOME", str(blocker / "home"))
        with pytest.raises(DataError, match=r"a_file/home/graphs: not writable \(Not a directory"):
            prepare_dataset(dataset)
        return
    gnnbench_home.chmod(0o500)
    try:
        with pytest.raises(DataError, match=r"gnnbench_home/graphs: not writable \(Permission "
                           r"denied\); the import needs a directory it can write"):  # fmt: skip
            prepare_dataset(dataset)
    finally:
        gnnbench_home.chmod(0o700)


@pytest.mark.fault("disk: read-only graphs folder")
def test_read_only_graphs_dir_removes_nothing_half_written(tmp_path, gnnbench_home, monkeypatch):
    """The rename into a directory that turned read-only fails in one line; no temp dir is left."""
    edges = tmp_path / "edges.txt"
    edges.write_text("0 1\n1 2\n")
    dataset = {"name": "ro", "source": "edgelist", "path": str(edges)}

    def refuse_rename(src, dst):
        raise PermissionError(13, "Permission denied", str(dst))

    monkeypatch.setattr("gnnbench.process.atomic.os.rename", refuse_rename)
    with pytest.raises(DataError, match=r"graphs: not writable \(Permission denied\)"):
        prepare_dataset(dataset)
    assert no_leftovers(gnnbench_home)


@pytest.mark.fault("disk: too little free space for the edges")
def test_full_disk_is_checked_before_writing_edges(tmp_path, gnnbench_home, monkeypatch):
    """When the free space left is less than edges.bin needs, the import stops with one DataError
    giving the bytes needed and free; nothing is left under GNNBENCH_HOME/graphs."""
    edges = tmp_path / "edges.txt"
    edges.write_text("0 1\n1 2\n2 3\n")
    Usage = namedtuple("Usage", "total used free")
    free = iter([1000])  # room for the raw edge chunk, then 10 bytes left

    monkeypatch.setattr(
        "gnnbench.data.import_checks.shutil.disk_usage", lambda _: Usage(1, 1, next(free, 10))
    )
    with pytest.raises(DataError, match=r"graphs: not enough disk space for edges\.bin "
                       r"\(needs 24 bytes, 10 free\)"):  # fmt: skip
        prepare_dataset({"name": "full", "source": "edgelist", "path": str(edges)})
    assert no_leftovers(gnnbench_home)


@pytest.mark.fault("disk: the disk fills while writing")
def test_disk_full_while_writing_is_one_line(tmp_path, gnnbench_home, monkeypatch):
    """ENOSPC while writing raw_edges.bin is one DataError ('disk full or file too large') naming
    the file; nothing is left under GNNBENCH_HOME/graphs."""
    edges = tmp_path / "edges.txt"
    edges.write_text("0 1\n1 2\n2 3\n")

    def full(self, edges, origin):
        raise OSError(errno.ENOSPC, "No space left on device", str(self.tmp / "raw_edges.bin"))

    monkeypatch.setattr(builder_module.GraphStoreBuilder, "add_edges", full)
    with pytest.raises(DataError, match=r"graphs: disk full or file too large \(No space left on "
                       r"device\) while writing raw_edges\.bin"):  # fmt: skip
        prepare_dataset({"name": "full", "source": "edgelist", "path": str(edges)})
    assert no_leftovers(gnnbench_home)


@pytest.mark.fault("bad input: a node count beyond 64-bit edge keys")
def test_node_count_beyond_64_bit_keys_is_refused(tmp_path, gnnbench_home, monkeypatch):
    """Where memory would allow 4e9 nodes, the edge keys (low * N + high) would still overflow."""
    monkeypatch.setattr("gnnbench.data.import_checks.available_memory", lambda: 1 << 60)
    edges = tmp_path / "edges.txt"
    edges.write_text("0 1\n1 2\n")
    dataset = {"name": "huge", "source": "edgelist", "path": str(edges), "num_nodes": 4_000_000_000}
    with pytest.raises(DataError, match=r"num_nodes=4000000000: at most 3037000499 nodes"):
        prepare_dataset(dataset)
    assert no_leftovers(gnnbench_home)


@pytest.mark.fault("disk: free space checked before each sized write")
@pytest.mark.parametrize("step", ["raw_edges.bin", "feat.npy"])
def test_disk_space_is_checked_before_each_known_size_write(step, tmp_path, monkeypatch):
    """Edge chunks and the feature matrix (a memory map: a full disk there would be SIGBUS)."""
    from gnnbench.data.builder import GraphStoreBuilder

    Usage = namedtuple("Usage", "total used free")
    dest = tmp_path / "graphs" / "store"
    with pytest.raises(DataError, match=rf"graphs: not enough disk space for {step} \(needs "):
        with GraphStoreBuilder(dest, "g", "test") as builder:
            builder.add_edges(np.array([[0, 1]]), origin="edges")
            monkeypatch.setattr(
                "gnnbench.data.import_checks.shutil.disk_usage", lambda _: Usage(1, 1, 100)
            )
            if step == "raw_edges.bin":
                builder.add_edges(np.zeros((10, 2), dtype=np.int64), origin="edges")
            builder.open_features(1000, 8)
    assert not any((tmp_path / "graphs").iterdir())
