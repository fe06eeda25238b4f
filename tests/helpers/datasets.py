"""The real datasets a test reads (under GNNBENCH_RAW_DIR) and whether this is CI."""

from __future__ import annotations

import os

import pytest

from gnnbench.paths import raw_dir

RAW_DIR = raw_dir()
CORA = "planetoid/ind.cora.graph"  # the file every cora test needs first


def requires_dataset(*relative_paths: str) -> pytest.MarkDecorator:
    """Mark a test that reads these paths under RAW_DIR (skipped, or failed in CI, without them)."""
    return pytest.mark.requires_dataset(*relative_paths)


def in_ci() -> bool:
    """Whether the CI variable says this is CI (`CI=true`, as CI services set it)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
