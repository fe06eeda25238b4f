"""The command line before Hydra runs: gnnbench's own help and one-line errors for misspelled keys."""

from __future__ import annotations

import pytest
from cli import gnnbench

from gnnbench.__main__ import CONF_DIR
from gnnbench.cli import check_overrides
from gnnbench.errors import ConfigError


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["partitoner=spring"], "did you mean partitioner?"),
        (["train.epochz=3"], "did you mean train.epochs?"),
        (["partitioner.betta=1.1"], "did you mean partitioner.beta?"),
        (["-m", "partitioner=spring,hash", "partitioner.beta=1.2"], "for partitioner=hash"),
        (["dataset.delimiter=,"], "cannot parse the command line"),
        (["p.x=1"], "p is a value"),
    ],
)
@pytest.mark.fault("config: a misspelled key")
def test_unknown_keys_name_the_closest_valid_key(argv, expected):
    """A key missing from the composed config is one ConfigError naming the closest valid key."""
    with pytest.raises(ConfigError, match=expected.replace("?", r"\?")):
        check_overrides(argv, CONF_DIR)


def test_valid_keys_pass():
    check_overrides(
        ["-m", "partitioner=spring,grem", "partitioner.hops=1", "train.epochs=2", "p=2,4",
         "+extra=1", "hydra.verbose=true", "experiment=sync_interval"],
        CONF_DIR,
    )  # fmt: skip


@pytest.mark.fault("config: a misspelled key, as a user types it")
def test_misspelled_key_is_one_line_exit_2(tmp_path, gnnbench_home):
    """`partitioner.betta=1.1`: one line naming the valid keys, exit 2, no Hydra page."""
    completed = gnnbench(tmp_path, "partitioner.betta=1.1")
    assert completed.returncode == 2
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and "did you mean partitioner.beta?" in lines[0]
    assert "valid keys of partitioner" in lines[0]


def test_help_is_gnnbench_own(tmp_path):
    completed = gnnbench(tmp_path, "--help")
    assert completed.returncode == 0
    for word in ("-m", "report", "setup", "GNNBENCH_HOME", "GNNBENCH_RAW_DIR", "partition_quality"):
        assert word in completed.stdout
    assert "powered by Hydra" not in completed.stdout
