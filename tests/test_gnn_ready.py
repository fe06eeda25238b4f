"""The streaming GNN-ready step writes exactly the book a plain in-memory construction writes.

The reference below builds each partition straight from the definition (owned ascending, then
halo ascending; every edge incident to a node within hops-1 of O_i, in stream order; np.save),
the way the step did before it streamed; the compiled step must match it byte for byte.
"""

from __future__ import annotations

import filecmp
import json
from pathlib import Path

import numpy as np
import pytest
from helpers.graphs import make_store

from gnnbench.data.store import GraphStore
from gnnbench.partition.stage import gnn_ready
from gnnbench.partition.stage.gnn_ready import book_label_dtype, build_partitions


def grow(bits: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """One hop: each node gains the partitions of its neighbours."""
    grown = bits.copy()
    np.logical_or.at(grown, edges[:, 1], bits[edges[:, 0]])
    np.logical_or.at(grown, edges[:, 0], bits[edges[:, 1]])
    return grown


def reference_book(store: GraphStore, owner: np.ndarray, p: int, hops: int, out: Path, data: bool):
    edges = store.edges().astype(np.int64)
    n = store.num_nodes
    full = np.zeros((n, p), dtype=bool)
    full[np.arange(n), owner] = True
    for _ in range(hops - 1):
        full = grow(full, edges)
    members = grow(full, edges) if hops else full
    split = store.split()
    for i in range(p):
        part = out / f"part-{i}"
        part.mkdir()
        owned = np.flatnonzero(owner == i)
        nodes = np.concatenate([owned, np.flatnonzero(members[:, i] & (owner != i))])
        local_of = np.full(n, -1, dtype=np.int64)
        local_of[nodes] = np.arange(len(nodes))
        if hops:
            local = local_of[edges[full[edges[:, 0], i] | full[edges[:, 1], i]]]
        else:  # no halo: only the edges between owned nodes
            local = local_of[edges[full[edges[:, 0], i] & full[edges[:, 1], i]]]
        indptr = np.zeros(len(nodes) + 1, dtype=np.int64)
        np.cumsum(np.bincount(local.ravel(), minlength=len(nodes)), out=indptr[1:])
        indices = np.empty(indptr[-1], dtype=np.int32)
        cursor = indptr[:-1].copy()
        for a, b in local.tolist():  # stream order: the order each row's entries must keep
            indices[cursor[a]] = b
            cursor[a] += 1
            indices[cursor[b]] = a
            cursor[b] += 1
        # on disk, ids and offsets are int32 where they fit and labels the narrowest class dtype
        np.save(part / "nodes.npy", nodes.astype(np.int32))
        np.save(part / "indptr.npy", indptr.astype(np.int32))
        np.save(part / "indices.npy", indices)
        if data:
            labels = store.labels()[nodes]
            np.save(part / "feat.npy", store.features()[nodes].astype(np.float32))
            np.save(
                part / "label.npy", labels.astype(book_label_dtype(labels.dtype, store.num_classes))
            )
        position = {int(v): k for k, v in enumerate(owned)}
        local_split = {
            key: np.array(
                sorted(position[v] for v in split[key].tolist() if v in position), dtype=np.int64
            )
            for key in split
        }
        np.savez(part / "split.npz", **local_split)
        info = {
            "num_nodes": len(nodes),
            "num_owned": len(owned),
            "num_local_edges": len(local),
            "num_train": len(local_split["train"]),
        }
        (part / "meta.json").write_text(json.dumps(info, indent=2))


def assert_same_book(expected: Path, actual: Path) -> None:
    expected_files = sorted(f.relative_to(expected) for f in expected.rglob("*") if f.is_file())
    actual_files = sorted(f.relative_to(actual) for f in actual.rglob("*") if f.is_file())
    assert actual_files == expected_files
    for name in expected_files:
        if name.suffix == ".npz":  # a zip stamps its members' times: compare the arrays
            with np.load(expected / name) as want, np.load(actual / name) as got:
                assert sorted(got.files) == sorted(want.files)
                for key in want.files:
                    assert got[key].dtype == want[key].dtype
                    assert np.array_equal(got[key], want[key]), (name, key)
        else:
            assert filecmp.cmp(expected / name, actual / name, shallow=False), name


@pytest.fixture(scope="module")
def random_graph() -> tuple[np.ndarray, int]:
    rng = np.random.default_rng(5)
    skewed = (rng.pareto(1.5, size=(3000, 2)) * 10).astype(np.int64) % 400  # some hubs
    return skewed, 420  # ids 400..419 are isolated


@pytest.mark.parametrize("hops", [0, 1, 2])
@pytest.mark.parametrize("node_data", [True, False])
@pytest.mark.parametrize("p", [5, 12, 40, 70])  # uint8, uint16, uint64 words; 70: two words
def test_book_matches_reference(tmp_path, monkeypatch, random_graph, hops, node_data, p):
    edges, num_nodes = random_graph
    store = make_store(tmp_path / "store", edges, num_nodes, node_data=True)
    owner = np.random.default_rng(p).integers(0, p, size=num_nodes)
    monkeypatch.setattr(gnn_ready, "ROW_WINDOW_BYTES", 7 * 12)  # 7 feat rows a window
    expected, actual = tmp_path / "expected", tmp_path / "actual"
    expected.mkdir()
    actual.mkdir()
    reference_book(store, owner, p, hops, expected, node_data)
    metrics = build_partitions(store, owner, p, actual, hops, 333, node_data)  # many chunks
    assert_same_book(expected, actual)
    sizes = [json.loads((expected / f"part-{i}" / "meta.json").read_text()) for i in range(p)]
    assert metrics["partition_edges"] == [size["num_local_edges"] for size in sizes]
    assert metrics["replication_factor"] == pytest.approx(
        sum(size["num_nodes"] for size in sizes) / num_nodes
    )
    cut = np.count_nonzero(owner[store.edges()[:, 0]] != owner[store.edges()[:, 1]])
    assert metrics["edge_cut"] == pytest.approx(cut / store.num_edges)
    assert metrics["gnn_ready_passes"] == max(1, hops)
    assert not list(actual.glob("edges-*.bin"))  # spills are removed


def test_structure_only_store_has_no_node_files(tmp_path, random_graph):
    edges, num_nodes = random_graph
    store = make_store(tmp_path / "store", edges, num_nodes, node_data=False)
    owner = np.arange(num_nodes) % 3
    out = tmp_path / "book"
    out.mkdir()
    build_partitions(store, owner, 3, out)
    assert sorted(f.name for f in (out / "part-0").iterdir()) == [
        "indices.npy",
        "indptr.npy",
        "meta.json",
        "nodes.npy",
        "split.npz",
    ]
