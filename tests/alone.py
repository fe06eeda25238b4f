"""The `alone` marker under pytest-xdist: a test so marked runs with no other test beside it.

`make test` runs two xdist workers. A test that times CPU, bounds a wall clock, or inspects
machine-wide state (every process, /dev/shm) would read its neighbour's work as its own; it is
marked `@pytest.mark.alone`, and tests/conftest.py imports the fixture below for every test.
"""

from __future__ import annotations

import fcntl
import os

import pytest


@pytest.fixture(autouse=True)
def alone_beside_other_workers(request, tmp_path_factory):
    """A readers-writer lock on files every xdist worker of this run shares: each test holds it
    shared, an `alone` test exclusively. The turnstile is taken before either, and released at
    once by shared holders, so an `alone` test waiting for the running ones to end is not passed
    by new ones."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        yield
        return
    shared = tmp_path_factory.getbasetemp().parent  # .../pytest-N/, above popen-gw0, popen-gw1
    alone = request.node.get_closest_marker("alone") is not None
    with (
        open(shared / "alone.turnstile", "a") as turnstile,
        open(shared / "alone.lock", "a") as lock,
    ):
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if not alone:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        yield  # closing the files releases both locks
