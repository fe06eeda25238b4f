"""Input features for a graph that has none (`dataset.features`), as PyG and DGL users train them.

    none       no features (the default): such a graph partitions, but cannot train
    degree     one column, log(1 + degree)
    onehot     the degree one-hot, capped at ONEHOT_DEGREES - 1 (PyG's OneHotDegree)
    random     RANDOM_DIM standard normal columns, seeded (the same for every run)
    embedding  one column, the node's id: the model's first layer looks it up in a learnable
               table (train/models/embedding_input.py), averaged with the rest of the model

They are written into the graph's own store (its cache key holds `features`, so the featureless
store is a different directory) as feat.npy, then meta.json with the new feature_dim and
fingerprint (partition books keyed on it are never shared with the featureless store). Both
writes are atomic and deterministic: parallel jobs preparing the same store write the same bytes.
A graph with features of its own keeps them.
"""

from __future__ import annotations

import io
import json
import logging

import numpy as np

from gnnbench import schema
from gnnbench.data.store import GraphStore
from gnnbench.errors import ConfigError, DataError
from gnnbench.process.atomic import atomic_write_bytes

log = logging.getLogger(__name__)

INPUT_FEATURES = schema.choices(schema.InputFeatures)
ONEHOT_DEGREES = 64
RANDOM_DIM = 64
RANDOM_SEED = 0
EMBEDDING_MAX_NODES = 2**24  # ids as float32 are exact up to here


def check_input_features(kind: object) -> str:
    if kind not in INPUT_FEATURES:
        raise ConfigError(
            f"dataset.features: expected one of {', '.join(INPUT_FEATURES)}, got {kind!r}"
        )
    return str(kind)


def with_input_features(store: GraphStore, kind: str) -> GraphStore:
    """The store, with `kind` input features written into it where it has no features."""
    if kind == "none" or store.has_features:
        if kind != "none":
            log.info("dataset.features=%s: %s has features of its own, kept", kind, store.name)
        return store
    features = _make(store, kind)
    buffer = io.BytesIO()
    np.save(buffer, features)
    atomic_write_bytes(store.path / "feat.npy", buffer.getvalue())
    from gnnbench.data.builder import fingerprint

    meta = {
        **store.meta,
        "feature_dim": int(features.shape[1]),
        "input_features": kind,
        "fingerprint": fingerprint(store.path, store.num_nodes),
    }
    atomic_write_bytes(store.path / "meta.json", json.dumps(meta, indent=2).encode())
    return GraphStore(store.path)


def _make(store: GraphStore, kind: str) -> np.ndarray:
    n = store.num_nodes
    if kind == "degree":
        return np.log1p(store.degree().astype(np.float32)).reshape(n, 1)
    if kind == "onehot":
        capped = np.minimum(store.degree(), ONEHOT_DEGREES - 1).astype(np.int64)
        onehot = np.zeros((n, ONEHOT_DEGREES), dtype=np.float32)
        onehot[np.arange(n), capped] = 1.0
        return onehot
    if kind == "random":
        rng = np.random.default_rng(RANDOM_SEED)
        return rng.standard_normal((n, RANDOM_DIM), dtype=np.float32)
    if n > EMBEDDING_MAX_NODES:
        raise DataError(
            f"{store.path}: dataset.features=embedding takes at most {EMBEDDING_MAX_NODES} nodes, "
            f"the graph has {n}"
        )
    return np.arange(n, dtype=np.float32).reshape(n, 1)
