"""Random geometric graph (RGG) with geometric labels and features, generated straight to disk.

`num_nodes` points uniform in the unit square (`dims: 2`) or cube (`dims: 3`); an edge joins two
points closer than r, with r chosen for a mean degree of `avg_degree` (N V_d r^d = avg_degree,
V_d the unit ball's volume; points near the border have fewer neighbours, so the mean is a little
lower). Unlike the DC-SBM, such a graph has locality at every scale: the benchmark graphs of
KaMinPar and KaHIP use RGGs for that reason. Labels follow the geometry (the nearest of
`num_classes` random centres: Voronoi regions) and so do the features (random Fourier features
of the coordinates at the regions' scale, plus Gaussian noise of scale `feature_noise`), so a
partition that keeps regions together shows in F1.

Generation goes slab by slab along the last axis, over a grid of cells of side >= r: the point
count of each slab is drawn once (a multinomial over the slabs), the points of slab z from a
random stream of their own, and the edges of slab z need only slabs z and z + 1 (the 13 or 4
forward neighbour cells of each cell). So the peak is two slabs (about 2 N r points), the
edges waiting for the next chunk_edges chunk, and O(N) for the node ids' relabelling and the
labels. Node ids are a seeded random permutation of the cell order, so that id order carries no
geometry. Deterministic given the config.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

import numba
import numpy as np
from scipy.spatial import cKDTree

from gnnbench.data.builder import GraphStoreBuilder
from gnnbench.data.canonical import id_dtype_for
from gnnbench.data.import_checks import check_disk_space, generated_disk_bytes
from gnnbench.data.sources import SOURCES
from gnnbench.data.sources._generator_keys import generator_params
from gnnbench.data.sources._io import row_chunk
from gnnbench.errors import ConfigError
from gnnbench.progress import progress


@dataclass(frozen=True)
class GeometricParams:
    """The generator's config keys; their defaults live in gnnbench/conf/dataset/rgg.yaml only."""

    num_nodes: int
    avg_degree: float
    dims: int
    num_classes: int
    feature_dim: int
    feature_noise: float
    seed: int
    chunk_edges: int

    @classmethod
    def from_config(cls, dataset: Mapping[str, Any]) -> GeometricParams:
        """The keys of the dataset config, converted and checked; a key left out or null takes
        gnnbench/conf/dataset/rgg.yaml's value."""
        params = generator_params(cls, dataset, "rgg")
        for key, ok in {
            "num_nodes": params.num_nodes >= 1,
            "avg_degree": 0 < params.avg_degree < params.num_nodes,
            "dims": params.dims in (2, 3),
            "num_classes": 1 <= params.num_classes <= params.num_nodes,
            "feature_dim": params.feature_dim >= 0,
            "feature_noise": params.feature_noise >= 0,
            "chunk_edges": params.chunk_edges >= 1,
        }.items():
            if not ok:
                raise ConfigError(
                    f"dataset.{key}: invalid value {getattr(params, key)!r} for the RGG generator"
                )
        return params

    @property
    def num_raw_edges(self) -> int:
        """Edges expected: N * avg_degree / 2 (the border makes them a little fewer)."""
        return int(round(self.num_nodes * self.avg_degree / 2))

    @property
    def radius(self) -> float:
        ball = math.pi if self.dims == 2 else 4 * math.pi / 3
        return (self.avg_degree / (self.num_nodes * ball)) ** (1 / self.dims)

    @property
    def cells_per_axis(self) -> int:
        return max(1, int(1 / self.radius))


