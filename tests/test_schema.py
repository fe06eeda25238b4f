"""The config schema (gnnbench/schema.py) is the one declaration of every key outside a group
file's own: each spec's valid keys are the schema's, the composed config holds its defaults, no
config file repeats them, and no stage reads a schema key with a default of its own."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

from gnnbench import schema
from gnnbench.composition import composed
from gnnbench.errors import ConfigError
from gnnbench.paths import CONF_DIR
from gnnbench.spec import JobSpec
from gnnbench.train.spec import TrainSpec

PACKAGE = Path(schema.__file__).parent
# Modules that read logged runs and results (their `.get(key, x)` reads a run, not a config).
READS_RUNS = ("experiments", "track")
BLOCKS = {"dataset": schema.DatasetKeys, "partitioner": schema.PartitionerKeys,
          "tracking": schema.TrackingKeys}  # fmt: skip


def _conf_files():
    return sorted(CONF_DIR.rglob("*.yaml"))


def test_the_composed_default_is_the_schema():
    """Every composed key holds its declared default; the keys `optional` declares are absent."""
    config = composed()
    top = schema.node(schema.JobKeys)
    for key, value in top.items():
        if key in BLOCKS:
            block = {k: config[key][k] for k in value}
            assert block == value, key
            absent = set(schema.keys(BLOCKS[key])) - set(schema.composed_keys(BLOCKS[key]))
            assert not absent & set(config[key]), f"{key} composes {absent & set(config[key])}"
        else:
            assert config[key] == value, key
    train = composed("train=grad_avg")["train"]
    assert {k: train[k] for k in schema.node(schema.TrainKeys)} == schema.node(schema.TrainKeys)
    assert {k: train[k] for k in schema.MEMORY_BUDGET_KEYS} == schema.memory_budget_node()
    assert set(composed("train=none")["train"]) == {"mode"}


def test_no_config_file_declares_a_schema_key():
    """config.yaml holds only its defaults list and hydra; no group file sets a shared key (the
    partitioner and dataset files: an error at run time too), and no training mode's file
    repeats a shared train key at its declared default or p=auto's budget."""
    primary = yaml.safe_load((CONF_DIR / "config.yaml").read_text())
    assert set(primary) == {"defaults", "hydra"}
    for path in _conf_files():
        group = path.parent.name
        config = yaml.safe_load(path.read_text()) or {}
        if group in ("dataset", "partitioner"):
            shared = set(schema.composed_keys(BLOCKS[group])) & set(config)
            assert not shared, f"{path.name} sets {shared}"
        if group == "train":
            defaults = schema.node(schema.TrainKeys)
            repeated = [k for k, v in config.items() if k in defaults and defaults[k] == v]
            assert not repeated, f"{path.name} repeats the defaults of {repeated}"
            assert not set(schema.MEMORY_BUDGET_KEYS) & set(config), path.name


def test_the_specs_accept_exactly_the_schema_keys():
    """Each spec's valid keys are the schema's: an unknown key is one line naming them."""
    config = composed()
    for key in ("dataset", "partitioner", "tracking"):
        bad = {**config, key: {**config[key], "bogus": 1}}
        with pytest.raises(ConfigError, match=rf"^{key}\.bogus: unknown key") as caught:
            JobSpec.from_config(bad)
        if key != "dataset":  # a dataset's valid keys also hold its source's own
            listed = str(caught.value).split("valid keys: ")[1].split(", ")
            assert set(schema.keys(BLOCKS[key])) <= set(listed)
    with pytest.raises(ConfigError, match=r"^bogus: unknown key for the job") as caught:
        JobSpec.from_config({**config, "bogus": 1})
    assert str(caught.value).split("valid keys: ")[1].split(", ") == sorted(
        schema.keys(schema.JobKeys)
    )
    with pytest.raises(ConfigError, match=r"^train\.bogus: unknown key") as caught:
        JobSpec.from_config({**config, "train": {**config["train"], "bogus": 1}})
    listed = set(str(caught.value).split("valid keys: ")[1].split(", "))
    assert listed == {"mode", *schema.keys(schema.TrainKeys)}
    assert issubclass(TrainSpec, schema.TrainKeys)


def _reads_with_a_default_of_its_own(path: Path, keys: set[str]) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "pop", "setdefault")
            and len(node.args) == 2
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value in keys
            and isinstance(node.args[1], ast.Constant | ast.Tuple | ast.List)
            and not (isinstance(node.args[1], ast.Constant) and node.args[1].value is None)
        ):
            found.append(f"{path}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_default_lives_in_code():
    """No module reads a schema key as `config.get(key, <a value of its own>)`: the default is
    the schema's (`schema.configured`)."""
    keys = set()
    for cls in (schema.JobKeys, *BLOCKS.values(), schema.TrainKeys):
        keys |= set(schema.keys(cls)) - {"dataset", "partitioner", "model", "train", "tracking"}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name != "schema.py" and not set(READS_RUNS) & set(path.parts):
            found += _reads_with_a_default_of_its_own(path, keys)
    assert not found, "\n".join(found)


def test_the_scan_finds_a_planted_default(tmp_path):
    """The scan above is not blind: a planted `.get("split_seed", 0)` is found."""
    planted = tmp_path / "planted.py"
    planted.write_text('def f(d):\n    return d.get("split_seed", 0)\n')
    assert _reads_with_a_default_of_its_own(planted, {"split_seed"})


def test_a_spec_that_parses_no_value_for_a_declared_key_fails(monkeypatch):
    """A key added to the schema but not parsed by its spec would be left to its dataclass default
    without a word: a TypeError naming it instead (a key planted on the schema's lists)."""
    from gnnbench.partition.spec import PartitionSpec
    from gnnbench.train.spec import spec_from_conf

    spec_from_conf({"mode": "model_avg"})  # the real lists are complete
    PartitionSpec.defaults("spring")
    real_keys = schema.keys
    monkeypatch.setattr(schema, "keys", lambda cls: (*real_keys(cls), "planted"))
    with pytest.raises(TypeError, match=r"^TrainKeys: the spec parses no value for planted$"):
        spec_from_conf({"mode": "model_avg", "planted": 1})
    with pytest.raises(TypeError, match=r"^PartitionerKeys: the spec parses no value for planted"):
        PartitionSpec.defaults("spring")


def test_hydra_public_api_finds_the_schema_in_a_fresh_process():
    """A script composing gnnbench's configs with Hydra's own `initialize_config_dir` + `compose`
    (nothing of gnnbench imported before) finds the schema: the search-path plugin registers it."""
    import subprocess
    import sys

    code = (
        "from hydra import compose, initialize_config_dir\n"
        "from gnnbench.paths import CONF_DIR\n"
        "with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):\n"
        "    config = compose('config')\n"
        "print(config.p, config.partitioner.hops, config.tracking.experiment)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    top = schema.node(schema.JobKeys)
    assert done.stdout.split() == [
        str(top["p"]),
        str(top["partitioner"]["hops"]),
        top["tracking"]["experiment"],
    ]
