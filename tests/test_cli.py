"""The command line before Hydra runs: gnnbench's own help, one-line errors for misspelled keys,
group choices from Hydra's search path, and command-line mappings that replace."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers.cli import gnnbench

from gnnbench.cli import (
    HydraConfigs,
    check_group_choices,
    check_overrides,
    check_shared_keys,
    replace_mappings,
)
from gnnbench.errors import ConfigError

# README's example: quotient over GREM with GREM's keys, not quotient's default base keys
QUOTIENT_ON_GREM = (
    "partitioner=quotient",
    "partitioner.base=grem",
    "partitioner.base_keys={chunk_fraction: 0.05}",
)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["partitoner=spring"], "did you mean partitioner?"),
        (["train.epochz=3"], "did you mean train.epochs?"),
        (["partitioner.betta=1.1"], "did you mean partitioner.beta?"),
        (["-m", "partitioner=spring,hash", "partitioner.beta=1.2"], "for partitioner=hash"),
        (["dataset.delimiter=,"], "cannot parse the command line"),
        (["p.x=1"], "p is a value"),
        (["dataset.split_seed=3"], "set it with +dataset.split_seed=<value>"),
        (["train=grad_avg", "train.optimizer_state=reset"], "+train.optimizer_state="),
    ],
)
@pytest.mark.fault("config: a misspelled key")
def test_unknown_keys_name_the_closest_valid_key(argv, expected):
    """A key missing from the composed config is one ConfigError naming the closest valid key."""
    with pytest.raises(ConfigError, match=re.escape(expected)):
        check_overrides(HydraConfigs(argv))


def test_valid_keys_pass():
    check_overrides(HydraConfigs(
        ["-m", "partitioner=spring,grem", "partitioner.hops=1", "train.epochs=2", "p=2,4",
         "+extra=1", "hydra.verbose=true", "experiment=sync_interval", "+dataset.split_seed=3"]
    ))  # fmt: skip


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


@pytest.fixture
def config_dir(tmp_path) -> Path:
    """A user's config directory with one dataset of its own, dataset/mine.yaml."""
    root = tmp_path / "my_conf"
    (root / "dataset").mkdir(parents=True)
    (root / "dataset" / "mine.yaml").write_text("name: mine\nsource: synthetic\nnum_nodes: 1000\n")
    return root


@pytest.mark.parametrize("given_by", ["--config-dir", "hydra.searchpath"])
def test_group_choices_come_from_hydras_search_path(config_dir, given_by):
    """dataset=mine is a choice where Hydra finds the file; a typo is still one line."""
    if given_by == "--config-dir":
        where = [f"--config-dir={config_dir}"]
    else:
        where = [f"hydra.searchpath=[file://{config_dir}]"]
    configs = HydraConfigs([*where, "dataset=mine", "dataset.num_nodes=500"])
    assert {"mine", "cora", "synthetic"} <= set(configs.choices("dataset"))
    check_group_choices(configs)
    check_overrides(configs)  # dataset.num_nodes: looked up in the config composed with mine
    typo = r"^dataset=mien: unknown dataset \(expected one of: .*\bmine\b"
    with pytest.raises(ConfigError, match=typo):
        check_group_choices(HydraConfigs([*where, "dataset=mien"]))
    with pytest.raises(ConfigError, match="dataset=mine: unknown dataset"):
        check_group_choices(HydraConfigs(["dataset=mine"]))  # not on the search path without it


def test_a_missing_config_dir_is_one_line(tmp_path):
    with pytest.raises(ConfigError, match="--config-dir .*: no such directory"):
        HydraConfigs([f"--config-dir={tmp_path / 'nowhere'}", "dataset=mine"])


def test_a_dataset_of_a_users_config_dir_runs(tmp_path, gnnbench_home, config_dir):
    """`python -m gnnbench --config-dir=<dir with dataset/mine.yaml> dataset=mine` (issue 29)."""
    completed = gnnbench(
        tmp_path, f"--config-dir={config_dir}", "dataset=mine", "train=none", "p=2"
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    (store,) = (gnnbench_home / "graphs").glob("mine-*")
    assert json.loads((store / "meta.json").read_text())["num_nodes"] <= 1000


SHARED_KEY_SET = (
    r"partitioner/{}\.yaml: sets hops, a key every partitioner shares "
    r"\(set it on the command line or in an experiment; its default: gnnbench/schema\.py\)$"
)


@pytest.fixture
def shared_key_dir(tmp_path) -> Path:
    """A user's config directory whose partitioner files set hops, a shared key: directly
    (mine.yaml over ldg, direct.yaml over nothing) or through the file its defaults list extends
    (preset.yaml); an experiment choosing mine, and one sweeping preset."""
    root = tmp_path / "my_conf"
    (root / "partitioner").mkdir(parents=True)
    (root / "partitioner" / "mine.yaml").write_text("defaults: [ldg, _self_]\n\nhops: 2\n")
    (root / "partitioner" / "preset.yaml").write_text("defaults: [mine, _self_]\n\npasses: 2\n")
    (root / "partitioner" / "direct.yaml").write_text("name: hash\nhops: 0\n")  # extends none
    (root / "experiment").mkdir()
    chooses = "# @package _global_\ndefaults:\n  - override /partitioner: mine\n"
    (root / "experiment" / "chooses.yaml").write_text(chooses)
    sweeps = (
        "# @package _global_\nhydra:\n  sweeper:\n    params:\n      partitioner: spring,preset\n"
    )
    (root / "experiment" / "sweeps.yaml").write_text(sweeps)
    return root


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["partitioner=mine"], "mine"),
        (["partitioner=direct"], "direct"),
        (["partitioner=preset"], "preset"),
        (["-m", "partitioner=ldg,mine"], "mine"),
        (["experiment=chooses"], "mine"),
        (["-m", "experiment=sweeps"], "preset"),
    ],
)
def test_a_partitioner_file_setting_a_shared_key_is_one_line(shared_key_dir, argv, named):
    """The schema's partitioner block would override the file's hops without a word: refused."""
    configs = HydraConfigs([f"--config-dir={shared_key_dir}", *argv])
    check_overrides(configs)
    with pytest.raises(ConfigError, match=SHARED_KEY_SET.format(named)):
        check_shared_keys(configs)


