"""Edge (vertex-cut) streaming partitioners: hand-checked examples and shared invariants.

Stores normalise every edge to (low id, high id), keep first-occurrence order, and stream it as
written, so the examples below list edges as (low, high) in stream order.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers.configured import configured
from helpers.graphs import make_store

from gnnbench.data.store import GraphStore
from gnnbench.errors import ConfigError
from gnnbench.partition.algorithms import dbh as dbh_module
from gnnbench.partition.algorithms import greedy as greedy_module
from gnnbench.partition.algorithms import grid as grid_module
from gnnbench.partition.algorithms import hdrf as hdrf_module
from gnnbench.partition.algorithms import twops as twops_module
from gnnbench.partition.spec import PartitionSpec
from gnnbench.partition.stage.gnn_ready import build_partitions
from gnnbench.partition.stage.runner import run_partition_stage
from gnnbench.partition.streaming.edge_partition import argmax_tiebreak
from gnnbench.partition.streaming.hashing import hash_id, hash_ids

EDGE_PARTITIONERS = ["hdrf", "dbh", "greedy", "grid", "twops"]
MODULES = {
    "hdrf": hdrf_module,
    "dbh": dbh_module,
    "greedy": greedy_module,
    "grid": grid_module,
    "twops": twops_module,
}


def run_capturing(name, store, p, seed, params, monkeypatch):
    """Run a partitioner and also return each node's replica set (as a Python set of parts)."""
    module = MODULES[name]
    real = module.result_from_replicas
    captured = {}

    def capture(replicas, p, seed, stats):
        captured["replicas"] = replicas.copy()
        return real(replicas, p, seed, stats)

    monkeypatch.setattr(module, "result_from_replicas", capture)
    result = configured(name)(store, p, seed, **params)
    bits = captured["replicas"]
    sets = [
        {q for q in range(p) if (int(bits[v, q >> 6]) >> (q & 63)) & 1}
        for v in range(bits.shape[0])
    ]
    return result, sets


def part_of_hash(node, seed, modulus):
    return int(hash_ids(np.array([node]), seed)[0] % np.uint64(modulus))


# --- shared helpers --------------------------------------------------------------------------------


def test_numba_hash_matches_vectorised_hash():
    ids = np.array([0, 1, 7, 12345, 2**40 + 3], dtype=np.int64)
    for seed in (0, 1, 99):
        assert [int(hash_id(int(i), seed)) for i in ids] == hash_ids(ids, seed).tolist()


def test_argmax_tiebreak():
    scores = np.array([1.0, 3.0, 2.0, 3.0])
    assert argmax_tiebreak(scores, np.uint64(0)) == 1
    assert argmax_tiebreak(scores, np.uint64(1)) == 3
    assert argmax_tiebreak(scores, np.uint64(5)) == 3
    assert argmax_tiebreak(np.array([0.5, 2.0]), np.uint64(7)) == 1


# --- HDRF ------------------------------------------------------------------------------------------

