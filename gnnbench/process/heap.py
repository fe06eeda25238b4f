"""The cyclic garbage collector around a long phase that drops large objects often.

A training rank drops its partition at every turn and collects it at once
(gnnbench/train/resident.py), so that its arrays go back to the allocator before the next one
loads. A full collection walks every container object the process holds: in a spawned rank that
is ~200 k objects of torch, numba and MLflow (0.1-0.3 s a collection, twice per partition and
epoch: most of what a turn cost at p = 16). `setup_frozen` collects the setup's garbage once, then
moves the objects that exist when the phase starts out of the collector's way (gc.freeze).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def setup_frozen() -> Iterator[None]:
    """The objects that exist now are skipped by collections until the block ends. In a process
    whose start-up froze its modules already (a torchrun rank is `python -m gnnbench` itself,
    gnnbench/startup.py) the setup joins them and stays frozen, as start-up's do: unfreezing
    there would hand start-up's objects back to the collector. What stays frozen is what lives
    on; garbage of it in reference cycles (rare: a job's model and arrays are freed by their
    reference counts) is kept until the process ends."""
    gc.collect()  # the setup's garbage (an earlier job's too) goes now, not frozen with it
    started_frozen = gc.get_freeze_count() > 0
    gc.freeze()
    try:
        yield
    finally:
        if not started_frozen:
            gc.unfreeze()  # a process that goes on (a test, a script) collects them again
