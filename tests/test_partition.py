"""SPRING on a hand-checked graph, the shared GNN-ready step, metrics and the book round trip."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.graphs import make_store

from gnnbench.errors import ConfigError
from gnnbench.partition.spec import PartitionSpec
from gnnbench.partition.stage.book import PartitionBook
from gnnbench.partition.stage.gnn_ready import build_partitions
from gnnbench.partition.stage.runner import run_partition_stage


def spring(store, p: int, seed: int, **params):
    """SPRING with gnnbench/conf/partitioner/spring.yaml's keys, `params` overriding them."""
    return PartitionSpec.defaults("spring", **params).run(store, p, seed)


def test_spring_sdt_cap_by_hand(triangles):
    # Cap 0.1 * 14 / 2 = 0.7 < every degree: no clustering move. Merging in ascending order:
    # 0 -> cluster of its richest neighbour 2 (size 2), 1 -> 2 (size 3), 2 and 3 would exceed
    # 1.05 * 6 / 2 = 3.15, 4 -> 3 (size 2); 5 is last and not visited. Largest first:
    # {0,1,2} -> part 0, {3,4} -> part 1, {5} -> lightest part 1.
    result = spring(triangles, 2, 0, volume_cap="sdt", beta=1.05)
    assert result.owner.tolist() == [0, 0, 0, 1, 1, 1]
    assert result.stats["clusters_before_merge"] == 6
    assert result.stats["clusters_after_merge"] == 3
    assert result.stats["passes"] == 2  # degree + one clustering pass


def test_spring_2ps_cap_by_hand(triangles):
    # Cap 2 * 7 / 2 = 7: 0 joins 1's cluster, 2 joins it (volume 7); 4 and 5 join 3 (volume 7);
    # on the bridge both volumes are 7 <= 7 and ties move u, so 2 moves to 3's cluster (volume 10).
    # Clusters {0,1} and {2,3,4,5}: merging them would exceed 3.15 nodes.
    result = spring(triangles, 2, 0, volume_cap="2ps", beta=1.05)
    assert result.owner.tolist() == [1, 1, 0, 0, 0, 0]
    assert result.stats["clusters_before_merge"] == 2
    assert result.stats["clusters_after_merge"] == 2


def test_gnn_ready_partitions_and_metrics(triangles, tmp_path):
    out = tmp_path / "book"
    out.mkdir()
    metrics = build_partitions(triangles, np.array([0, 0, 0, 1, 1, 1]), 2, out)
    assert metrics["edge_cut"] == pytest.approx(1 / 7)
    assert metrics["replication_factor"] == pytest.approx(8 / 6)
    assert metrics["vertex_balance"] == pytest.approx(1.0)
    assert metrics["partition_edges"] == [4, 4]
    assert np.load(out / "part-0" / "nodes.npy").tolist() == [0, 1, 2, 3]
    assert np.load(out / "part-1" / "nodes.npy").tolist() == [3, 4, 5, 2]
    indptr = np.load(out / "part-0" / "indptr.npy")
    indices = np.load(out / "part-0" / "indices.npy")
    halo_row = indices[indptr[3] : indptr[4]]
    assert halo_row.tolist() == [2]  # the halo node keeps only its edge into the owned set
    assert sorted(indices[indptr[2] : indptr[3]].tolist()) == [0, 1, 3]


def test_two_hop_partitions(triangles, tmp_path):
    out = tmp_path / "book"
    out.mkdir()
    metrics = build_partitions(triangles, np.array([0, 0, 0, 1, 1, 1]), 2, out, hops=2)
    assert metrics["replication_factor"] == pytest.approx(2.0)
    # edges incident to the 1-hop set {0,1,2,3}: all but 4-5 (and symmetrically)
    assert metrics["partition_edges"] == [6, 6]


def test_isolated_nodes_and_invariants(tmp_path):
    rng = np.random.default_rng(3)
    edges = rng.integers(0, 300, size=(1500, 2))
    store = make_store(tmp_path / "store", edges, 320, node_data=True)  # ids 300..319 are isolated
    out = tmp_path / "book"
    out.mkdir()
    result = spring(store, 4, 0)
    owner = result.owner
    assert owner.shape == (320,) and owner.min() >= 0 and owner.max() < 4
    metrics = build_partitions(store, owner, 4, out)
    assert metrics["replication_factor"] >= 1
    assert sum(metrics["partition_owned"]) == 320
    assert metrics["vertex_balance"] <= 1.05 * 1.5


