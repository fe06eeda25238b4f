"""The random geometric graph generator (dataset source `geometric`,
gnnbench/conf/dataset/rgg.yaml)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.configured import dataset_config
from helpers.disk import assert_refused_for_disk, pretend_free
from scipy.spatial import cKDTree

from gnnbench.data.datasets import prepare_dataset
from gnnbench.data.sources.geometric import GeometricParams, Slab, disk_bytes, stream
from gnnbench.errors import ConfigError


def rgg(**overrides) -> dict:
    return {**dataset_config("rgg"), **overrides}


def points_by_node(params: GeometricParams) -> np.ndarray:
    """Every node's coordinates, regenerated from the generator's own streams."""
    node_rng = stream(params.seed, 0)
    grid = params.cells_per_axis
    slab_sizes = node_rng.multinomial(params.num_nodes, np.full(grid, 1 / grid))
    relabel = node_rng.permutation(params.num_nodes)
    cell_order = np.concatenate(
        [Slab.generate(params, z, slab_sizes[z]).points for z in range(grid)]
    )
    points = np.empty_like(cell_order)
    points[relabel] = cell_order
    return points


@pytest.mark.parametrize("dims", [2, 3])
def test_edges_are_exactly_the_pairs_closer_than_r(gnnbench_home, dims):
    """Against a k-d tree over all points: no pair missed across cells or slabs, none extra."""
    config = rgg(name=f"rgg-exact-{dims}", num_nodes=3000, avg_degree=12, dims=dims)
    store = prepare_dataset(config)
    params = GeometricParams.from_config(config)
    points = points_by_node(params)
    expected = cKDTree(points).query_pairs(params.radius, output_type="ndarray")
    found = np.sort(store.edges().astype(np.int64), axis=1)
    assert {tuple(e) for e in found} == {tuple(e) for e in np.sort(expected, axis=1)}
    assert 0.8 * 12 < 2 * store.num_edges / store.num_nodes < 12  # the border lowers the mean
    # labels follow the geometry: the nearest of num_classes centres, so neighbours mostly agree
    labels = store.labels()
    assert (labels[found[:, 0]] == labels[found[:, 1]]).mean() > 0.8
    assert len(np.unique(labels)) == params.num_classes
    # and so do the features: neighbours' rows are closer than random pairs' (noise aside)
    features = store.features()
    random_pairs = np.random.default_rng(0).integers(0, store.num_nodes, size=found.shape)

    def spread(pairs):
        return float(((features[pairs[:, 0]] - features[pairs[:, 1]]) ** 2).mean())

    assert spread(found) < 0.8 * spread(random_pairs)


def test_deterministic_per_seed(gnnbench_home, tmp_path):
    first = prepare_dataset(rgg(name="rgg-a", num_nodes=2000))
    again = prepare_dataset(rgg(name="rgg-b", num_nodes=2000))
    other = prepare_dataset(rgg(name="rgg-c", num_nodes=2000, seed=1))
    assert first.fingerprint == again.fingerprint != other.fingerprint
    np.testing.assert_array_equal(first.features(), again.features())


def test_streams_in_bounded_memory(gnnbench_home):
    """feature_dim=0: the import's heap stays far below the raw edge array (chunk + O(|V|))."""
    dataset = rgg(
        name="rgg-dense",
        num_nodes=20000,
        avg_degree=300,  # ~3 M edges: 48 MB as int64 pairs
        feature_dim=0,
        chunk_edges=1 << 16,
        import_memory_gb=4 / 1024,
    )
    prepare_dataset({**dataset, "name": "rgg-warm", "num_nodes": 200, "avg_degree": 4})
    store = prepare_dataset(dataset)
    assert store.num_edges > 2_500_000 and store.feature_dim == 0
    assert store.meta["import_peak_mb"] < 40, store.meta["import_peak_mb"]


@pytest.mark.parametrize(
    "key,value", [("dims", 4), ("avg_degree", 0), ("num_classes", 0), ("feature_noise", -1)]
)
def test_impossible_values_name_the_key(key, value):
    with pytest.raises(ConfigError, match=f"dataset.{key}: invalid value"):
        GeometricParams.from_config(rgg(**{key: value}))


def test_defaults_live_in_its_yaml_only():
    assert GeometricParams.from_config({"num_nodes": 300}) == GeometricParams.from_config(
        rgg(num_nodes=300)
    )
    with pytest.raises(ConfigError, match="dataset.dims: expected a number, got 'flat'"):
        GeometricParams.from_config(rgg(dims="flat"))


@pytest.mark.fault("disk: too little free for the RGG's import")
def test_generation_refuses_a_full_disk_before_writing(gnnbench_home, monkeypatch):
    """The import's whole disk peak is checked before the first slab: a full disk is one
    DataError line naming the graphs directory, nothing is left, and with room it imports.
    (It was checked only at the deduplication, after 16 GB of raw edges at 100 M nodes, and
    every job of a sweep regenerated them to fail again.)"""
    config = rgg(name="rgg-full-disk", num_nodes=2000, avg_degree=20, feature_dim=8)
    params = GeometricParams.from_config(config)
    needed = disk_bytes(params, np.dtype(np.float32))
    # 20,000 raw edges: 48 B each (raw + buckets), the rows beside them, 16 B a node
    assert needed == 48 * 20_000 + 2000 * 8 * 4 + 24 * 2000  # degree, label, split: 8 B each
    pretend_free(monkeypatch, needed - 1)
    assert_refused_for_disk(config, gnnbench_home, "the RGG", f"needs {needed} bytes")
    pretend_free(monkeypatch, needed)
    assert prepare_dataset(config).num_nodes == 2000


def test_the_billion_edge_rgg_asks_for_its_disk_peak():
    """experiment=rgg_scale at 100 M nodes: 1e9 raw edges, 48 GB with the bucket files, and
    2.4 GB of node arrays (the 1 B store holds three of 800 MB)."""
    params = GeometricParams.from_config(rgg(num_nodes=100_000_000, avg_degree=20, feature_dim=0))
    assert params.num_raw_edges == 1_000_000_000
    assert disk_bytes(params, np.dtype(np.float32)) == 48_000_000_000 + 2_400_000_000
