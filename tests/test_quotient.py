"""Quotient partitioner: streaming sub-partitions, METIS on their quotient graph."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers.graphs import edge_cut, make_store

from gnnbench.errors import ConfigError
from gnnbench.partition.algorithms.quotient import metis_on_quotient, quotient_weights
from gnnbench.partition.spec import PartitionSpec

# two 4-cliques {0..3} and {4..7} joined by the edge 3-4
CLIQUES = [*itertools.combinations(range(4), 2), *itertools.combinations(range(4, 8), 2), (3, 4)]


@pytest.fixture
def cliques(tmp_path):
    return make_store(tmp_path / "cliques", CLIQUES, 8)


def test_quotient_graph_and_its_split_by_hand(cliques):
    """Sub-partitions {0,1} {2,3} {4,5} {6,7}: inside a clique two sub-partitions share 2 x 2 = 4
    edges, the bridge 3-4 joins sub-partitions 1 and 2. METIS into 2 parts of 4 nodes cuts the
    bridge alone: {0, 1} and {2, 3}."""
    sub = np.repeat(np.arange(4), 2)
    weights = quotient_weights(cliques, sub, 4)
    assert weights.tolist() == [[0, 4, 0, 0], [4, 0, 1, 0], [0, 1, 0, 4], [0, 0, 4, 0]]
    part = metis_on_quotient(weights, np.bincount(sub), 2, seed=0)
    assert part[0] == part[1] != part[2] == part[3]


@pytest.mark.parametrize("p", [2, 3])
def test_quotient_run_keeps_its_promises(cliques, p):
    """Edges inside a sub-partition are never cut, so the owners' cut is the quotient's."""
    spec = PartitionSpec.defaults("quotient", subparts_per_part=2)
    result = spec.run(cliques, p, 0)
    assert result.owner.shape == (8,) and set(result.owner.tolist()) <= set(range(p))
    stats = result.stats
    assert edge_cut(cliques, result.owner) == stats["quotient_cut_edges"]
    assert stats["quotient_cut_edges"] <= stats["subpart_cut_edges"]
    assert stats["subparts"] == 2 * p and stats["passes"] == stats["base_passes"] + 1
    again = spec.run(cliques, p, 0)  # the first run also built the CSR: one pass fewer now
    assert np.array_equal(again.owner, result.owner)
    assert again.stats["quotient_cut_edges"] == stats["quotient_cut_edges"]


def test_subparts_are_capped_by_the_node_count(cliques):
    result = PartitionSpec.defaults("quotient", subparts_per_part=32).run(cliques, 2, 0)
    assert result.stats["subparts"] == 8  # one node each: METIS on the graph itself
    assert sorted(np.bincount(result.owner)) == [4, 4]


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"base": "metis"}, "partitioner.base: expected a streaming partitioner"),
        ({"base": "quotient"}, "partitioner.base: expected a streaming partitioner"),
        ({"base": "nope"}, "nope"),
        ({"base_keys": [1]}, "partitioner.base_keys: expected a mapping"),
        ({"base_keys": {"buffer_nodes": 8}}, "buffer_nodes"),  # not a key of ldg
        ({"subparts_per_part": 0}, "partitioner.subparts_per_part"),
        ({"base_keys": {"refine_passes": 2}}, "refine_passes is a shared key"),
    ],
)
def test_bad_quotient_keys_are_one_line(cliques, keys, message):
    with pytest.raises(ConfigError, match=message):
        PartitionSpec.defaults("quotient", **keys).run(cliques, 2, 0)


def test_quotient_through_the_stage_with_replication_refinement(cliques, gnnbench_home):
    from gnnbench.partition.stage.runner import run_partition_stage

    plain = PartitionSpec.defaults("quotient", subparts_per_part=2)
    refined = PartitionSpec.defaults(
        "quotient", subparts_per_part=2, refine_passes=3, refine_objective="replication"
    )
    before, _ = run_partition_stage(cliques, partitioner=plain, p=2, seed=0)
    after, cached = run_partition_stage(cliques, partitioner=refined, p=2, seed=0)
    assert not cached
    stats = before.meta["stats"]
    assert before.metrics["edge_cut"] * cliques.num_edges == stats["quotient_cut_edges"]
    assert after.metrics["replication_factor"] <= before.metrics["replication_factor"]
    assert "refine_halo_0" in after.meta["stats"]  # the objective reached the post-pass


def test_quotient_books_follow_the_base(monkeypatch):
    """The cache key holds the base's identity (its config defaults) and its code version."""
    import gnnbench.partition.algorithms.ldg as ldg_module
    from gnnbench.partition.stage.book_identity import book_path

    def path(**keys):
        return book_path("g", "f", PartitionSpec.defaults("quotient", **keys), 4, 0)

    first = path()
    assert path(base_keys={"passes": 2}) != first
    assert path(chunk_edges=1000, base="grem", base_keys={}) != path(base="grem", base_keys={})
    monkeypatch.setattr(ldg_module, "VERSION", "next")
    assert path() != first


def test_quotient_with_one_part_or_no_quotient_edges(tmp_path):
    store = make_store(tmp_path / "loose", [(0, 1), (2, 3), (4, 5)], 9)  # pairs, 3 isolated
    one = PartitionSpec.defaults("quotient").run(store, 1, 0)
    assert one.owner.tolist() == [0] * 9
    sub = np.array([0, 0, 1, 1, 2, 2, 3, 4, 5])  # no edge between sub-partitions
    weights = quotient_weights(store, sub, 6)
    assert not weights.any()
    part = metis_on_quotient(weights, np.bincount(sub), 2, seed=0)
    loads = np.bincount(part, weights=np.bincount(sub), minlength=2)
    assert loads.tolist() in ([5, 4], [4, 5])  # largest first onto the lightest part
