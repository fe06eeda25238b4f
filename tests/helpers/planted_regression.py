"""A pytest plugin that makes SPRING deliberately worse, to show the bench gates catch it.

GNNBENCH_PLANT=quality pytest -p helpers.planted_regression bench/...   # 30% of owners scrambled
GNNBENCH_PLANT=speed   pytest -p helpers.planted_regression bench/...   # 2 x SPEED_MAX_FACTOR its CPU time
"""

from __future__ import annotations

import inspect
import os
import time

import numpy as np

from bench.gates import SPEED_MAX_FACTOR
from gnnbench.partition.base import PARTITIONERS


def pytest_configure(config) -> None:
    mode = os.environ.get("GNNBENCH_PLANT")
    if mode not in ("quality", "speed"):
        return
    original = PARTITIONERS.get("spring")

    def worse_spring(store, p, seed, **keywords):
        started = time.process_time()
        result = original(store, p, seed, **keywords)
        if mode == "quality":
            rng = np.random.default_rng(0)
            scrambled = rng.random(len(result.owner)) < 0.3
            result.owner[scrambled] = rng.integers(0, p, size=int(scrambled.sum()))
        else:  # a busy loop: the speed gates time CPU seconds, a sleep would not count
            until = time.process_time() + (2 * SPEED_MAX_FACTOR - 1) * (
                time.process_time() - started
            )
            while time.process_time() < until:
                pass
        return result

    worse_spring.__signature__ = inspect.signature(original)  # SPRING's keys, checked as SPRING's
    PARTITIONERS.override("spring", worse_spring)