@SOURCES.register("geometric")
def import_geometric(builder: GraphStoreBuilder, dataset: Mapping[str, Any]) -> None:
    """Points, labels and features slab by slab, edges in chunks of about chunk_edges."""
    params = GeometricParams.from_config(dataset)
    node_rng = stream(params.seed, NODES)
    builder.set_num_nodes(params.num_nodes)  # checks memory before the node arrays exist
    check_disk_space(builder.tmp, disk_bytes(params, builder.feature_dtype), "the RGG")
    grid = params.cells_per_axis
    slab_sizes = node_rng.multinomial(params.num_nodes, np.full(grid, 1 / grid))
    slab_first = np.concatenate([[0], np.cumsum(slab_sizes)])
    relabel = node_rng.permutation(params.num_nodes).astype(np.int64)
    geometry = Geometry(node_rng, params)
    labels = np.empty(params.num_nodes, dtype=np.int64)
    features = (
        builder.open_features(params.num_nodes, params.feature_dim) if params.feature_dim else None
    )
    pending: list[np.ndarray] = []
    waiting = 0
    slab = Slab.generate(params, 0, slab_sizes[0])
    for z in progress(range(grid), grid, "generating RGG slabs"):
        ids = relabel[slab_first[z] : slab_first[z + 1]]
        labels[ids] = geometry.labels(slab.points)
        if features is not None:
            geometry.write_features(features, ids, slab.points, z)
        last = z + 1 == grid
        following = (
            Slab.empty(params, z + 1) if last else Slab.generate(params, z + 1, slab_sizes[z + 1])
        )
        local = slab.edges_to(following, params.radius, grid)
        pending.append(relabel[local + slab_first[z]])
        waiting += len(local)
        if waiting >= params.chunk_edges or last:
            builder.add_edges(np.concatenate(pending), origin="geometric")
            pending, waiting = [], 0
        slab = following
    if features is not None:
        features.flush()
        del features
    builder.set_labels(labels)
    builder.add_meta(
        generator="random geometric graph",
        generator_params={**asdict(params), "radius": params.radius},
    )


# The keys this source reads (gnnbench/data/spec.py rejects any other).
import_geometric.config_keys = tuple(item.name for item in fields(GeometricParams))


# The random streams, one per purpose (and per slab), so that each is reproducible on its own.
NODES, POINTS, FEATURE_NOISE = 0, 1, 2


def disk_bytes(params: GeometricParams, feature_dtype: np.dtype) -> int:
    """The import's disk peak (generated_disk_bytes): the features are written beside the raw
    edges, slab by slab."""
    features = params.num_nodes * params.feature_dim * np.dtype(feature_dtype).itemsize
    id_bytes = id_dtype_for(params.num_nodes).itemsize
    return generated_disk_bytes(
        params.num_raw_edges, params.num_nodes, id_bytes, features, features_first=True
    )


def stream(seed: int, purpose: int, index: int = 0) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(purpose, index)))


class Geometry:
    """What labels and features are functions of: class centres and random Fourier features."""

    def __init__(self, rng: np.random.Generator, params: GeometricParams):
        self.centres = rng.random((params.num_classes, params.dims))
        self.centres_tree = cKDTree(self.centres)
        # frequencies at the scale of a Voronoi region (about num_classes^(-1/d) wide)
        scale = 2 * math.pi * params.num_classes ** (1 / params.dims)
        self.frequencies = rng.standard_normal((params.dims, params.feature_dim)) * scale
        self.phases = rng.random(params.feature_dim) * 2 * math.pi
        self.noise = params.feature_noise
        self.seed = params.seed

    def labels(self, points: np.ndarray) -> np.ndarray:
        """The nearest centre of every point (a k-d tree: no points x centres matrix)."""
        return self.centres_tree.query(points)[1]

    def write_features(self, out: np.ndarray, ids: np.ndarray, points: np.ndarray, slab: int):
        """out[ids] = sqrt(2) cos(x W + b) + N(0, noise^2) per coordinate, a row chunk at a
        time (the noise from a stream of the slab's own)."""
        rng = stream(self.seed, FEATURE_NOISE, slab)
        step = row_chunk(self.frequencies.shape[1])
        for start in range(0, len(points), step):
            rows = points[start : start + step]
            clean = math.sqrt(2) * np.cos(rows @ self.frequencies + self.phases)
            noise = rng.standard_normal(clean.shape, dtype=np.float32)
            out[ids[start : start + step]] = clean + np.float32(self.noise) * noise


