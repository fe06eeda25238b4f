"""The cyclic garbage collector around a long phase that drops large objects often.

A training rank drops its partition at every turn and collects it at once
(gnnbench/train/resident.py), so that its arrays go back to the allocator before the next one
loads. A full collection walks every container object the process holds: in a spawned rank that
is ~200 k objects of torch, numba and MLflow (0.1-0.3 s a collection, twice per partition and
epoch: most of what a turn cost at p = 16). `setup_frozen` moves the objects that exist when the
phase starts out of the collector's way (gc.freeze) and back when it ends.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def setup_frozen() -> Iterator[None]:
    """The objects that exist now are skipped by collections until the block ends. A no-op in a
    process whose start-up froze its modules already (`python -m gnnbench`'s own, gnnbench/
    startup.py): unfreezing there would hand them back to the collector for good."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()  # a process that goes on (a test, a script) collects them again
