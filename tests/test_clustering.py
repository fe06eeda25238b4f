"""Label-propagation coarsening (gnnbench/partition/multilevel/clustering.py) and quotient's multilevel mode
(`partitioner.coarsening=clusters`)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers.graphs import edge_cut, make_store, random_multigraph_store

from gnnbench.data.adjacency import ensure_adjacency
from gnnbench.errors import ConfigError
from gnnbench.partition.algorithms import quotient as quotient_module
from gnnbench.partition.multilevel import clustering, contraction
from gnnbench.partition.multilevel.clustering import coarsen
from gnnbench.partition.multilevel.contraction import UNIT, CoarseGraph, coarse_graph
from gnnbench.partition.spec import PartitionSpec

MULTILEVEL = {"coarsening": "clusters", "subparts_per_part": 4, "coarse_nodes": 16}


def cliques(count: int, size: int) -> list[tuple[int, int]]:
    """`count` cliques of `size` nodes, clique i's last node tied to clique i + 1's first."""
    edges = []
    for c in range(count):
        members = range(c * size, (c + 1) * size)
        edges += list(itertools.combinations(members, 2))
        if c + 1 < count:
            edges.append(((c + 1) * size - 1, (c + 1) * size))
    return edges


@pytest.fixture(scope="module")
def chain_of_cliques(tmp_path_factory):
    return make_store(tmp_path_factory.mktemp("cliques") / "store", cliques(8, 6), 48)


@pytest.fixture(scope="module")
def random_graph(tmp_path_factory):
    path = tmp_path_factory.mktemp("random") / "store"
    return random_multigraph_store(path, seed=3, linked_nodes=500, num_edges=2500, isolated=20)


def test_clusters_find_the_cliques(chain_of_cliques):
    """With room for one clique, every clique becomes one cluster: the 7 bridges are all the
    coarse graph holds, each of weight 1 both ways."""
    [level] = coarsen(ensure_adjacency(chain_of_cliques), 6, passes=5, coarse_nodes=10, seed=0)
    clusters = level.label.reshape(8, 6)
    assert (clusters == clusters[:, :1]).all() and len(set(clusters[:, 0])) == 8
    graph = level.graph
    assert graph.node_weights.tolist() == [6] * 8
    assert len(graph.indices) == 14 and graph.edge_weights.tolist() == [1] * 14


def test_a_graph_within_coarse_nodes_is_its_own_coarsest_level(chain_of_cliques):
    """48 nodes under coarse_nodes=48: no clustering, the one level is the graph itself (every
    node its own coarse node, every edge of weight 1), which METIS then splits as it is."""
    [level] = coarsen(ensure_adjacency(chain_of_cliques), 6, passes=5, coarse_nodes=48, seed=0)
    assert level.label.tolist() == list(range(48))
    graph = level.graph
    assert graph.node_weights.tolist() == [1] * 48
    assert len(graph.indices) == 2 * chain_of_cliques.num_edges
    assert (graph.edge_weights == 1).all()


def test_clusters_respect_the_cap_and_the_coarse_graph_adds_up(random_graph):
    """Every cluster within the cap at every level; each coarse graph is symmetric, its node
    weights sum to |V| and its edge weights to the edges the clusters cut (both directions)."""
    adjacency = ensure_adjacency(random_graph)
    levels = coarsen(adjacency, 9, passes=4, coarse_nodes=20, seed=1)
    assert len(levels) >= 2
    finest = np.arange(random_graph.num_nodes)
    for level in levels:
        graph = level.graph
        finest = level.label[finest]
        assert graph.node_weights.max() <= 9 and graph.node_weights.sum() == 520
        assert (
            np.bincount(finest, minlength=graph.num_nodes).tolist() == graph.node_weights.tolist()
        )
        dense = np.zeros((graph.num_nodes, graph.num_nodes), dtype=np.int64)
        rows = np.repeat(np.arange(graph.num_nodes), np.diff(graph.indptr))
        dense[rows, graph.indices] = graph.edge_weights
        assert (dense == dense.T).all() and not dense.diagonal().any()
        assert dense.sum() == 2 * edge_cut(random_graph, finest.astype(np.int32))


@pytest.mark.parametrize("window", [7, 64, 1 << 21])
@pytest.mark.parametrize("weighted", [False, True])
def test_coarse_graph_is_every_crossing_pair_summed(
    random_graph, monkeypatch, tmp_path, window, weighted
):
    """Against a dictionary over every CSR entry: the same pairs, the same summed weights, rows
    sorted, whatever the window (7 entries: many windows, each spilled over many ranges of
    source clusters of a quarter window's bound each); the spill files are gone after."""
    monkeypatch.setattr(contraction, "RANGE_ENTRIES", max(1, window // 4))
    adjacency = ensure_adjacency(random_graph)
    rng = np.random.default_rng(5)
    label = rng.integers(0, 40, size=random_graph.num_nodes).astype(np.int32)
    nodes = np.arange(random_graph.num_nodes)
    indptr, indices = adjacency.indptr, np.concatenate([b.indices for b in adjacency.blocks()])
    entry_weights = rng.integers(1, 5, size=len(indices)) if weighted else UNIT
    rows = CoarseGraph(indptr, indices, entry_weights, np.ones(len(nodes), dtype=np.int64)).rows
    graph = coarse_graph(rows(window), label, 40, indptr=indptr, scratch=tmp_path)
    assert not any(tmp_path.iterdir())
    expected: dict[tuple[int, int], int] = {}
    for v in nodes:
        for e in range(indptr[v], indptr[v + 1]):
            a, b = int(label[v]), int(label[indices[e]])
            if a != b:
                weight = int(entry_weights[e]) if weighted else 1
                expected[a, b] = expected.get((a, b), 0) + weight
    sources = np.repeat(np.arange(40), np.diff(graph.indptr))
    pairs = zip(sources.tolist(), graph.indices.tolist(), strict=True)
    got = dict(zip(pairs, graph.edge_weights.tolist(), strict=True))
    assert got == expected and len(got) == len(graph.indices)
    for a in range(40):
        row = graph.indices[graph.indptr[a] : graph.indptr[a + 1]]
        assert (np.diff(row) > 0).all()


def test_coarse_graph_with_unused_clusters_and_a_failing_pass(random_graph, tmp_path):
    """Cluster ids with no member (ranges with no pair) get empty rows; targets are int32; a
    pass that fails midway leaves no spill file behind."""
    adjacency = ensure_adjacency(random_graph)
    label = 2 * np.random.default_rng(3).integers(0, 40, size=random_graph.num_nodes)
    label = label.astype(np.int32)  # the odd ids of 0..79 are nobody's
    indptr = adjacency.indptr
    rows = clustering.disk_rows(adjacency, 64)
    graph = coarse_graph(rows(), label, 80, indptr=indptr, scratch=tmp_path)
    assert graph.indices.dtype == np.int32 and not np.diff(graph.indptr)[1::2].any()
    assert (graph.indices % 2 == 0).all() and not any(tmp_path.iterdir())

    def failing():
        yield from itertools.islice(rows(), 2)
        raise OSError("disk gone")

    with pytest.raises(OSError, match="disk gone"):
        coarse_graph(failing(), label, 80, indptr=indptr, scratch=tmp_path)
    assert not any(tmp_path.iterdir())


def test_multilevel_builds_its_csr_in_an_eighth_of_the_graph_per_bucket(random_graph, monkeypatch):
    """With the 1 Mi floor lowered, the CSR build takes one bucket per eighth of the entries
    (8 edge passes, or 9 where rows straddle a share), and the partition is the same as with
    one bucket: the buckets change the build's memory and passes, never the CSR."""
    spec = PartitionSpec.defaults("quotient", **MULTILEVEL)
    one_bucket = spec.run(random_graph, 4, 0)
    assert one_bucket.stats["adjacency_build_passes"] == 1
    monkeypatch.setattr(quotient_module, "MIN_BUILD_ENTRIES", 1)
    assert quotient_module.build_entries(random_graph) == -(-2 * random_graph.num_edges // 8)
    eighths = spec.run(random_graph, 4, 0)
    assert eighths.stats["adjacency_build_passes"] in (8, 9)
    assert (eighths.owner == one_bucket.owner).all()


def test_clusters_are_deterministic_per_seed(random_graph):
    adjacency = ensure_adjacency(random_graph)
    first, again, other = (coarsen(adjacency, 9, 4, 20, seed)[0].label for seed in (0, 0, 7))
    assert (first == again).all() and not (first == other).all()


@pytest.mark.parametrize("p", [2, 4, 8])
def test_multilevel_quotient_finds_the_planted_cut(chain_of_cliques, p):
    """8 cliques in a chain at p = 2, 4, 8: the best split cuts p - 1 bridges, which the
    multilevel mode finds, balanced."""
    owner = PartitionSpec.defaults("quotient", **MULTILEVEL).run(chain_of_cliques, p, 0).owner
    assert edge_cut(chain_of_cliques, owner) == p - 1
    assert np.bincount(owner).tolist() == [48 // p] * p


@pytest.mark.parametrize("p", [3, 8])
def test_multilevel_quotient_is_balanced_and_deterministic(random_graph, p):
    spec = PartitionSpec.defaults("quotient", **MULTILEVEL, level_fm_passes=3, node_fm_passes=3)
    result = spec.run(random_graph, p, 0)
    assert result.stats["coarse_levels"] >= 2
    sizes = np.bincount(result.owner, minlength=p)
    assert sizes.max() <= np.ceil(1.03 * 520 / p)
    assert (spec.run(random_graph, p, 0).owner == result.owner).all()


def test_multilevel_refinement_never_raises_the_cut(random_graph):
    """FM at every coarse level lowers (weight over the bound, cut) or keeps it."""
    spec = PartitionSpec.defaults("quotient", **MULTILEVEL, level_fm_passes=4)
    stats = spec.run(random_graph, 4, 0).stats
    assert stats["coarse_levels"] >= 1  # else the loop below would check nothing
    for level in range(1, stats["coarse_levels"] + 1):
        prefix = f"level_{level}_fm_"
        passes = sorted(int(k.rsplit("_", 1)[1]) for k in stats if k.startswith(prefix + "cut_"))
        pairs = [(stats[f"{prefix}overfull_{i}"], stats[f"{prefix}cut_{i}"]) for i in passes]
        assert pairs == sorted(pairs, reverse=True) and len(pairs) >= 2


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("coarsening", "metis"),
        ("cluster_passes", 0),
        ("coarse_nodes", 0),
        ("level_fm_passes", -1),
        ("vcycles", -1),
    ],
)
def test_multilevel_keys_are_checked(random_graph, key, value):
    with pytest.raises(ConfigError, match=f"partitioner.{key}"):
        PartitionSpec.defaults("quotient", **{**MULTILEVEL, key: value}).run(random_graph, 4, 0)


def test_clusters_stay_inside_blocks(random_graph):
    """Given a block per node (a V-cycle's partition), no cluster at any level spans two."""
    block = np.random.default_rng(0).integers(0, 4, size=random_graph.num_nodes)
    levels = coarsen(ensure_adjacency(random_graph), 9, 4, 20, seed=2, block=block)
    assert levels  # else the loop below would check nothing
    finest = np.arange(random_graph.num_nodes)
    for level in levels:
        finest = level.label[finest]
        blocks_per_cluster = [len(set(block[finest == c])) for c in range(level.graph.num_nodes)]
        assert max(blocks_per_cluster) == 1


def test_vcycles_never_raise_the_cut(random_graph):
    """A V-cycle coarsens inside the parts, so it starts from the last cut, and its FM passes
    never raise it: more cycles, a cut no higher (both within the balance bound)."""
    keys = {**MULTILEVEL, "level_fm_passes": 2, "node_fm_passes": 2}
    once = PartitionSpec.defaults("quotient", **keys).run(random_graph, 4, 0)
    cycled = PartitionSpec.defaults("quotient", **keys, vcycles=2).run(random_graph, 4, 0)
    bound = np.ceil(1.03 * 520 / 4)
    assert np.bincount(once.owner).max() <= bound and np.bincount(cycled.owner).max() <= bound
    assert edge_cut(random_graph, cycled.owner) <= edge_cut(random_graph, once.owner)
    assert "vcycle_2_level_1_fm_cut_0" in cycled.stats
