"""A seeded integer hash (splitmix64 finaliser) shared by hash-based partitioners."""

from __future__ import annotations

import numba
import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def hash_ids(ids: np.ndarray, seed: int) -> np.ndarray:
    """Vectorised seeded hash of node ids (uint64)."""
    with np.errstate(over="ignore"):
        z = ids.astype(np.uint64) + np.uint64(seed) * _GOLDEN + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


@numba.njit(cache=True, inline="always")
def hash_id(x, seed):
    """Scalar, numba-compiled form of `hash_ids` (same splitmix64 values) for use in kernels."""
    z = np.uint64(x) + np.uint64(seed) * _GOLDEN + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))
