"""Where the configs ship, where raw datasets are read from and where prepared graphs and
partitions are cached."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
# Hydra's primary config directory: inside the package, so a non-editable install has it
# (pyproject.toml's package data).
CONF_DIR = Path(__file__).resolve().parent / "conf"
CONFIG_NAME = "config"  # the primary config file: CONF_DIR/config.yaml


def gnnbench_home() -> Path:
    """Cache root for prepared graphs and partition books (`GNNBENCH_HOME`)."""
    return Path(os.environ.get("GNNBENCH_HOME", Path.home() / ".cache" / "gnnbench")).expanduser()


def raw_dir() -> Path:
    """Root of raw dataset files laid out like `shared/datasets` (`GNNBENCH_RAW_DIR`).

    Without the variable, a `shared/datasets` folder next to the checkout is used when present
    (the layout of this project's workplace), else `$GNNBENCH_HOME/raw`.
    """
    if "GNNBENCH_RAW_DIR" in os.environ:
        return Path(os.environ["GNNBENCH_RAW_DIR"]).expanduser()
    beside_checkout = REPO_ROOT.parent / "shared" / "datasets"
    if beside_checkout.is_dir():
        return beside_checkout
    return gnnbench_home() / "raw"