def test_a_dataset_file_setting_a_shared_key_is_one_line(tmp_path):
    """The same rule for the schema's dataset block (import_memory_gb here)."""
    (tmp_path / "dataset").mkdir()
    (tmp_path / "dataset" / "big.yaml").write_text(
        "defaults: [synthetic, _self_]\n\nimport_memory_gb: 8\n"
    )
    configs = HydraConfigs([f"--config-dir={tmp_path}", "dataset=big"])
    with pytest.raises(ConfigError, match=r"dataset/big\.yaml: sets import_memory_gb, a key every "
                       r"dataset shares \(set it on the command line or in an experiment"):  # fmt: skip
        check_shared_keys(configs)


def test_the_shipped_partitioner_and_dataset_files_set_no_shared_key():
    configs = HydraConfigs([])
    for group in ("partitioner", "dataset"):
        check_shared_keys(HydraConfigs(["-m", f"{group}={','.join(configs.choices(group))}"]))
    check_shared_keys(HydraConfigs(["-m", "experiment=partition_quality"]))  # its sweep's choices


@pytest.mark.fault("config: a partitioner file sets a shared key")
def test_a_shared_key_in_a_partitioner_file_exits_2(tmp_path, gnnbench_home, shared_key_dir):
    """A partitioner file of `--config-dir` setting `hops`: one line naming the file and the key,
    exit 2, before any stage runs."""
    completed = gnnbench(tmp_path, f"--config-dir={shared_key_dir}", "partitioner=mine")
    assert completed.returncode == 2
    (line,) = completed.stderr.strip().splitlines()
    assert (
        line.startswith("gnnbench: error: ") and f"{shared_key_dir}/partitioner/mine.yaml" in line
    )


def test_a_command_line_mapping_replaces_the_configs():
    """`partitioner.base_keys={...}` replaces quotient's default base keys (Hydra would merge
    them, and refuse chunk_fraction); given as the default, it composes the default config."""
    argv = ["-m", *QUOTIENT_ON_GREM, "p=2,4"]
    assert replace_mappings(argv, HydraConfigs(argv)) == [
        "-m", *QUOTIENT_ON_GREM[:2], "~partitioner.base_keys", f"+{QUOTIENT_ON_GREM[2]}", "p=2,4"
    ]  # fmt: skip
    assert _partitioner_block(*QUOTIENT_ON_GREM)["base_keys"] == {"chunk_fraction": 0.05}
    default = _partitioner_block("partitioner=quotient")
    assert default["base_keys"] == {"passes": 3}
    assert (
        _partitioner_block("partitioner=quotient", "partitioner.base_keys={passes: 3}") == default
    )
    sweep = ["tracking.sweep={sweep_id: a, parent_run_id: b}"]  # null by default: set, as typed
    assert replace_mappings(sweep, HydraConfigs(sweep)) == sweep


def _partitioner_block(*argv: str) -> dict:
    """The partitioner block Hydra composes for `argv` as gnnbench hands it on."""
    from omegaconf import OmegaConf

    handed_on = replace_mappings(list(argv), HydraConfigs(list(argv)))
    return OmegaConf.to_container(HydraConfigs(handed_on).compose(tuple(handed_on)).partitioner)


def test_quotient_on_grem_with_its_own_base_keys_runs(tmp_path, gnnbench_home):
    """README's `partitioner=quotient partitioner.base=grem 'partitioner.base_keys={...}'` runs,
    and its book holds exactly those base keys."""
    small = ("dataset.num_nodes=2000", "train=none", "p=2")
    completed = gnnbench(tmp_path, *QUOTIENT_ON_GREM, *small)
    assert completed.returncode == 0, completed.stderr[-3000:]
    (book,) = (gnnbench_home / "partitions").glob("*quotient*")
    parameters = json.loads((book / "meta.json").read_text())["parameters"]
    assert parameters["base"] == "grem" and parameters["base_keys"] == {"chunk_fraction": 0.05}
    base = parameters["nested"]["base"]
    assert base["name"] == "grem" and base["chunk_fraction"] == 0.05 and "passes" not in base
