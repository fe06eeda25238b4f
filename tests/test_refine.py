"""Refinement post-pass (partitioner.refine_passes): cut never grows, balance bound, the stage."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers.graphs import edge_cut, make_store, random_multigraph_store, start_owner

from gnnbench.errors import ConfigError
from gnnbench.partition.base import PartitionResult
from gnnbench.partition.refine import refine, refine_result
from gnnbench.partition.spec import PartitionSpec
from gnnbench.partition.stage.book_identity import book_path
from gnnbench.partition.stage.runner import run_partition_stage


@pytest.fixture(scope="module")
def random_graph(tmp_path_factory):
    path = tmp_path_factory.mktemp("random") / "store"
    return random_multigraph_store(path, seed=3, linked_nodes=400, num_edges=2400, isolated=20)


def test_refine_by_hand(triangles):
    """Triangles {0,1,2} and {3,4,5}, bridge 2-3; start 0 0 1 1 1 0 (cut 4), p=2, bound 4.

    Pass 1 in id order: 0 and 1 see one neighbour on each side: stay. 2 sees two in block 0,
    one in 1, block 0 has room (3 + 1 <= 4): moves (cut 3). 3 sees two in block 0, but block 0
    is at the bound (4 + 1 > 4): stays. 4 sees one on each side: stays. 5 sees none in its
    block 0, two in 1: moves (cut 1). Pass 2 moves nothing and ends the refinement.
    """
    owner = np.array([0, 0, 1, 1, 1, 0], dtype=np.int32)
    stats = refine(triangles, owner, 2, 5)
    assert owner.tolist() == [0, 0, 0, 1, 1, 1]
    assert stats["refine_bound"] == 4
    assert (stats["refine_cut_0"], stats["refine_moves_1"], stats["refine_cut_1"]) == (4, 2, 1)
    assert (stats["refine_moves_2"], stats["refine_cut_2"]) == (0, 1)
    assert "refine_moves_3" not in stats and stats["refine_stream_passes"] == 2


def test_same_cut_move_only_towards_balance(tmp_path):
    """Path 0-1-2-3-4, start 0 0 0 0 1 (sizes 4:1, cut 1), p=2, bound max(4, ceil(2.575)) = 4.

    Pass 1: 3 sees one neighbour in each block; block 1 is smaller (1 + 1 < 4): it moves at
    the same cut (sizes 3:2). Pass 2: 2 now sees one in each block, but 2 + 1 < 3 fails: stays.
    """
    path = make_store(tmp_path / "path", [(0, 1), (1, 2), (2, 3), (3, 4)], 5)
    owner = np.array([0, 0, 0, 0, 1], dtype=np.int32)
    stats = refine(path, owner, 2, 5)
    assert owner.tolist() == [0, 0, 0, 1, 1]
    assert (stats["refine_cut_0"], stats["refine_moves_1"], stats["refine_cut_1"]) == (1, 1, 1)
    assert stats["refine_moves_2"] == 0 and stats["refine_stream_passes"] == 2


@pytest.mark.parametrize("p", [2, 4, 7])
@pytest.mark.parametrize("start", ["random", "hash"])
def test_refine_never_worsens_and_keeps_the_bound(random_graph, p, start):
    n = random_graph.num_nodes
    owner = start_owner(random_graph, p, start)
    before = edge_cut(random_graph, owner)
    entry_max = np.bincount(owner, minlength=p).max()
    again = owner.copy()
    stats = refine(random_graph, owner, p, 4)
    after = edge_cut(random_graph, owner)
    assert stats["refine_cut_0"] == before
    last = max(int(key.rsplit("_", 1)[1]) for key in stats if key.startswith("refine_cut_"))
    assert stats[f"refine_cut_{last}"] == after
    cuts = [stats[f"refine_cut_{i}"] for i in range(last + 1)]
    assert cuts == sorted(cuts, reverse=True) and after < before
    sizes = np.bincount(owner, minlength=p)
    assert sizes.max() <= entry_max or sizes.max() <= math.ceil(1.03 * n / p)
    bound = max(entry_max, math.ceil(1.03 * n / p))
    assert np.bincount(owner, minlength=p).max() <= bound == stats["refine_bound"]
    assert refine(random_graph, again, p, 4) == stats and np.array_equal(again, owner)


@pytest.mark.parametrize("value", [-1, 1.5, True, "2"])
def test_bad_refine_passes(value):
    with pytest.raises(ConfigError, match="partitioner.refine_passes: expected a whole number"):
        PartitionSpec.defaults("ldg", refine_passes=value)


def test_refine_passes_is_shared_not_an_algorithm_parameter():
    spec = PartitionSpec.defaults("ldg", refine_passes=2)
    assert spec.refine_passes == 2 and "refine_passes" not in spec.kwargs()
    assert PartitionSpec.defaults("ldg").refine_passes == 0


def test_refine_result_adds_passes_and_keeps_the_partitioners_array(triangles):
    start = np.array([0, 0, 1, 1, 1, 0], dtype=np.int32)
    result = refine_result(triangles, PartitionResult(start, {"passes": 1}), 2, 1)
    assert start.tolist() == [0, 0, 1, 1, 1, 0]  # refined a copy
    assert result.owner.tolist() == [0, 0, 0, 1, 1, 1]
    assert result.stats["passes"] == 2 and result.stats["refine_moves_1"] == 2


def test_refined_books_are_keyed_by_the_refinement_version(monkeypatch):
    import gnnbench.partition.refine as refine_module

    plain = PartitionSpec.defaults("ldg", refine_passes=0)
    refined = PartitionSpec.defaults("ldg", refine_passes=2)
    before = book_path("g", "f", refined, 4, 0), book_path("g", "f", plain, 4, 0)
    monkeypatch.setattr(refine_module, "REFINE_VERSION", "next")
    after = book_path("g", "f", refined, 4, 0), book_path("g", "f", plain, 4, 0)
    assert before[0] != after[0] and before[1] == after[1]


def test_partition_stage_refines_inside_the_measured_step(triangles, gnnbench_home):
    plain = PartitionSpec.defaults("hash")
    refined = PartitionSpec.defaults("hash", refine_passes=2)
    fp = triangles.fingerprint
    assert book_path("tiny", fp, plain, 2, 0) != book_path("tiny", fp, refined, 2, 0)
    before, _ = run_partition_stage(triangles, partitioner=plain, p=2, seed=0)
    after, cached = run_partition_stage(triangles, partitioner=refined, p=2, seed=0)
    assert not cached
    stats = after.meta["stats"]
    assert stats["refine_cut_0"] == round(before.metrics["edge_cut"] * triangles.num_edges)
    last = stats["refine_stream_passes"]
    assert after.metrics["edge_cut"] * triangles.num_edges == pytest.approx(
        stats[f"refine_cut_{last}"]
    )
    assert after.metrics["edge_cut"] <= before.metrics["edge_cut"]
    assert after.metrics["passes"] == before.metrics["passes"] + last


def halo_count(store, owner):
    """H = sum over nodes of the blocks other than their own holding a neighbour, from scratch:
    RF = 1 + H / |V| (DESIGN.md's sum_i |O_i ∪ N(O_i)| / |V|)."""
    edges = store.edges()
    edges = edges[edges[:, 0] != edges[:, 1]]
    ends = np.concatenate([edges, edges[:, ::-1]])  # (node, neighbour), both directions
    pairs = np.unique(ends[:, 0].astype(np.int64) * 64 + owner[ends[:, 1]])
    nodes, blocks = np.divmod(pairs, 64)
    return int((owner[nodes] != blocks).sum())


def test_replication_refine_by_hand(tmp_path):
    """Edges 0-1, 0-2, 0-3, 2-4, 3-4; start 0 0 1 1 0 (blocks {0,1,4} and {2,3}), p=2, bound 3.

    H on entry 4 (nodes 0, 2, 3, 4 each see the other block), cut 4. Pass 1: node 0 sees one
    neighbour in its block and two in block 1, so the cut rule would move it; here moving it adds
    block 1 to node 1's halo and removes nothing (2 and 3 keep node 4 in block 0): dH = +1, stays.
    1 has no neighbour outside; 2 and 3 would enter block 0, full (3 + 1 > 3). 4 sees only block
    1: moving it drops its own halo entry (dH = -1, cut -2). Pass 2: 0 would enter the now full
    block 1; 2 and 3 moving to block 0 would put block 0 into node 4's halo (dH = +1): no move.
    The cut rule ends at H 5, cut 3 from the same start; this ends at H 3, cut 2.
    """
    graph = make_store(tmp_path / "g", [(0, 1), (0, 2), (0, 3), (2, 4), (3, 4)], 5)
    owner = np.array([0, 0, 1, 1, 0], dtype=np.int32)
    stats = refine(graph, owner, 2, 5, "replication")
    assert owner.tolist() == [0, 0, 1, 1, 1] and halo_count(graph, owner) == 3
    assert (stats["refine_halo_0"], stats["refine_cut_0"]) == (4, 4)
    assert (stats["refine_moves_1"], stats["refine_halo_1"], stats["refine_cut_1"]) == (1, 3, 2)
    assert stats["refine_moves_2"] == 0 and stats["refine_stream_passes"] == 3  # + the counts
    by_cut = np.array([0, 0, 1, 1, 0], dtype=np.int32)
    refine(graph, by_cut, 2, 5)
    assert by_cut.tolist() == [1, 0, 1, 1, 0] and halo_count(graph, by_cut) == 5


@pytest.mark.parametrize("p", [2, 4, 7])
@pytest.mark.parametrize("start", ["random", "hash"])
def test_replication_refine_never_raises_the_halo_and_keeps_the_bound(random_graph, p, start):
    n = random_graph.num_nodes
    owner = start_owner(random_graph, p, start)
    before_halo, before_cut = halo_count(random_graph, owner), edge_cut(random_graph, owner)
    entry_max = np.bincount(owner, minlength=p).max()
    again = owner.copy()
    stats = refine(random_graph, owner, p, 4, "replication")
    assert (stats["refine_halo_0"], stats["refine_cut_0"]) == (before_halo, before_cut)
    last = max(int(key.rsplit("_", 1)[1]) for key in stats if key.startswith("refine_halo_"))
    assert stats[f"refine_halo_{last}"] == halo_count(random_graph, owner)  # tracked exactly
    assert stats[f"refine_cut_{last}"] == edge_cut(random_graph, owner)
    halos = [stats[f"refine_halo_{i}"] for i in range(last + 1)]
    assert halos == sorted(halos, reverse=True) and halos[-1] < before_halo
    bound = max(entry_max, math.ceil(1.03 * n / p))
    assert np.bincount(owner, minlength=p).max() <= bound == stats["refine_bound"]
    assert refine(random_graph, again, p, 4, "replication") == stats  # deterministic
    assert np.array_equal(again, owner)


def test_replication_refine_counts_saturate_without_breaking_the_halo(tmp_path):
    """A hub with 299 and 300 neighbours in two blocks: both its uint8 counts stop at 255; the
    halo and the cut are still tracked exactly."""
    leaves = np.arange(1, 600)
    edges = np.stack([np.zeros(599, dtype=np.int64), leaves], axis=1)
    edges = np.concatenate([edges, np.stack([leaves[:-1], leaves[1:]], axis=1)])  # a leaf path
    graph = make_store(tmp_path / "hub", edges, 600)
    owner = (np.arange(600) >= 300).astype(np.int32)
    owner[0] = 1
    stats = refine(graph, owner, 2, 4, "replication")
    assert stats["refine_saturated_counts"] == 2  # the hub's: without the cap they would wrap
    last = max(int(key.rsplit("_", 1)[1]) for key in stats if key.startswith("refine_halo_"))
    assert stats[f"refine_halo_{last}"] == halo_count(graph, owner)
    assert stats[f"refine_cut_{last}"] == edge_cut(graph, owner)


@pytest.mark.parametrize("value", ["rf", "", None, 1])
def test_bad_refine_objective(value):
    with pytest.raises(ConfigError, match="partitioner.refine_objective: expected one of"):
        PartitionSpec.defaults("ldg", refine_objective=value)


def test_refine_objective_keys_refined_books_only():
    def path(**keys):
        return book_path("g", "f", PartitionSpec.defaults("ldg", **keys), 4, 0)

    assert path(refine_objective="replication") == path()  # no passes: nothing refined
    assert path(refine_passes=2, refine_objective="edge_cut") == path(refine_passes=2)
    assert path(refine_passes=2, refine_objective="replication") != path(refine_passes=2)


def test_partition_stage_refines_the_replication_factor(triangles, gnnbench_home):
    start = PartitionSpec.defaults("hash")
    refined = PartitionSpec.defaults("hash", refine_passes=3, refine_objective="replication")
    before, _ = run_partition_stage(triangles, partitioner=start, p=2, seed=0)
    after, _ = run_partition_stage(triangles, partitioner=refined, p=2, seed=0)
    stats = after.meta["stats"]
    n = triangles.num_nodes
    last = max(int(key.rsplit("_", 1)[1]) for key in stats if key.startswith("refine_halo_"))
    assert before.metrics["replication_factor"] == pytest.approx(1 + stats["refine_halo_0"] / n)
    assert after.metrics["replication_factor"] == pytest.approx(
        1 + stats[f"refine_halo_{last}"] / n
    )
    assert after.metrics["replication_factor"] <= before.metrics["replication_factor"]
