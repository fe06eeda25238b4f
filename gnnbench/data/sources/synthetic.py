"""Contextual degree-corrected stochastic block model, generated straight to disk in chunks.

Every node gets a community (its label) and a Pareto weight (power-law degrees). Each edge picks
its source with probability ∝ weight; with probability `homophily` its target is drawn ∝ weight
inside the source's community, else ∝ weight among all nodes. Features are the community's
unit mean vector plus Gaussian noise of scale `feature_noise`, so features alone are only
moderately predictive and the neighbourhood carries the rest of the signal. Memory per chunk is
O(chunk_edges); the node arrays are O(N) (~72 bytes per node). With feature_dim=0 only structure
and labels are written, so a 1 B-edge graph (gnnbench/conf/experiment/billion.yaml) never holds
its edges.
Features are written a 64 MB row block at a time once the edges are canonical (the raw edge
file and the import's bucket files are then gone, so the disk never holds both), with the node
arrays of the edge sampler already released: memory is the labels (8 bytes per node) and one
block. Deterministic given the config; dataset.feature_dtype changes only the rounding of rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

import numba
import numpy as np

from gnnbench.data.builder import GraphStoreBuilder
from gnnbench.data.canonical import id_dtype_for
from gnnbench.data.import_checks import check_disk_space, generated_disk_bytes
from gnnbench.data.sources import SOURCES
from gnnbench.data.sources._generator_keys import generator_params
from gnnbench.data.sources._io import row_chunk
from gnnbench.errors import ConfigError
from gnnbench.progress import progress


@dataclass(frozen=True)
class SbmParams:
    """The generator's config keys; their defaults live in gnnbench/conf/dataset/synthetic.yaml
    only."""

    num_nodes: int
    avg_degree: float
    num_classes: int
    feature_dim: int
    homophily: float
    degree_exponent: float
    feature_noise: float
    seed: int
    chunk_edges: int

    @classmethod
    def from_config(cls, dataset: Mapping[str, Any]) -> SbmParams:
        """The generator's keys of the dataset config, converted to the field's type and checked;
        a key left out or null takes gnnbench/conf/dataset/synthetic.yaml's value."""
        params = generator_params(cls, dataset, "synthetic")
        params.validate()
        return params

    def validate(self) -> None:
        """Impossible values → ConfigError naming the key."""
        checks = {
            "num_nodes": self.num_nodes >= self.num_classes >= 1,
            "num_classes": self.num_classes >= 1,
            "avg_degree": self.avg_degree > 0,
            "feature_dim": self.feature_dim >= 0,
            "homophily": 0.0 <= self.homophily <= 1.0,
            "degree_exponent": self.degree_exponent > 1.0,
            "feature_noise": self.feature_noise >= 0,
            "chunk_edges": self.chunk_edges >= 1,
        }
        for key, ok in checks.items():
            if not ok:
                raise ConfigError(
                    f"dataset.{key}: invalid value {getattr(self, key)!r} for the synthetic generator"
                )

    @property
    def num_raw_edges(self) -> int:
        """Edges drawn (before the builder drops self-loops and duplicates)."""
        return int(round(self.num_nodes * self.avg_degree / 2))


@numba.njit(cache=True)
def _build_alias(weights, bounds, prob, alias):
    """Walker/Vose alias table of every segment [bounds[c], bounds[c+1]) of `weights`, in place."""
    small = np.empty(len(weights), dtype=np.int64)
    large = np.empty(len(weights), dtype=np.int64)
    for segment in range(len(bounds) - 1):
        low, high = bounds[segment], bounds[segment + 1]
        total = weights[low:high].sum()
        num_small = 0
        num_large = 0
        for k in range(low, high):
            prob[k] = weights[k] * (high - low) / total
            alias[k] = k
            if prob[k] < 1.0:
                small[num_small] = k
                num_small += 1
            else:
                large[num_large] = k
                num_large += 1
        while num_small and num_large:
            num_small -= 1
            lesser = small[num_small]
            greater = large[num_large - 1]
            alias[lesser] = greater
            prob[greater] -= 1.0 - prob[lesser]
            if prob[greater] < 1.0:
                num_large -= 1
                small[num_small] = greater
                num_small += 1
        for k in range(num_small):  # rounding leftovers: probability 1
            prob[small[k]] = 1.0
        for k in range(num_large):
            prob[large[k]] = 1.0


