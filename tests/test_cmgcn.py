"""CM-GCN's batches (gnnbench/train/cmgcn.py): Algorithm 2 is exact, Algorithm 1 keeps its
2 - 2/M bound, the cost model is computation_cost's count, and every training node is batched."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from gnnbench.errors import ConfigError
from gnnbench.train import cmgcn
from gnnbench.train.batching import computation_cost
from gnnbench.train.sampler import ALL_NEIGHBOURS, NeighbourSampler


def random_graph(n: int, density: float, seed: int):
    a = sp.random(n, n, density=density, random_state=seed, format="csr")
    a = ((a + a.T) > 0).astype(np.int8).tocsr()
    return a.indptr.astype(np.int64), a.indices.astype(np.int64)


def singleton_covers(seed: int, n: int = 24, size: int = 7):
    rng = np.random.default_rng(seed)
    indptr, indices = random_graph(n, 0.12, seed)
    train = np.sort(rng.choice(n, size=size, replace=False))
    weights = rng.uniform(0.5, 2.0, size=3)  # radii 0..2, as a 2-layer model's calibrated costs
    return cmgcn.Covers(indptr, indices, [train[i : i + 1] for i in range(size)], weights)


def partitions(items: list[int], count: int):
    """Every partition of `items` into `count` nonempty blocks."""
    if count == 1:
        yield [items]
        return
    if len(items) == count:
        yield [[i] for i in items]
        return
    head, rest = items[0], items[1:]
    for smaller in partitions(rest, count - 1):
        yield [[head], *smaller]
    for same in partitions(rest, count):
        for b in range(count):
            yield [*same[:b], [head, *same[b]], *same[b + 1 :]]


@pytest.mark.parametrize("seed", range(12))
def test_queyranne_finds_the_minimum_bisection(seed):
    covers = singleton_covers(seed)
    block = np.arange(7)
    whole = covers.cost(block)
    best = min(
        covers.cost(block[list(a)]) + covers.cost(np.setdiff1d(block, a)) - whole
        for r in range(1, 7)
        for a in itertools.combinations(range(7), r)
    )
    value, mask = covers.best_split(block)
    assert 0 < mask.sum() < 7
    assert value == pytest.approx(best)
    assert covers.cost(block[mask]) + covers.cost(block[~mask]) - whole == pytest.approx(best)


@pytest.mark.parametrize("seed", range(8))
def test_greedy_splitting_is_within_two_minus_two_over_m_of_the_optimum(seed):
    covers, count = singleton_covers(seed), 3
    blocks = cmgcn.greedy_split(covers, count)
    assert len(blocks) == count and sorted(np.concatenate(blocks)) == list(range(7))
    joined = sum(covers.cost(b) for b in blocks)
    optimum = min(
        sum(covers.cost(np.array(b)) for b in split) for split in partitions(list(range(7)), count)
    )
    assert joined <= (2 - 2 / count) * optimum + 1e-9  # the paper's bound on J(P)


def test_unit_weights_count_what_computation_cost_counts():
    indptr, indices = random_graph(60, 0.05, 3)
    seeds = np.array([1, 7, 8, 30])
    covers = cmgcn.Covers(indptr, indices, [seeds], np.ones(3))
    sampler = NeighbourSampler(indptr, indices, [ALL_NEIGHBOURS] * 2)
    assert covers.cost(np.array([0])) == computation_cost(sampler.sample(seeds, 0))


@pytest.mark.parametrize("max_elements", [1000, 16])  # exact, then on coarsened elements
def test_every_training_node_is_in_exactly_one_batch(monkeypatch, max_elements):
    monkeypatch.setattr(cmgcn, "MAX_ELEMENTS", max_elements)
    indptr, indices = random_graph(300, 0.02, 5)
    train = np.arange(0, 300, 3)
    batches = cmgcn.cmgcn_batches(indptr, indices, train, 6, np.ones(3), np.random.default_rng(0))
    assert len(batches) == 6
    assert sorted(np.concatenate(batches)) == list(train)
    assert (
        cmgcn.cmgcn_batches(indptr, indices, train[:0], 6, np.ones(3), np.random.default_rng(0))
        == []
    )


def test_batches_stop_at_one_element_each():
    indptr, indices = random_graph(30, 0.1, 1)
    batches = cmgcn.cmgcn_batches(indptr, indices, np.array([2, 5]), 4, np.ones(2),
                                  np.random.default_rng(0))  # fmt: skip
    assert sorted(map(list, batches)) == [[2], [5]]


def test_covers_too_large_to_split_are_one_line(monkeypatch):
    monkeypatch.setattr(cmgcn, "MAX_PAIRS", 50)
    indptr, indices = random_graph(300, 0.02, 5)
    with pytest.raises(ConfigError, match=r"^train.batching=cmgcn: .* more than 50 \(node"):
        cmgcn.cmgcn_batches(indptr, indices, np.arange(0, 300, 3), 6, np.ones(3),
                            np.random.default_rng(0))  # fmt: skip
