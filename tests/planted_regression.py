"""A pytest plugin that makes SPRING deliberately worse, to show the bench gates catch it.

GNNBENCH_PLANT=quality pytest -p planted_regression bench/...   # 30% of owners scrambled
GNNBENCH_PLANT=speed   pytest -p planted_regression bench/...   # sleeps 5x its own work time
"""

from __future__ import annotations

import os
import time

import numpy as np

from gnnbench.partition.base import PARTITIONERS


def pytest_configure(config) -> None:
    mode = os.environ.get("GNNBENCH_PLANT")
    if mode not in ("quality", "speed"):
        return
    original = PARTITIONERS.get("spring")

    def worse_spring(store, p, seed, params):
        started = time.perf_counter()
        result = original(store, p, seed, params)
        if mode == "quality":
            rng = np.random.default_rng(0)
            scrambled = rng.random(len(result.owner)) < 0.3
            result.owner[scrambled] = rng.integers(0, p, size=int(scrambled.sum()))
        else:
            time.sleep(5 * (time.perf_counter() - started))  # proportional to the work done
        return result

    PARTITIONERS.override("spring", worse_spring)
