"""The `alone` marker (tests/helpers/alone.py): under two xdist workers, a test so marked overlaps no other."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

CONFTEST = """
from helpers.alone import alone_beside_other_workers  # noqa: F401

def pytest_configure(config):
    config.addinivalue_line("markers", "alone: runs with no other test beside it")
"""

# Each test writes "name start end" (monotonic clock, shared by the processes of one machine).
RECORDED = """
import os, time
import pytest

def record(name):
    started = time.monotonic()
    time.sleep({seconds})
    with open(os.environ["ALONE_LOG"], "a") as log:
        log.write(f"{{name}} {{started}} {{time.monotonic()}}\\n")
"""


def test_an_alone_test_overlaps_no_other_while_the_rest_run_side_by_side(tmp_path):
    """File a: four 1 s tests on one worker; file b: an `alone` test, then two plain ones, on
    the other. Without the lock the alone test would start beside a's first test."""
    (tmp_path / "conftest.py").write_text(CONFTEST)
    body = RECORDED.format(seconds=1.0)
    plain = "".join(f"\ndef test_a{i}():\n    record('a{i}')\n" for i in range(4))
    (tmp_path / "test_a.py").write_text(body + plain)
    alone = "\n@pytest.mark.alone\ndef test_b0():\n    record('alone')\n"
    rest = "".join(f"\ndef test_b{i}():\n    record('b{i}')\n" for i in (1, 2))
    (tmp_path / "test_b.py").write_text(body + alone + rest)
    log = tmp_path / "log.txt"
    env = {**os.environ, "ALONE_LOG": str(log), "PYTHONPATH": str(TESTS)}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2"]
    command += ["--dist", "loadfile", "--basetemp", str(tmp_path / "base"), str(tmp_path)]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    spans = {
        name: (float(a), float(b))
        for name, a, b in map(str.split, log.read_text().split("\n")[:-1])
    }
    assert len(spans) == 7
    start, end = spans.pop("alone")
    assert all(b <= start or a >= end for a, b in spans.values()), (start, end, spans)
    side_by_side = [
        (x, y)
        for x in spans
        for y in spans
        if x < y and spans[x][0] < spans[y][1] and spans[y][0] < spans[x][1]
    ]
    assert side_by_side, spans  # the plain tests did run in parallel