@dataclass
class Slab:
    """The points of slab z (the cells whose last coordinate is z), ordered by cell."""

    z: int
    points: np.ndarray  # (m, dims) float64
    cell_starts: np.ndarray  # offsets of each of the slab's grid^(dims-1) cells in `points`

    @classmethod
    def generate(cls, params: GeometricParams, z: int, size: int) -> Slab:
        """Cell counts (a multinomial over the slab's cells), then uniform points in each cell."""
        grid, dims = params.cells_per_axis, params.dims
        rng = stream(params.seed, POINTS, z)
        cells = grid ** (dims - 1)
        counts = rng.multinomial(size, np.full(cells, 1 / cells))
        cell_of_point = np.repeat(np.arange(cells), counts)
        corner = np.empty((size, dims))
        corner[:, 0] = cell_of_point % grid
        if dims == 3:
            corner[:, 1] = cell_of_point // grid
        corner[:, -1] = z
        points = (corner + rng.random((size, dims))) / grid
        return cls(z, points, np.concatenate([[0], np.cumsum(counts)]))

    @classmethod
    def empty(cls, params: GeometricParams, z: int) -> Slab:
        """The slab past the last one: no points."""
        cells = params.cells_per_axis ** (params.dims - 1)
        return cls(z, np.empty((0, params.dims)), np.zeros(cells + 1, dtype=np.int64))

    def edges_to(self, following: Slab, radius: float, grid: int) -> np.ndarray:
        """Pairs closer than `radius` within this slab and from it to the next, as (k, 2) offsets
        into this slab's points followed by the next slab's."""
        dims = self.points.shape[1]
        points = np.concatenate([self.points, following.points])
        starts = np.concatenate([self.cell_starts, following.cell_starts[1:] + len(self.points)])
        stencil = FORWARD_2D if dims == 2 else FORWARD_3D
        cells = grid ** (dims - 1)
        count = _close_pairs(points, starts, cells, grid, stencil, radius * radius, None)
        out = np.empty((count, 2), dtype=np.int64)
        _close_pairs(points, starts, cells, grid, stencil, radius * radius, out)
        return out


# Forward neighbour cells (d_in_slab_0, d_in_slab_1, d_slab): each pair of cells visited once.
FORWARD_2D = np.array([[1, 0, 0], [-1, 0, 1], [0, 0, 1], [1, 0, 1]], dtype=np.int64)
FORWARD_3D = np.array(
    [[1, 0, 0], [-1, 1, 0], [0, 1, 0], [1, 1, 0]]
    + [[a, b, 1] for b in (-1, 0, 1) for a in (-1, 0, 1)],
    dtype=np.int64,
)


@numba.njit(cache=True)
def _close_pairs(points, starts, cells, grid, stencil, radius2, out):
    """Count (out is None) or write the pairs closer than sqrt(radius2): within each cell of
    the first slab, and from it to its forward neighbours (`starts` has 2 cells + 1 entries)."""
    side = grid if points.shape[1] == 3 else 1
    found = 0
    for cell in range(cells):
        a, b = cell % grid, cell // grid
        for i in range(starts[cell], starts[cell + 1]):
            for j in range(i + 1, starts[cell + 1]):
                if _dist2(points, i, j) < radius2:
                    if out is not None:
                        out[found, 0] = i
                        out[found, 1] = j
                    found += 1
        for s in range(stencil.shape[0]):
            na, nb = a + stencil[s, 0], b + stencil[s, 1]
            if na < 0 or na >= grid or nb < 0 or nb >= side:
                continue
            other = stencil[s, 2] * cells + na + grid * nb
            for i in range(starts[cell], starts[cell + 1]):
                for j in range(starts[other], starts[other + 1]):
                    if _dist2(points, i, j) < radius2:
                        if out is not None:
                            out[found, 0] = i
                            out[found, 1] = j
                        found += 1
    return found


@numba.njit(cache=True, inline="always")
def _dist2(points, i, j):
    total = 0.0
    for k in range(points.shape[1]):
        delta = points[i, k] - points[j, k]
        total += delta * delta
    return total
