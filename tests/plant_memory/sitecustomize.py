"""A planted memory regression that reaches the partition stage's own process, where the meter
runs: Python's site module imports `sitecustomize` at start-up from any PYTHONPATH entry, so a
process started with this directory on PYTHONPATH and GNNBENCH_PLANT=memory (tests/test_gates.py
passes both to `pytest bench/test_memory_gates.py`, whose stage subprocesses inherit them) holds
BALLAST_BYTES more through quotient's multilevel partition: about a third over its peak on the
1 M-node RGG (73.5 MB), far past the memory gate's tolerance.
"""

from __future__ import annotations

import os

BALLAST_BYTES = 24 << 20

if os.environ.get("GNNBENCH_PLANT") == "memory":
    import numpy as np

    from gnnbench.partition.algorithms import quotient

    _original = quotient.Multilevel.partition

    def _heavier(self, *args, **kwargs):
        ballast = np.ones(BALLAST_BYTES, dtype=np.uint8)  # held until the partition returns
        try:
            return _original(self, *args, **kwargs)
        finally:
            del ballast

    quotient.Multilevel.partition = _heavier
