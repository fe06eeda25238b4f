"""HeiStream-style buffered streaming: the model graph by hand, part matching, invariants."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.configured import configured
from helpers.graphs import edge_cut, make_store

from gnnbench.data.adjacency import ensure_adjacency
from gnnbench.errors import ConfigError
from gnnbench.partition.algorithms.heistream import _match_parts, _model_graph

heistream = configured("heistream")

pytest.importorskip("pymetis", reason="heistream partitions its model graphs with pymetis")


def test_model_graph_by_hand(triangles):
    """Second buffer {3, 4, 5} after 0, 1 -> block 0 and 2 -> block 1 (sizes 2, 1).

    Buffer rows (local 0, 1, 2 = nodes 3, 4, 5): 3 has 4, 5 in the buffer and 2 in block 1
    (model node 3 + 1 = 4); 4 and 5 only buffer neighbours. Block rows: block 0 (model node 3)
    has no buffer neighbour; block 1 (model node 4) has node 3 (local 0) with weight 1.
    """
    block = next(ensure_adjacency(triangles).blocks("id"))
    owner = np.array([0, 0, 1, -1, -1, -1], dtype=np.int32)
    local = np.full(6, -1, dtype=np.int32)
    sizes = np.array([2, 1], dtype=np.int64)
    xadj, adjncy, weights, vweights = _model_graph(
        block.nodes[3:], block.starts[3:], block.stops[3:], block.indices, owner, local, sizes
    )
    rows = [
        sorted(zip(adjncy[a:b].tolist(), weights[a:b].tolist(), strict=True))
        for a, b in zip(xadj[:-1], xadj[1:], strict=True)
    ]
    assert rows == [[(1, 1), (2, 1), (4, 1)], [(0, 1), (2, 1)], [(0, 1), (1, 1)], [], [(0, 1)]]
    assert vweights.tolist() == [1, 1, 1, 2, 1]
    assert (local == -1).all()  # the buffer-local index is reset for the next buffer


def test_match_parts_follows_block_nodes():
    """Model graph of 2 buffer nodes + 2 blocks: METIS put block 1's node in part 0."""
    xadj = np.array([0, 1, 2, 3, 4])
    adjncy = np.array([3, 2, 1, 0])  # buffer 0 - block 1, buffer 1 - block 0
    weights = np.array([5, 5, 5, 5])
    vweights = np.array([1, 1, 10, 10])
    part = np.array([0, 1, 1, 0])  # block 0 (model node 2) in part 1, block 1 in part 0
    assert _match_parts(part, xadj, adjncy, weights, vweights, 2, 2).tolist() == [1, 0]


def test_one_buffer_is_metis_on_the_graph(triangles):
    """A buffer holding the whole graph: METIS cuts the bridge only."""
    result = heistream(triangles, 2, 0, buffer_nodes=6)
    assert edge_cut(triangles, result.owner) == 1
    assert sorted(np.bincount(result.owner).tolist()) == [3, 3]
    assert result.stats["buffers"] == 1


@pytest.mark.parametrize("p", [2, 4, 7])
def test_invariants_and_determinism(tmp_path, p):
    rng = np.random.default_rng(2)
    store = make_store(tmp_path / "r", rng.integers(0, 500, size=(2500, 2)), 520)
    a = heistream(store, p, 3, buffer_nodes=64)
    b = heistream(store, p, 3, buffer_nodes=64)
    assert np.array_equal(a.owner, b.owner)
    assert a.owner.min() >= 0 and a.owner.max() < p
    assert np.bincount(a.owner, minlength=p).max() < a.stats["capacity"] + 1
    assert a.stats["buffers"] == 9  # ceil(520 / 64)


@pytest.mark.parametrize("value", [0, -3, 2.5, True])
def test_bad_buffer_nodes(triangles, value):
    with pytest.raises(ConfigError, match="partitioner.buffer_nodes: expected a whole number"):
        heistream(triangles, 2, 0, buffer_nodes=value)
