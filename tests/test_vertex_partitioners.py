"""GREM, LDG and Fennel: hand-checked owners, invariants, determinism, the on-disk adjacency."""

from __future__ import annotations

import gc
import math

import numpy as np
import pytest
from helpers.configured import configured
from helpers.graphs import edge_cut, make_store

from gnnbench.data.adjacency import INDICES_FILE, adjacency_scope, ensure_adjacency
from gnnbench.data.store import GraphStore
from gnnbench.errors import ConfigError
from gnnbench.partition.spec import PartitionSpec
from gnnbench.partition.stage.runner import run_partition_stage

grem, ldg, fennel = configured("grem"), configured("ldg"), configured("fennel")

ALGORITHMS = {"grem": grem, "ldg": ldg, "fennel": fennel}

try:
    from pymetis import CSRAdjacency  # noqa: F401

    HAVE_PYMETIS = True
except ImportError:
    HAVE_PYMETIS = False


@pytest.fixture(scope="module")
def random_store(tmp_path_factory) -> GraphStore:
    rng = np.random.default_rng(7)
    edges = rng.integers(0, 580, size=(3000, 2))
    # ids 580..599 are isolated
    return make_store(tmp_path_factory.mktemp("random") / "store", edges, 600)


def grem_part_bounds(n: int, p: int) -> list[int]:
    """Largest size each part can reach: ceil(n_group * k_side / k) at every bisection."""
    bounds = [0] * p

    def split(first: int, k: int, most: int) -> None:
        if k == 1:
            bounds[first] = most
            return
        k0 = k // 2
        split(first, k0, -(-most * k0 // k))
        split(first + k0, k - k0, -(-most * (k - k0) // k))

    split(0, p, n)
    return bounds


# --- hand-checked owners ---------------------------------------------------------------------


def test_ldg_by_hand(triangles):
    # C = 1.05 * 6 / 2 = 3.15; score_i = |N(v) ∩ P_i| * (1 - |P_i| / C); id order.
    # v0: no placed neighbours, scores (0, 0), tie -> smaller partition, then lower index: P0.
    # v1: counts (1, 0), sizes (1, 0): scores (1 * (1 - 1/3.15) = 0.683, 0) -> P0.
    # v2: counts (2, 0), sizes (2, 0): scores (2 * (1 - 2/3.15) = 0.730, 0) -> P0.
    # v3: counts (1, 0), sizes (3, 0): scores (1 * (1 - 3/3.15) = 0.048, 0) -> P0 (3 < C).
    # v4: P0 is full (4 >= 3.15) and excluded -> P1.  v5: likewise -> P1.
    result = ldg(triangles, 2, 0)
    assert result.owner.tolist() == [0, 0, 0, 0, 1, 1]
    assert result.stats["capacity"] == pytest.approx(3.15)
    assert result.stats["passes"] == 1 + result.stats["adjacency_build_passes"]


def test_fennel_by_hand(triangles):
    # alpha = sqrt(2) * 7 / 6^1.5 = 0.67358, gamma = 1.5: penalty(s) = 1.01036 * sqrt(s);
    # score_i = |N(v) ∩ P_i| - penalty(|P_i|); C = 3.15; id order.
    # v0: scores (0, 0), tie -> P0.                         sizes (1, 0)
    # v1: counts (1, 0): (1 - 1.01036 = -0.01036, 0) -> P1.  sizes (1, 1)
    # v2: counts (1, 1): (-0.01036, -0.01036), tie, equal sizes -> lower index P0.  (2, 1)
    # v3: counts (1, 0): (1 - 1.42887 = -0.42887, -1.01036) -> P0.  sizes (3, 1)
    # v4: counts (1, 0): (1 - 1.75 = -0.75, -1.01036) -> P0 (3 < C).  sizes (4, 1)
    # v5: P0 is full (4 >= 3.15) and excluded -> P1.
    result = fennel(triangles, 2, 0)
    assert result.owner.tolist() == [0, 1, 0, 0, 0, 1]
    assert result.stats["alpha"] == pytest.approx(math.sqrt(2) * 7 / 6**1.5)


# Stream order of the GREM example; chunk_fraction 0.25 of 8 edges = chunks of 2 edges.
GREM_EDGES = [(0, 1), (2, 3), (1, 2), (1, 3), (4, 5), (5, 6), (6, 7), (0, 7)]


def test_grem_by_hand(tmp_path):
    # p = 2, caps ceil(8 / 2) = 4 per side; seed method bfs.
    # chunk 1 (0,1),(2,3): BFS from node 0 reaches 1 last, so BFS from 1: order 1, 0, then the
    #   next component 2, 3; side 0 takes round(4 / 2) = 2 nodes: {0, 1}; side 1: {2, 3}.
    #   Stored (side-0, side-1) counts: 0 (1,0), 1 (1,0), 2 (0,1), 3 (0,1).
    # chunk 2 (1,2),(1,3): all assigned. Node 1: new (0,2), stored ((1+0)/2, (0+2)/2) =
    #   (0.5, 1.0) -> side 1 has room (2 < 4): refinement move. Nodes 2, 3: new (0,1), stored
    #   (0,1): stay. Loads (1, 3).
    # chunk 3 (4,5),(5,6): no assigned neighbour; grown from 4: counts (0,0) -> lighter side 0
    #   (load 1 vs 3); 5: (1,0) -> 0; 6: (1,0) -> 0. Loads (4, 3).
    # chunk 4 (6,7),(0,7): 7 has counts (2,0) but side 0 is full -> side 1. Node 0: new (0,1),
    #   stored (0.5, 0.5): tie, stays. Node 6 likewise.
    store = make_store(tmp_path / "store", GREM_EDGES, 8)
    result = grem(store, 2, 0, chunk_fraction=0.25, seed_method="bfs")
    assert result.owner.tolist() == [0, 1, 1, 1, 0, 0, 0, 1]
    assert result.stats["refinement_moves"] == 1
    assert result.stats["passes"] == 1
    assert result.stats["seed_method"] == "bfs"
    assert result.stats["chunk_edges"] == 2


@pytest.mark.skipif(not HAVE_PYMETIS, reason="pymetis >= 2025.2 not installed")
def test_grem_pymetis_seed_finds_the_bridge(triangles):
    # The first chunk is the whole graph: METIS bisects it at the bridge.
    result = grem(triangles, 2, 0, chunk_fraction=1.0)
    assert result.stats["seed_method"] == "pymetis"
    assert edge_cut(triangles, result.owner) == 1
    assert sorted(np.bincount(result.owner).tolist()) == [3, 3]


# --- invariants ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
@pytest.mark.parametrize("p", [2, 3, 5, 8])
def test_invariants(random_store, name, p):
    params = {"seed_method": "bfs"} if name == "grem" else {}
    first = ALGORITHMS[name](random_store, p, 3, **params)
    again = ALGORITHMS[name](random_store, p, 3, **params)
    owner = first.owner
    n = random_store.num_nodes
    assert owner.shape == (n,) and owner.min() >= 0 and owner.max() < p
    assert owner.tobytes() == again.owner.tobytes()
    sizes = np.bincount(owner, minlength=p)
    if name == "grem":
        assert (sizes <= grem_part_bounds(n, p)).all()
        assert first.stats["passes"] == math.ceil(math.log2(p))
    else:
        assert sizes.max() < 1.05 * n / p + 1
        # every call builds the CSR it streams (nothing is cached in the store between runs)
        assert again.stats["adjacency_build_passes"] >= 1
        assert again.stats["passes"] == 1 + again.stats["adjacency_build_passes"]
    assert edge_cut(random_store, owner) < random_store.num_edges * (1 - 1 / p)  # beats random


@pytest.mark.parametrize("seed_method", ["auto", "bfs"])
@pytest.mark.parametrize("p", [2, 3, 5, 8])
def test_grem_proportional_caps_small_chunks(random_store, p, seed_method):
    result = grem(random_store, p, 0, chunk_fraction=0.01, seed_method=seed_method)
    sizes = np.bincount(result.owner, minlength=p)
    assert (sizes <= grem_part_bounds(random_store.num_nodes, p)).all()
    assert result.stats["chunk_edges"] == math.ceil(0.01 * random_store.num_edges)
    assert result.stats["refinement_moves"] > 0
    assert result.stats["seeded_groups"] == p - 1


def test_grem_without_chunk_refinement_only_places(random_store):
    """chunk_refinement=false: the same placement, no moves (claim 7's refinement half)."""
    placed = grem(random_store, 4, 0, chunk_fraction=0.01, chunk_refinement=False)
    refined = grem(random_store, 4, 0, chunk_fraction=0.01)
    assert placed.stats["refinement_moves"] == 0 < refined.stats["refinement_moves"]
    assert placed.owner.tobytes() != refined.owner.tobytes()
    sizes = np.bincount(placed.owner, minlength=4)
    assert (sizes <= grem_part_bounds(random_store.num_nodes, 4)).all()


@pytest.mark.parametrize("order", ["id", "random"])
def test_node_stream_orders(random_store, order):
    a = ldg(random_store, 4, 1, order=order)
    b = ldg(random_store, 4, 1, order=order)
    assert a.owner.tobytes() == b.owner.tobytes()
    if order == "random":
        assert ldg(random_store, 4, 2, order=order).owner.tobytes() != a.owner.tobytes()


@pytest.mark.fault("config: impossible partitioner parameters")
def test_bad_params(triangles):
    """Impossible GREM, LDG and Fennel parameters (chunk_fraction=0, an unknown seed_method,
    chunk_refinement not true or false, capacity_factor=0.9, an unknown order) are each a
    ConfigError naming the parameter."""
    with pytest.raises(ConfigError, match="chunk_fraction"):
        grem(triangles, 2, 0, chunk_fraction=0)
    with pytest.raises(ConfigError, match="seed_method"):
        grem(triangles, 2, 0, seed_method="kl")
    with pytest.raises(ConfigError, match="chunk_refinement: expected true or false"):
        grem(triangles, 2, 0, chunk_refinement="no")
    with pytest.raises(ConfigError, match="capacity_factor"):
        ldg(triangles, 2, 0, capacity_factor=0.9)
    with pytest.raises(ConfigError, match="order"):
        fennel(triangles, 2, 0, order="degree")


# --- the on-disk adjacency ------------------------------------------------------------------


def test_adjacency_bucketed_build_reused_in_scope_then_deleted(random_store):
    before = sorted(random_store.path.parent.rglob("*"))
    with adjacency_scope():
        stream = ensure_adjacency(random_store, max_entries=1000)  # 6000 entries: several buckets
        assert stream.build_passes >= 6
        assert stream.directory.parent == random_store.path.parent  # beside the store, not in it
        indptr, indices = random_store.csr()
        np.testing.assert_array_equal(stream.indptr, indptr)
        np.testing.assert_array_equal(np.load(stream.directory / INDICES_FILE), indices)
        assert ensure_adjacency(random_store).build_passes == 0  # the scope's build, reused
    assert sorted(random_store.path.parent.rglob("*")) == before  # deleted with the scope
    unscoped = ensure_adjacency(random_store)
    assert unscoped.build_passes >= 1 and unscoped.directory.is_dir()
    for order in ("id", "random"):
        seen = np.zeros(random_store.num_nodes, dtype=np.int64)
        for block in unscoped.blocks(order, seed=0, max_entries=500):
            for i, v in enumerate(block.nodes):
                row = block.indices[block.starts[i] : block.stops[i]]
                np.testing.assert_array_equal(row, indices[indptr[v] : indptr[v + 1]])
                seen[v] += 1
        assert (seen == 1).all()
    directory, unscoped, block = unscoped.directory, None, None
    gc.collect()
    assert not directory.exists()  # deleted with its stream


def test_a_shorter_first_window_shifts_the_id_windows(random_store):
    """`first_entries` bounds only the first window: every node once, in id order, each later
    window within the budget, and the cuts between windows moved (what the node FM's odd
    passes use)."""
    stream = ensure_adjacency(random_store)

    def starts(**first) -> list[int]:
        blocks = list(stream.blocks("id", max_entries=1000, **first))
        sizes = [int(block.stops[-1]) for block in blocks]
        nodes = np.concatenate([block.nodes for block in blocks])
        np.testing.assert_array_equal(nodes, np.arange(random_store.num_nodes))
        assert max(sizes[1:]) <= 1000 and sizes[0] <= first.get("first_entries", 1000)
        return [int(block.nodes[0]) for block in blocks]

    whole, shifted = starts(), starts(first_entries=500)
    assert whole[0] == shifted[0] == 0 and not set(whole[1:]) & set(shifted[1:])


# --- through the measured stage --------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_partition_stage(triangles, gnnbench_home, name):
    book, cached = run_partition_stage(
        triangles, partitioner=PartitionSpec.defaults(name), p=2, seed=0
    )
    assert not cached
    assert book.metrics["passes"] >= 1
    assert book.metrics["partition_peak_mb"] > 0
    owner = book.owner()
    assert owner.shape == (6,) and set(owner.tolist()) <= {0, 1}
