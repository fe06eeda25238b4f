"""Configs as the tests use them: partitioners with their YAML keys (keyword overrides on top),
a dataset's file, a composed job config, a job config for run keys (BASE), and small training
settings (SAGE, FAST)."""

from __future__ import annotations

from collections.abc import Callable

import yaml

from gnnbench.partition.base import PartitionResult
from gnnbench.partition.spec import PartitionSpec
from gnnbench.paths import CONF_DIR

SAGE = {"name": "sage", "layers": 2, "hidden": 32, "dropout": 0.5}
FAST = {"epochs": 3, "fanouts": [5, 5], "batch_size": 64, "timeout_s": 120}

BASE = {
    "dataset": {"name": "cora"},
    "partitioner": {"name": "spring"},
    "p": 4,
    "sync_interval": 1,
    "num_gpus": 2,
    "seed": 0,
    "model": {"name": "sage"},
    "tracking": {"uri": "sqlite:///a.db"},
    "resume": True,
}


def configured(name: str) -> Callable[..., PartitionResult]:
    """`call(store, p, seed, **keys)`: partitioner `name` with
    gnnbench/conf/partitioner/<name>.yaml's keys and the schema's shared ones, `keys` overriding them (an
    unknown key is a ConfigError)."""

    def call(store, p: int, seed: int, **keys) -> PartitionResult:
        return PartitionSpec.defaults(name, **keys).run(store, p, seed)

    call.__name__ = name
    return call


def dataset_config(name: str, **overrides) -> dict:
    """gnnbench/conf/dataset/<name>.yaml as a plain dict, with overrides."""
    config = yaml.safe_load((CONF_DIR / "dataset" / f"{name}.yaml").read_text())
    config.update(overrides)
    return config


def job_config(*overrides: str) -> dict:
    """The composed, resolved job config of `python -m gnnbench <overrides>`."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        return OmegaConf.to_container(compose("config", overrides=list(overrides)), resolve=True)
