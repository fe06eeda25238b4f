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