# p = 2, lambda = 1, epsilon = 1. A = the part the first edge takes (a seeded tie), B the other.
# Loads (A, B) before each edge; partial degrees include the current edge.
#   (3,5): no replicas, loads 0,0: every score 0, a tie                         -> A   loads 1,0
#   (0,1): no replicas; C_bal A = 0/(1+1) = 0, B = 1/2                           -> B   loads 1,1
#   (0,2): d0=2 d2=1; A: C_bal 0 -> 0; B: g0 = 1 + (1 - 2/3) = 4/3               -> B   loads 1,2
#   (0,6): d0=3 d6=1; A: C_bal (2-1)/(1+1) = 1/2; B: g0 = 1 + 1/4 = 5/4          -> B   loads 1,3
#   (4,5): d4=1 d5=2; A: g5 = 4/3 + C_bal (3-1)/(1+2) = 2/3 -> 2; B: 0           -> A   loads 2,3
#   (3,4): d3=d4=2;   A: g3 + g4 = 3/2 + 3/2, C_bal (3-2)/(1+1) -> 7/2; B: 0     -> A   loads 3,3
#   (0,3): d0=4 d3=3; A: g3 = 1 + (1 - 3/7) = 11/7; B: g0 = 1 + (1 - 4/7) = 10/7,
#          both C_bal 0: the high-degree node 0 is the one replicated            -> A   loads 4,3
# (PowerGraph greedy would tie here: 1 + 0 on both parts.)
HDRF_EDGES = [(3, 5), (0, 1), (0, 2), (0, 6), (4, 5), (3, 4), (0, 3)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hdrf_by_hand(tmp_path, monkeypatch, seed):
    store = make_store(tmp_path / "store", HDRF_EDGES, 7)
    result, replicas = run_capturing("hdrf", store, 2, seed, {}, monkeypatch)
    (a,) = replicas[3]
    b = 1 - a
    assert replicas == [{a, b}, {b}, {b}, {a}, {a}, {a}, {b}]
    assert result.stats["edge_loads"][a] == 4 and result.stats["edge_loads"][b] == 3
    assert result.stats["rf_edge_partition"] == pytest.approx(8 / 7)
    assert result.stats["passes"] == 1
    assert result.owner[1:].tolist() == [b, b, a, a, a, b]


@pytest.mark.parametrize(("lambda_", "spread"), [(1.0, False), (10.0, True)])
def test_hdrf_lambda_weighs_balance(tmp_path, monkeypatch, lambda_, spread):
    # p = 2. (0,1) -> A (a seeded tie). (0,2): d0 = 2, d2 = 1; A: g0 = 1 + (1 - 2/3) = 4/3,
    # C_bal 0; B: C_bal = lambda (1 - 0) / (1 + 1 - 0) = lambda / 2: 1/2 < 4/3 keeps the edge
    # with node 0 on A, 5 > 4/3 sends it to B.
    store = make_store(tmp_path / "store", [(0, 1), (0, 2)], 3)
    _, replicas = run_capturing("hdrf", store, 2, 0, {"lambda_": lambda_}, monkeypatch)
    (a,) = replicas[1]
    b = 1 - a
    assert replicas == ([{a, b}, {a}, {b}] if spread else [{a}, {a}, {a}])


# --- PowerGraph greedy ------------------------------------------------------------------------------

# p = 2; score = [u on p] + [v on p] + (max - load_p) / (1 + max - min). A = the first edge's part.
#   (3,5): all 0, a tie                                                        -> A   loads 1,0
#   (0,1): A 0/(1+1) = 0; B 1/2                                                -> B   loads 1,1
#   (0,2): A 0; B 1 + 0                                                        -> B   loads 1,2
#   (0,6): A (2-1)/(1+1) = 1/2; B 1 + 0                                        -> B   loads 1,3
#   (4,5): A 1 + (3-1)/(1+2) = 5/3; B 0                                        -> A   loads 2,3
#   (0,3): A 1 + (3-2)/(1+1) = 3/2; B 1 + 0 = 1                                -> A   loads 3,3
#   (1,2): A 0; B 2 + 0                                                        -> B   loads 3,4
GREEDY_EDGES = [(3, 5), (0, 1), (0, 2), (0, 6), (4, 5), (0, 3), (1, 2)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_greedy_by_hand(tmp_path, monkeypatch, seed):
    store = make_store(tmp_path / "store", GREEDY_EDGES, 7)
    result, replicas = run_capturing("greedy", store, 2, seed, {}, monkeypatch)
    (a,) = replicas[3]
    b = 1 - a
    assert replicas == [{a, b}, {b}, {b}, {a}, {a}, {a}, {b}]
    assert result.stats["edge_loads"][a] == 3 and result.stats["edge_loads"][b] == 4
    assert result.stats["max_edge_load"] == 4
    assert result.stats["rf_edge_partition"] == pytest.approx(8 / 7)


# --- DBH -------------------------------------------------------------------------------------------

# Degrees: 0:3 1:2 2:2 3:3 4:2 5:2. The endpoint of lower degree (smaller id on ties) is hashed:
#   (0,1) 3 vs 2 -> 1    (0,2) -> 2    (0,3) 3 vs 3 -> 0    (1,2) 2 vs 2 -> 1
#   (3,4) -> 4           (4,5) 2 vs 2 -> 4                  (3,5) 3 vs 2 -> 5
DBH_EDGES = [(0, 1), (0, 2), (0, 3), (1, 2), (3, 4), (4, 5), (3, 5)]
DBH_HASHED = [1, 2, 0, 1, 4, 4, 5]


@pytest.mark.parametrize("seed", [0, 3])
def test_dbh_by_hand(tmp_path, monkeypatch, seed):
    p = 3
    store = make_store(tmp_path / "store", DBH_EDGES, 6)
    result, replicas = run_capturing("dbh", store, p, seed, {}, monkeypatch)
    expected = [set() for _ in range(6)]
    loads = [0] * p
    for (u, v), w in zip(DBH_EDGES, DBH_HASHED, strict=True):
        part = part_of_hash(w, seed, p)
        expected[u].add(part)
        expected[v].add(part)
        loads[part] += 1
    assert replicas == expected
    assert result.stats["edge_loads"] == loads
    assert result.stats["passes"] == 2  # the store's degree pass + the assignment pass


# --- 2D grid ---------------------------------------------------------------------------------------


def test_grid_shape():
    shapes = {p: grid_module.grid_shape(p) for p in (1, 2, 4, 6, 7, 8, 9, 12, 16)}
    assert shapes == {
        1: (1, 1),
        2: (1, 2),
        4: (2, 2),
        6: (2, 3),
        7: (1, 7),
        8: (2, 4),
        9: (3, 3),
        12: (3, 4),
        16: (4, 4),
    }


@pytest.mark.parametrize("p", [6, 7])
def test_grid_by_hand(tmp_path, monkeypatch, p):
    # Edge (u, v) -> cell (hash(u) % rows, hash(v) % cols), part = row * cols + col.
    # p = 6: a 2 x 3 grid; p = 7: 1 x 7, so every edge follows hash(v) % 7.
    seed = 4
    edges = [(0, 1), (0, 2), (1, 2), (2, 3), (3, 4), (1, 4)]
    rows, cols = (2, 3) if p == 6 else (1, 7)
    store = make_store(tmp_path / "store", edges, 5)
    result, replicas = run_capturing("grid", store, p, seed, {}, monkeypatch)
    expected = [set() for _ in range(5)]
    for u, v in edges:
        part = part_of_hash(u, seed, rows) * cols + part_of_hash(v, seed, cols)
        expected[u].add(part)
        expected[v].add(part)
    assert replicas == expected
    assert (result.stats["grid_rows"], result.stats["grid_cols"]) == (rows, cols)


def test_one_dimensional_grid_hashes_the_source(tmp_path, monkeypatch):
    """grid_dims=1: edge (u, v) to hash(u) % p, so u's edges (as first endpoint) share one part."""
    seed, p = 3, 5
    edges = [(0, 1), (0, 2), (1, 2), (2, 3), (3, 4), (1, 4), (0, 4)]
    store = make_store(tmp_path / "store", edges, 5)
    result, replicas = run_capturing("grid", store, p, seed, {"grid_dims": 1}, monkeypatch)
    expected = [set() for _ in range(5)]
    for u, v in edges:
        expected[u].add(part_of_hash(u, seed, p))
        expected[v].add(part_of_hash(u, seed, p))
    assert replicas == expected
    assert (result.stats["grid_rows"], result.stats["grid_cols"]) == (p, 1)
    with pytest.raises(ConfigError, match="partitioner.grid_dims: expected 1 or 2"):
        configured("grid")(store, p, seed, grid_dims=3)


def test_grid_replicas_in_one_row_and_one_column(tmp_path, monkeypatch):
    rng = np.random.default_rng(11)
    store = make_store(tmp_path / "store", rng.integers(0, 200, size=(1500, 2)), 200)
    _, replicas = run_capturing("grid", store, 12, 0, {}, monkeypatch)
    rows, cols = grid_module.grid_shape(12)
    for v, parts in enumerate(replicas):
        row = part_of_hash(v, 0, rows)
        col = part_of_hash(v, 0, cols)
        assert all(q // cols == row or q % cols == col for q in parts)
        assert len(parts) <= rows + cols - 1


# --- 2PS-L -----------------------------------------------------------------------------------------

# p = 2, |E| = 8: cluster cap 2*8/2 = 8, edge capacity floor(1.05*8/2) = 4.
# Degrees 0:2 1:2 2:3 3:4 4:2 5:2 6:1. Clustering (real volume = cluster volume - own degree):
#   (0,1): new clusters c0 = {0} vol 2, c1 = {1} vol 2; real 0 <= 0, 2 + 2 <= 8: 0 -> c1 (vol 4)
#   (1,2): c2 = {2} vol 3; real 4-2 = 2 vs 3-3 = 0: v moves, 4 + 3 <= 8: 2 -> c1 (vol 7)
#   (3,4): c3 = {3} vol 4, c4 = {4} vol 2; real 0 <= 0, 2 + 4 <= 8: 3 -> c4 (vol 6)
#   (4,5): c5 = {5} vol 2; real 6-2 = 4 vs 0: 6 + 2 <= 8: 5 -> c4 (vol 8)
#   (2,3): real 7-3 = 4 <= 8-4 = 4 but 8 + 3 > 8: no move
#   (3,6): c6 = {6} vol 1; real 4 vs 0 but 8 + 1 > 8: no move (the cap keeps 6 alone)
# Clusters by descending (volume, id): c4 (8) -> part 0, c1 (7) -> part 1, c6 (1) -> part 1.
# Pre-partitioning: the six triangle edges go to their cluster's part: loads 3, 3.
# Scoring: (2,3): candidates 1 (c1) and 0 (c4), neither full. deg sum 7, volume sum 15:
#     part 1: u=2 has a replica: 1 + (1 - 3/7) + 7/15 = 2.038
#     part 0: v=3 has a replica: 1 + (1 - 4/7) + 8/15 = 1.962                -> 1   loads 3, 4
#   (3,6): candidate 1 is full: fallback to (higher-degree endpoint 3) % 2 = 1, full too,
#     so the least-loaded part                                               -> 0   loads 4, 4
TWOPS_EDGES = [(0, 1), (1, 2), (0, 2), (3, 4), (4, 5), (3, 5), (2, 3), (3, 6)]


def test_twops_by_hand(tmp_path, monkeypatch):
    store = make_store(tmp_path / "store", TWOPS_EDGES, 7)
    result, replicas = run_capturing("twops", store, 2, 0, {}, monkeypatch)
    assert replicas == [{1}, {1}, {1}, {0, 1}, {0}, {0}, {0}]
    stats = result.stats
    assert stats["edge_loads"] == [4, 4]
    assert stats["clusters"] == 3
    assert stats["max_cluster_volume"] == 8 and stats["edge_capacity"] == 4
    assert stats["prepartitioned_edges"] == 6 and stats["fallback_edges"] == 1
    assert stats["passes"] == 4 and stats["clustering_passes"] == 1  # degree + 1 + 2
    assert result.owner[[0, 1, 2, 4, 5, 6]].tolist() == [1, 1, 1, 0, 0, 0]


def test_twops_full_prepartition_falls_back(tmp_path, monkeypatch):
    # Two triangles joined by (2,3); |E| = 7, p = 2: cluster cap 7, edge capacity floor(3.675) = 3.
    # Clustering: 0 -> c1 (vol 4), 2 -> c1 (vol 7); 3 -> c4 (vol 5), 5 -> c4 (vol 7); on (2,3)
    # real volumes 4 <= 4 but 7 + 3 > 7: no move. c4 (7, higher id first) -> part 0, c1 -> part 1.
    # Pre-partitioning fills both parts to 3; (2,3): part 1 is full, so the fallback:
    # degrees 3 = 3, so v = 3, 3 % 2 = 1 is full too: least loaded (first of 3, 3) -> part 0.
    edges = [(0, 1), (1, 2), (0, 2), (3, 4), (4, 5), (3, 5), (2, 3)]
    store = make_store(tmp_path / "store", edges, 6)
    result, replicas = run_capturing("twops", store, 2, 0, {}, monkeypatch)
    assert replicas == [{1}, {1}, {0, 1}, {0}, {0}, {0}]
    assert result.stats["edge_loads"] == [4, 3]
    assert result.stats["fallback_edges"] == 1


def test_twops_clustering_passes(tmp_path):
    rng = np.random.default_rng(2)
    store = make_store(tmp_path / "store", rng.integers(0, 100, size=(600, 2)), 100)
    result = configured("twops")(store, 4, 0, stream_iters=3)
    assert result.stats["clustering_passes"] == 3
    assert result.stats["passes"] == 1 + 3 + 2


# --- invariants of all five ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def random_store(tmp_path_factory) -> GraphStore:
    rng = np.random.default_rng(7)
    # a skewed graph on ids 0..299; ids 300..319 have no edge
    u = rng.integers(0, 300, size=3000)
    v = np.minimum(299, rng.zipf(1.8, size=3000) - 1)
    return make_store(tmp_path_factory.mktemp("random") / "store", np.stack([u, v], 1), 320)


@pytest.mark.parametrize("name", EDGE_PARTITIONERS)
@pytest.mark.parametrize("p", [5, 8, 70])  # 70: two bitset words per node
def test_invariants(random_store, tmp_path, name, p):
    store = random_store
    fn = configured(name)
    result = fn(store, p, 3)
    stats = result.stats
    assert len(stats["edge_loads"]) == p
    assert sum(stats["edge_loads"]) == store.num_edges  # every edge placed exactly once
    assert stats["max_edge_load"] == max(stats["edge_loads"])
    assert stats["rf_edge_partition"] >= 1
    owner = result.owner
    assert owner.shape == (store.num_nodes,) and owner.min() >= 0 and owner.max() < p
    if name == "twops":
        assert stats["max_edge_load"] <= stats["edge_capacity"]  # |E| >= 20 p: never all full
    # deterministic, and independent of the chunk size
    again = fn(store, p, 3, chunk_edges=97)
    assert again.owner.tobytes() == owner.tobytes()
    assert again.stats == stats
    out = tmp_path / "book"
    out.mkdir()
    metrics = build_partitions(store, owner, p, out)
    assert sum(metrics["partition_owned"]) == store.num_nodes
    assert metrics["replication_factor"] >= 1


@pytest.mark.parametrize("name", EDGE_PARTITIONERS)
def test_partition_stage(tmp_path, gnnbench_home, name):
    rng = np.random.default_rng(1)
    store = make_store(tmp_path / "store", rng.integers(0, 60, size=(300, 2)), 60, node_data=True)
    book, cached = run_partition_stage(store, partitioner=PartitionSpec.defaults(name), p=4, seed=0)
    assert not cached
    assert book.metrics["replication_factor"] >= 1
    assert book.metrics["passes"] >= 1
    assert book.meta["stats"]["rf_edge_partition"] >= 1
    assert sum(book.meta["stats"]["edge_loads"]) == store.num_edges