def test_book_round_trip_and_cache(triangles, gnnbench_home):
    config = PartitionSpec.defaults("spring", hops=1, volume_cap="sdt", beta=1.05)
    book, cached = run_partition_stage(triangles, partitioner=config, p=2, seed=0)
    assert not cached
    assert book.metrics["partition_peak_mb"] > 0
    assert (book.path / "partition_flamegraph.html").is_file()
    features = np.arange(18, dtype=np.float32).reshape(6, 3)
    for i in range(2):
        part = book.load(i)
        np.testing.assert_array_equal(part.features, features[part.nodes])
        np.testing.assert_array_equal(part.labels, part.nodes % 2)
        # narrow on disk (2 classes: int8 labels; ids and offsets int32), int64 once loaded
        on_disk = {name: np.load(book.path / f"part-{i}" / f"{name}.npy").dtype
                   for name in ("nodes", "indptr", "label")}  # fmt: skip
        assert on_disk == {"nodes": np.int32, "indptr": np.int32, "label": np.int8}
        assert part.nodes.dtype == part.indptr.dtype == part.labels.dtype == np.int64
        owned = part.nodes[: part.num_owned]
        assert set(owned[part.split["train"]].tolist()) <= {0, 3}
    again, cached = run_partition_stage(triangles, partitioner=config, p=2, seed=0)
    assert cached and again.path == book.path
    assert PartitionBook(book.path).owner().tolist() == [0, 0, 0, 1, 1, 1]


def test_deterministic_owner(tmp_path, monkeypatch):
    rng = np.random.default_rng(5)
    edges = rng.integers(0, 500, size=(4000, 2))
    store = make_store(tmp_path / "store", edges, 500, node_data=True)
    owners = []
    for run in range(2):
        monkeypatch.setenv("GNNBENCH_HOME", str(tmp_path / f"home{run}"))
        book, _ = run_partition_stage(
            store, partitioner=PartitionSpec.defaults("spring"), p=4, seed=0
        )
        owners.append((book.path / "owner.npy").read_bytes())
    assert owners[0] == owners[1]


@pytest.mark.fault("config: p larger than the node count (stage)")
def test_p_larger_than_nodes(triangles, gnnbench_home):
    """p=7 on a 6-node graph is a ConfigError ('p=7 is larger than the number of nodes') and
    nothing is written under GNNBENCH_HOME/partitions."""
    with pytest.raises(ConfigError, match="p=7 is larger than the number of nodes"):
        run_partition_stage(triangles, partitioner=PartitionSpec.defaults("spring"), p=7, seed=0)
    assert (
        not any((gnnbench_home / "partitions").glob("*"))
        if (gnnbench_home / "partitions").exists()
        else True
    )


@pytest.mark.fault("config: an unknown partitioner")
def test_unknown_partitioner(triangles, gnnbench_home):
    """Partitioner name 'nope' is a ConfigError naming it as unknown."""
    with pytest.raises(ConfigError, match="unknown partitioner 'nope'"):
        PartitionSpec.from_config({"name": "nope", "hops": 1})


def test_structure_only_book(triangles, gnnbench_home):
    config = PartitionSpec.defaults("spring")
    bare, cached = run_partition_stage(triangles, partitioner=config, p=2, seed=0, node_data=False)
    assert not cached and not (bare.path / "part-0" / "feat.npy").exists()
    assert bare.meta["node_data"] is False
    full, _ = run_partition_stage(triangles, partitioner=config, p=2, seed=0)
    # the default book shares the store's feature rows: it copies the labels only
    assert full.path != bare.path and (full.path / "part-0" / "label.npy").is_file()
    reused, cached = run_partition_stage(
        triangles, partitioner=config, p=2, seed=0, node_data=False
    )
    assert cached and reused.path == full.path  # a full book serves a partition-only run


@pytest.mark.parametrize(
    ("stored", "num_classes", "expected"),
    [
        (np.int64, 2, np.int8),
        (np.int64, 172, np.int16),  # Papers100M's classes
        (np.int64, 40_000, np.int32),
        (np.int32, 127, np.int8),
        (np.uint8, 121, np.uint8),  # multi-label columns stay as stored
        (np.float32, 3, np.float32),
    ],
)
def test_book_label_dtype_is_the_smallest_that_holds_the_classes(stored, num_classes, expected):
    from gnnbench.partition.stage.gnn_ready import book_label_dtype

    assert book_label_dtype(np.dtype(stored), num_classes) == np.dtype(expected)
