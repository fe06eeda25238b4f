"""FM refinement (gnnbench/partition/multilevel/fm.py) and quotient's refinement between its levels."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers.graphs import edge_cut, make_store, random_multigraph_store, start_owner

import gnnbench.partition.multilevel.fm as fm_module
from gnnbench.data.adjacency import AdjacencyStream
from gnnbench.partition.multilevel.fm import refine_nodes, refine_quotient
from gnnbench.partition.spec import PartitionSpec

BEST_KEYS = {"subparts_per_part": 8, "subpart_lp_passes": 3, "subpart_fm_passes": 3}
BEST_KEYS |= {"node_fm_passes": 3}


@pytest.fixture(scope="module")
def random_graph(tmp_path_factory):
    path = tmp_path_factory.mktemp("fm") / "store"
    return random_multigraph_store(path, seed=5, linked_nodes=600, num_edges=3000, isolated=30)


def test_node_fm_leaves_a_local_minimum_by_hand(triangles):
    """Triangles {0,1,2} {3,4,5}, bridge 2-3; start 0 0 1 1 1 0 (cut 4), p=2, bound 4.

    Gains: 5 -> 1 is +2 (cut 2); then 2 -> 0 is +1 (cut 1, sizes 3:3); then the best left is
    3 -> 0 at -1 (cut 2, block 0 at the bound), after which nothing fits: the pass rolls back
    to the best prefix of two moves. The second pass finds nothing better and ends.
    """
    owner = np.array([0, 0, 1, 1, 1, 0], dtype=np.int32)
    stats = refine_nodes(triangles, owner, 2, 5, seed=0)
    assert owner.tolist() == [0, 0, 0, 1, 1, 1]
    assert stats["node_fm_bound"] == 4
    assert (stats["node_fm_gain_1"], stats["node_fm_moves_1"]) == (3, 2)
    assert (stats["node_fm_gain_2"], stats["node_fm_moves_2"]) == (0, 0)
    assert "node_fm_gain_3" not in stats and stats["node_fm_stream_passes"] == 2


def test_node_fm_sheds_weight_from_a_block_facing_only_full_blocks(tmp_path):
    """A cycle 0..7 all in block 0 and an edge 8-9 in block 1: p=2, bound ceil(1.03 * 5) = 6.
    No node of block 0 has a neighbour outside it, so only a move to a block it does not touch
    can bring block 0 down to the bound: the pass makes two, adjacent (cut 2, not 4)."""
    cycle = [(v, (v + 1) % 8) for v in range(8)]
    store = make_store(tmp_path / "store", [*cycle, (8, 9)], 10)
    owner = np.array([0] * 8 + [1] * 2, dtype=np.int32)
    stats = refine_nodes(store, owner, 2, 3, seed=0)
    assert stats["node_fm_overfull_0"] == 2 and stats["node_fm_overfull_1"] == 0
    assert np.bincount(owner).tolist() == [6, 4] and edge_cut(store, owner) == 2


def test_quotient_fm_by_hand():
    """Path of sub-partitions a0 -4- a1 -1- a2 -4- a3, each of weight 1, start 0 1 0 1 (cut 9),
    p=2, bound max(2, ceil(1.03 * 2)) = 3: a1 or a2 first (gain 5, the seeded rank decides), then
    the other one (gain 3): {a0, a1} {a2, a3}, cut 1."""
    weights = np.zeros((4, 4), dtype=np.int64)
    for a, b, w in [(0, 1, 4), (1, 2, 1), (2, 3, 4)]:
        weights[a, b] = weights[b, a] = w
    for seed in (0, 1):
        part = np.array([0, 1, 0, 1], dtype=np.int64)
        stats = refine_quotient(weights, np.ones(4, dtype=np.int64), part, 2, 3, seed)
        assert part.tolist() == [0, 0, 1, 1] or part.tolist() == [1, 1, 0, 0]
        assert (stats["subpart_fm_cut_0"], stats["subpart_fm_cut_1"]) == (9, 1)
        assert stats["subpart_fm_cut_2"] == 1 and stats["subpart_fm_bound"] == 3


def blocks_over(sizes: np.ndarray, bound: int) -> int:
    return int(np.maximum(sizes - bound, 0).sum())


@pytest.mark.parametrize("window_entries", [64, fm_module.WINDOW_ENTRIES])
@pytest.mark.parametrize("p", [2, 4, 7])
@pytest.mark.parametrize("start", ["random", "hash"])
def test_node_fm_never_raises_the_cut_and_keeps_the_bound(
    random_graph, p, start, window_entries, monkeypatch
):
    """Any start, one window or many: no pass raises (weight over the bound ceil(1.03 |V| / p),
    cut), each pass's gain is exact, no block grows past max(its entry size, the bound), and the
    same seed gives the same owners. From a start within the bound the cut never rises."""
    monkeypatch.setattr(fm_module, "WINDOW_ENTRIES", window_entries)
    if window_entries == 64:  # windows of 64 entries, shifted on odd passes (else one window)
        monkeypatch.setattr(fm_module, "GLOBAL_ENTRIES", 0)
    n = random_graph.num_nodes
    owner = start_owner(random_graph, p, start)
    again = owner.copy()
    entry_sizes = np.bincount(owner, minlength=p)
    cut = edge_cut(random_graph, owner)
    bound = math.ceil(1.03 * n / p)
    stats = refine_nodes(random_graph, owner, p, 4, seed=3)
    assert stats["node_fm_bound"] == bound
    assert stats["node_fm_overfull_0"] == blocks_over(entry_sizes, bound)
    states = [(stats["node_fm_overfull_0"], cut)]
    for i in range(1, 5):
        if f"node_fm_gain_{i}" in stats:
            states.append(
                (stats[f"node_fm_overfull_{i}"], states[-1][1] - stats[f"node_fm_gain_{i}"])
            )
    assert states == sorted(states, reverse=True) and states[-1] < states[0]
    sizes = np.bincount(owner, minlength=p)
    assert states[-1] == (blocks_over(sizes, bound), edge_cut(random_graph, owner))
    assert (sizes <= np.maximum(entry_sizes, bound)).all()
    if states[0][0] == 0:
        assert states[-1][0] == 0 and states[-1][1] < cut
    assert refine_nodes(random_graph, again, p, 4, seed=3) == stats
    assert np.array_equal(again, owner)


@pytest.mark.parametrize("global_entries", [0, 1 << 22])
def test_node_fm_shifts_its_windows_on_odd_passes_above_the_global_size(
    random_graph, monkeypatch, global_entries
):
    """A CSR over GLOBAL_ENTRIES: windows of WINDOW_ENTRIES, the first one half as long on odd
    passes; within it: every pass one window of the whole CSR, as before the shift existed."""
    monkeypatch.setattr(fm_module, "GLOBAL_ENTRIES", global_entries)
    monkeypatch.setattr(fm_module, "WINDOW_ENTRIES", 64)
    calls: list[tuple[int, int]] = []
    blocks = AdjacencyStream.blocks

    def spy(self, order="id", seed=0, max_entries=0, first_entries=None):
        calls.append((max_entries, first_entries))
        return blocks(self, order, seed, max_entries, first_entries)

    monkeypatch.setattr(AdjacencyStream, "blocks", spy)
    refine_nodes(random_graph, start_owner(random_graph, 4, "hash"), 4, 4, seed=0)
    entries = 2 * random_graph.num_edges
    assert len(calls) >= 2
    if global_entries:
        assert set(calls) == {(entries, entries)}
    else:
        assert calls == [(64, 32 if i % 2 else 64) for i in range(1, len(calls) + 1)]


@pytest.mark.parametrize("p", [2, 3, 8])
@pytest.mark.parametrize("seed", [0, 1])
def test_quotient_fm_never_raises_the_cut_and_keeps_the_bound(p, seed):
    """Random weighted graphs of sub-partitions from random starts: as the node level."""
    rng = np.random.default_rng(seed)
    k = 60
    weights = np.triu(rng.integers(0, 5, size=(k, k)) * (rng.random((k, k)) < 0.2), 1)
    weights = weights + weights.T
    sizes = rng.integers(1, 20, size=k)
    part = rng.integers(0, p, size=k)
    start = part.copy()
    entry_loads = np.bincount(part, weights=sizes, minlength=p)
    bound = math.ceil(1.03 * sizes.sum() / p)
    stats = refine_quotient(weights, sizes, part, p, 4, seed)
    states = [
        (stats[f"subpart_fm_overfull_{i}"], stats[f"subpart_fm_cut_{i}"])
        for i in range(5)
        if f"subpart_fm_cut_{i}" in stats
    ]
    assert states == sorted(states, reverse=True) and states[-1] < states[0]
    loads = np.bincount(part, weights=sizes, minlength=p)
    cut = int(weights[part[:, None] != part[None, :]].sum()) // 2
    assert states[-1] == (blocks_over(loads, bound), cut)
    assert (loads <= np.maximum(entry_loads, bound)).all()
    again = start.copy()
    assert refine_quotient(weights, sizes, again, p, 4, seed) == stats
    assert np.array_equal(again, part)


@pytest.mark.parametrize("p", [2, 4, 8])
def test_quotient_refinement_levels_each_lower_the_cut(random_graph, p):
    """Through quotient: the LP pass lowers the sub-partitions' cut, FM on the quotient graph lowers
    METIS's cut, FM on the nodes lowers the projected one; deterministic per seed."""
    spec = PartitionSpec.defaults("quotient", **BEST_KEYS)
    result = spec.run(random_graph, p, 0)
    stats = result.stats
    assert stats["subpart_lp_cut"] <= stats["subpart_lp_cut_0"]
    assert stats["subpart_lp_cut"] == stats["subpart_cut_edges"]
    last = max(int(key.rsplit("_", 1)[1]) for key in stats if key.startswith("subpart_fm_cut_"))
    assert stats[f"subpart_fm_cut_{last}"] == stats["quotient_cut_edges"]
    node_gain = sum(stats[key] for key in stats if key.startswith("node_fm_gain_"))
    assert edge_cut(random_graph, result.owner) == stats["quotient_cut_edges"] - node_gain
    sizes = np.bincount(result.owner, minlength=p)
    assert sizes.max() <= stats["node_fm_bound"]  # METIS's split over, the FM brought it back
    again = spec.run(random_graph, p, 0)
    assert np.array_equal(again.owner, result.owner)
    plain = PartitionSpec.defaults("quotient", subparts_per_part=8).run(random_graph, p, 0)
    assert edge_cut(random_graph, result.owner) < edge_cut(random_graph, plain.owner)


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("subpart_lp_passes", -1, "a whole number"),
        ("subpart_fm_passes", 1.5, "a whole number"),
        ("node_fm_passes", -1, "a whole number"),
        ("quotient_ncuts", 0, "a whole number"),
        ("subpart_slack", 0.9, "a number >= 1, got 0.9"),
        ("subpart_slack", "2", "a number, got '2'"),
    ],
)
def test_bad_refinement_keys_are_one_line(random_graph, key, value, expected):
    from gnnbench.errors import ConfigError

    with pytest.raises(ConfigError, match=f"partitioner.{key}: expected {expected}"):
        PartitionSpec.defaults("quotient", **{key: value}).run(random_graph, 2, 0)


def test_quotient_best_is_quotient_with_its_refinement_and_shares_its_books():
    """The preset runs quotient with the refinement on; a job naming the same keys by hand finds
    the same book."""
    from gnnbench.partition.stage.book_identity import book_path

    preset = PartitionSpec.defaults("quotient_best")
    assert preset.name == "quotient"
    assert all(preset.params[key] > 0 for key in ("subpart_fm_passes", "node_fm_passes"))
    by_hand = PartitionSpec.defaults("quotient", **dict(preset.params))
    assert book_path("g", "f", preset, 4, 0) == book_path("g", "f", by_hand, 4, 0)
    assert book_path("g", "f", preset, 4, 0) != book_path(
        "g", "f", PartitionSpec.defaults("quotient"), 4, 0
    )
