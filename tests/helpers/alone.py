"""The `alone` marker under pytest-xdist: a test so marked runs with no other test beside it.

`make test` runs two xdist workers. A test that times CPU, bounds a wall clock, or inspects
machine-wide state (every process, /dev/shm) would read its neighbour's work as its own; it is
marked `@pytest.mark.alone`, and tests/conftest.py imports the fixture below for every test.
The fixture also hides xdist's variables from a test's environment: a pytest the test starts
(a planted bench run) would take itself for an xdist worker and turn pytest-benchmark off.
"""

from __future__ import annotations

import fcntl

import pytest

XDIST_VARIABLES = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


@pytest.fixture(autouse=True)
def alone_beside_other_workers(request, tmp_path_factory, monkeypatch):
    """A readers-writer lock on files every xdist worker of this run shares: each test holds it
    shared, an `alone` test exclusively. The turnstile is taken before either, and released at
    once by shared holders, so an `alone` test waiting for the running ones to end is not passed
    by new ones."""
    if not hasattr(request.config, "workerinput"):  # not an xdist worker
        yield
        return
    for name in XDIST_VARIABLES:
        monkeypatch.delenv(name, raising=False)
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
