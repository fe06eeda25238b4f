"""The job count a sweep announces ("job 3 of 9") is the grid Hydra's BasicSweeper runs."""

import pytest
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser

from gnnbench.track.sweep import count_jobs

EXPERIMENT_GRID = {
    "dataset": "cora,amazon_cs,coauthor_cs",
    "train": "centralized,model_avg",
    "seed": "0,1,2",
}


def test_count_is_the_product_of_choices():
    assert count_jobs(["p=2,4"], EXPERIMENT_GRID) == 36


def test_command_line_replaces_an_experiment_axis():
    # `-m experiment=... dataset=coauthor_cs` runs one dataset: Hydra reads the command line last
    assert count_jobs(["dataset=coauthor_cs"], EXPERIMENT_GRID) == 6
    assert count_jobs(["seed=0,1"], EXPERIMENT_GRID) == 12


@pytest.mark.parametrize(
    "overrides",
    [
        ["p=2,4"],
        ["dataset=coauthor_cs"],
        ["+seed=0,1"],
        ["++seed=5", "~p"],
        ["model@m=sage,gcn"],
        ["train.fanouts=[25,10],[-1,-1]"],
    ],
)
def test_count_matches_hydras_grid(overrides):
    """The count is the length of the grid Hydra's own sweeper builds from the same overrides."""
    given = [f"{key}={value}" for key, value in EXPERIMENT_GRID.items()] + overrides
    parsed = OverridesParser.create().parse_overrides(given)
    (grid,) = BasicSweeper.split_arguments(parsed, max_batch_size=None)
    assert count_jobs(overrides, EXPERIMENT_GRID) == len(grid)


def test_only_the_basic_sweeper_announces_a_count():
    """Other sweepers (Optuna's) choose jobs as they go: no count, so no wrong "job 3 of 9"."""
    from gnnbench.track.sweep import BASIC_SWEEPER, planned_jobs

    assert f"{BasicSweeper.__module__}.{BasicSweeper.__name__}" == BASIC_SWEEPER
    assert planned_jobs({"_target_": BASIC_SWEEPER, "params": EXPERIMENT_GRID}, ["p=2,4"]) == 36
    optuna = "hydra_plugins.hydra_optuna_sweeper.optuna_sweeper.OptunaSweeper"
    assert planned_jobs({"_target_": optuna, "params": EXPERIMENT_GRID}, ["p=2,4"]) is None
