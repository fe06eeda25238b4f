"""Progress reporting: every item passes through; plain lines only for loops that run long."""

from __future__ import annotations

import logging
import time

from gnnbench import progress as progress_module
from gnnbench.progress import progress


def test_progress_yields_everything_and_logs_slow_loops(monkeypatch, caplog):
    monkeypatch.setenv("CI", "true")
    assert list(progress(range(5), 5, "quick")) == [0, 1, 2, 3, 4]
    monkeypatch.setattr(progress_module, "LINE_EVERY_S", 0.0)
    with caplog.at_level(logging.INFO, logger="gnnbench.progress"):
        for _ in progress(range(3), 3, "slow"):
            time.sleep(0.001)
    assert "slow: 3/3" in caplog.text


def test_progress_status_is_one_line_per_item_without_terminal(monkeypatch, caplog):
    """With `status` (training: an epoch's loss, val F1, time) every item logs its line."""
    monkeypatch.setenv("CI", "true")
    with caplog.at_level(logging.INFO, logger="gnnbench.progress"):
        done = list(progress(range(3), 3, "round", status=lambda item: f"loss {item}"))
    assert done == [0, 1, 2]
    assert [record.getMessage() for record in caplog.records] == [
        "round 1/3: loss 0",
        "round 2/3: loss 1",
        "round 3/3: loss 2",
    ]


def test_progress_line_interval_is_per_loop(monkeypatch, caplog):
    """Loops inside an epoch pass their own interval (INNER_LINE_EVERY_S): a long one still
    logs, a short one stays quiet, whatever the module default."""
    monkeypatch.setenv("CI", "true")
    with caplog.at_level(logging.INFO, logger="gnnbench.progress"):
        list(progress(range(2), 2, "inner", line_every_s=0.0))
        list(progress(range(2), 2, "quiet", line_every_s=3600.0))
    assert [record.getMessage() for record in caplog.records] == ["inner: 1/2", "inner: 2/2"]


def test_progress_lines_are_spaced_by_the_interval(monkeypatch, caplog):
    """One line per `line_every_s` of the loop's clock, not one per item once the first is due."""
    monkeypatch.setenv("CI", "true")
    clock = iter(range(0, 1000, 10))  # every reading of the clock is 10 s after the previous
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: next(clock))
    with caplog.at_level(logging.INFO, logger="gnnbench.progress"):
        list(progress(range(8), 8, "timed", line_every_s=25.0))
    # readings: start 0; item 1 at 10, 2 at 20, 3 at 30 (line, reset 40), 4 at 50, 5 at 60,
    # 6 at 70 (line, reset 80), 7 at 90, 8 at 100
    assert [record.getMessage() for record in caplog.records] == ["timed: 3/8", "timed: 6/8"]
