"""A pytest plugin that makes SPRING deliberately worse, to show the bench gates catch it.

GNNBENCH_PLANT=quality pytest -p planted_regression bench/...   # 30% of owners scrambled
GNNBENCH_PLANT=speed   pytest -p planted_regression bench/...   # sleeps 20x its own work time
"""

from __future__ import annotations

import inspect
import os
import time

import numpy as np

from gnnbench.partition.base import PARTITIONERS


def pytest_configure(config) -> None:
    mode = os.environ.get("GNNBENCH_PLANT")
    if mode not in ("quality", "speed"):
        return
    original = PARTITIONERS.get("spring")

    def worse_spring(store, p, seed, **keywords):
        started = time.perf_counter()
        result = original(store, p, seed, **keywords)
        if mode == "quality":
            rng = np.random.default_rng(0)
            scrambled = rng.random(len(result.owner)) < 0.3
            result.owner[scrambled] = rng.integers(0, p, size=int(scrambled.sum()))
        else:
            # 21x slower: past the 3x gate even though the committed ratios (read on a fresh
            # machine) run up to ~2.3x above a warm machine's.
            time.sleep(20 * (time.perf_counter() - started))
        return result

    worse_spring.__signature__ = inspect.signature(original)  # SPRING's keys, checked as SPRING's
    PARTITIONERS.override("spring", worse_spring)
