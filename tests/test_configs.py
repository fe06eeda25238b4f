"""Every config composes: each choice of each group, and each experiment with each value it sweeps.

A broken experiment or group file is found here, not when a user first runs it.
"""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from gnnbench import composition
from gnnbench.composition import sweep_grid
from gnnbench.partition.spec import PartitionSpec
from gnnbench.paths import CONF_DIR
from gnnbench.spec import JobSpec
from gnnbench.train.spec import spec_from_conf

GROUPS = ("dataset", "partitioner", "model", "train")
CHOICES = [
    (group, path.stem) for group in GROUPS for path in sorted((CONF_DIR / group).glob("*.yaml"))
]
EXPERIMENTS = sorted(path.stem for path in (CONF_DIR / "experiment").glob("*.yaml"))


def composed(*overrides: str, sweep: bool = False):
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        return compose("config", overrides=list(overrides), return_hydra_config=sweep)


def job_spec(config) -> JobSpec:
    """The JobSpec `run` parses from this composed config (every key known, none missing)."""
    return JobSpec.from_config(OmegaConf.to_container(config, resolve=True))


@pytest.mark.parametrize(("group", "choice"), CHOICES, ids=[f"{g}={c}" for g, c in CHOICES])
def test_every_group_choice_composes(group, choice):
    config = composed(f"{group}={choice}")
    assert config[group] is not None
    if group in ("dataset", "partitioner", "model"):
        assert "name" in config[group]
    spec = job_spec(config)
    if group == "partitioner":  # a preset (quotient_best) runs another name: the loader agrees
        assert spec.partition == PartitionSpec.defaults(choice)
    if group == "dataset":
        assert spec.data.to_config() == OmegaConf.to_container(config.dataset, resolve=True)


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_experiment_composes_with_each_swept_value(experiment):
    """`python -m gnnbench -m experiment=<name>`: the experiment and every value of every axis it
    sweeps (one at a time) compose, and the resolved config of its first job is complete."""
    config = composed(f"experiment={experiment}", sweep=True)
    params = OmegaConf.to_container(config.hydra.sweeper.params or {})
    assert params, f"{experiment}: sweeps nothing (expected a hydra.sweeper.params block)"
    grid = sweep_grid((), params)
    first = [f"{key}={values[0]}" for key, values in grid.items()]
    job = composed(f"experiment={experiment}", *first)
    job_spec(job)
    for key, values in grid.items():
        for value in values:
            job_spec(composed(f"experiment={experiment}", f"{key}={value}"))


def test_a_bracketed_list_sweeps_as_whole_items():
    """`train.fanouts=[25,10],[-1,-1]` is two jobs, one per list (not four comma pieces), in the
    one grid expansion every caller shares (the sweep's job count, the claims' planned jobs)."""
    grid = sweep_grid(["p=2,4"], {"train.fanouts": "[25,10],[-1,-1]", "seed": 0})
    assert grid == {"train.fanouts": ["[25,10]", "[-1,-1]"], "seed": ["0"], "p": ["2", "4"]}
    assert sweep_grid(["seed=1,2"], {"seed": "0"}) == {"seed": ["1", "2"]}  # the command line wins
    job = composed(*(f"{key}={values[-1]}" for key, values in grid.items()))
    assert list(job.train.fanouts) == [-1, -1]


TRAINED = [(mode, model) for mode in ("centralized", "grad_avg", "model_avg")
           for model in ("gat", "gcn", "mlp", "sage")]  # fmt: skip


@pytest.mark.parametrize(("mode", "model"), TRAINED, ids=[f"{t}-{m}" for t, m in TRAINED])
def test_the_loaders_read_what_hydra_composes(mode, model):
    """spec_from_conf (tests and benchmarks) is the TrainSpec of the job Hydra composes for
    `train=<mode> model=<name>`; composed() hands out copies of its cached configs."""
    job = job_spec(composed(f"train={mode}", f"model={model}"))
    assert spec_from_conf({"mode": mode}, {"name": model}) == job.train
    config = composition.composed(f"train={mode}")
    config["train"]["epochs"] = -1
    assert composition.composed(f"train={mode}")["train"]["epochs"] == job.train.epochs
