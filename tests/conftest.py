"""Shared fixtures: a private cache root per test and the shared raw datasets."""

from __future__ import annotations

from pathlib import Path

import pytest

RAW_DIR = Path(__file__).resolve().parents[2] / "shared" / "datasets"


@pytest.fixture
def gnnbench_home(tmp_path, monkeypatch) -> Path:
    """GNNBENCH_HOME pointed at a fresh directory; raw files read from the shared datasets."""
    home = tmp_path / "gnnbench_home"
    monkeypatch.setenv("GNNBENCH_HOME", str(home))
    monkeypatch.setenv("GNNBENCH_RAW_DIR", str(RAW_DIR))
    return home


@pytest.fixture
def small_sweep_store(tmp_path):
    """A fresh MLflow store holding one small training sweep (see tests/sweep_fixtures.py)."""
    from sweep_fixtures import build_small_sweep

    return build_small_sweep(tmp_path / "store")