class WeightedSampler:
    """Draws nodes ∝ weight, among all nodes or within one community, in O(1) per draw (alias)."""

    def __init__(self, labels: np.ndarray, weights: np.ndarray, num_classes: int):
        self.order = np.argsort(labels, kind="stable")  # nodes grouped by community
        self.bounds = np.searchsorted(labels[self.order], np.arange(num_classes + 1))
        self.global_table = self._table(weights, np.array([0, len(weights)]))
        self.community_table = self._table(weights[self.order], self.bounds)

    @staticmethod
    def _table(weights: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        prob = np.empty(len(weights), dtype=np.float64)
        alias = np.empty(len(weights), dtype=np.int64)
        _build_alias(
            np.ascontiguousarray(weights, dtype=np.float64), bounds.astype(np.int64), prob, alias
        )
        return prob, alias

    @staticmethod
    def _draw(table, slots: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        prob, alias = table
        return np.where(rng.random(len(slots)) < prob[slots], slots, alias[slots])

    def anywhere(self, rng: np.random.Generator, size: int) -> np.ndarray:
        slots = rng.integers(0, len(self.order), size=size)
        return self._draw(self.global_table, slots, rng)

    def within(self, rng: np.random.Generator, communities: np.ndarray) -> np.ndarray:
        low = self.bounds[communities]
        sizes = self.bounds[communities + 1] - low
        slots = low + (rng.random(len(communities)) * sizes).astype(np.int64)
        return self.order[self._draw(self.community_table, slots, rng)]


@SOURCES.register("synthetic")
def import_synthetic(builder: GraphStoreBuilder, dataset: Mapping[str, Any]) -> None:
    """Generate labels, edges (chunk by chunk) and features (row chunk by row chunk)."""
    params = SbmParams.from_config(dataset)
    streams = np.random.SeedSequence(params.seed).spawn(3)
    node_rng, edge_rng, feature_rng = (np.random.default_rng(s) for s in streams)
    builder.set_num_nodes(params.num_nodes)  # checks memory before the node arrays exist
    check_disk_space(builder.tmp, disk_bytes(params, builder.feature_dtype), "the synthetic graph")
    labels = node_rng.permutation(params.num_nodes) % params.num_classes
    weights = node_weights(node_rng, params)
    sampler = WeightedSampler(labels, weights, params.num_classes)
    del weights  # the alias tables hold what the draws need
    starts = range(0, params.num_raw_edges, params.chunk_edges)
    for start in progress(starts, len(starts), "generating edge chunks"):
        size = min(params.chunk_edges, params.num_raw_edges - start)
        builder.add_edges(
            edge_chunk(edge_rng, sampler, labels, size, params.homophily), origin="synthetic"
        )
    del sampler
    if params.feature_dim:
        builder.after_edges(lambda: write_features(builder, feature_rng, labels, params))
    builder.set_labels(labels)
    builder.add_meta(generator="contextual DC-SBM", generator_params=asdict(params))


# The keys this source reads (gnnbench/data/spec.py rejects any other).
import_synthetic.config_keys = tuple(item.name for item in fields(SbmParams))


def disk_bytes(params: SbmParams, feature_dtype: np.dtype) -> int:
    """The import's disk peak (generated_disk_bytes): the features are written after the edges."""
    features = params.num_nodes * params.feature_dim * np.dtype(feature_dtype).itemsize
    id_bytes = id_dtype_for(params.num_nodes).itemsize
    return generated_disk_bytes(
        params.num_raw_edges, params.num_nodes, id_bytes, features, features_first=False
    )


def node_weights(rng: np.random.Generator, params: SbmParams) -> np.ndarray:
    """Pareto weights with tail exponent degree_exponent - 1 (degree density ~ d^-exponent).

    Capped at sqrt(N) times the minimum so that the largest hub stays a small share of the edges.
    """
    weights = 1.0 + rng.pareto(params.degree_exponent - 1.0, size=params.num_nodes)
    return np.minimum(weights, np.sqrt(params.num_nodes))


def edge_chunk(
    rng: np.random.Generator,
    sampler: WeightedSampler,
    labels: np.ndarray,
    size: int,
    homophily: float,
) -> np.ndarray:
    """`size` edges: source ∝ weight; target ∝ weight in its community (prob. homophily) or anywhere."""
    sources = sampler.anywhere(rng, size)
    inside = rng.random(size) < homophily
    targets = np.empty_like(sources)
    targets[inside] = sampler.within(rng, labels[sources[inside]])
    targets[~inside] = sampler.anywhere(rng, int(size - inside.sum()))
    return np.stack([sources, targets], axis=1)


def write_features(
    builder: GraphStoreBuilder, rng: np.random.Generator, labels: np.ndarray, params: SbmParams
) -> None:
    """Class mean (a random unit vector) + N(0, feature_noise²) per coordinate, in row chunks.

    The noise is drawn a 64 MB chunk at a time (the draws, hence the bytes, as ever); the float64
    sums are formed and written an eighth of a chunk at a time, so the temporaries stay near
    100 MB whatever N.
    """
    means = rng.standard_normal((params.num_classes, params.feature_dim))
    means /= np.linalg.norm(means, axis=1, keepdims=True)
    out = builder.open_features(params.num_nodes, params.feature_dim)
    step = row_chunk(params.feature_dim)
    block = max(1, step // 8)
    for start in range(0, params.num_nodes, step):
        rows = labels[start : start + step]
        noise = rng.standard_normal((len(rows), params.feature_dim), dtype=np.float32)
        for low in range(0, len(rows), block):
            high = min(len(rows), low + block)
            sums = means[rows[low:high]] + params.feature_noise * noise[low:high]
            out[start + low : start + high] = sums
    out.flush()
    del out
