"""What `python -m gnnbench` checks and says before Hydra runs: its own help, quiet logs, and
command-line keys checked against the composed config.

Hydra answers a misspelled key (`partitoner=spring`, `train.epochz=3`, `partitioner.betta=1.1`)
with five to seven lines and exit 1. Here every `key=value` of the command line is parsed and
looked up in the config composed with the same group choices (each choice of a swept group), and
a key that is not there is one line naming the closest valid key and the valid ones, exit 2.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from gnnbench.errors import ConfigError

HELP = """\
gnnbench: benchmark and track distributed GNN training on partitioned graphs

usage:
  python -m gnnbench [KEY=VALUE ...]             one run (embedded defaults: synthetic, spring, p=4)
  python -m gnnbench -m KEY=A,B KEY=C,D ...      a sweep: every combination, one MLflow run each
  python -m gnnbench report [--sweep-id ID]      table, CSV and plots of a sweep (the latest)
  python -m gnnbench setup pyg_metis|distdgl_metis|all   set up the in-memory METIS baselines
  python -m gnnbench server [--store DIR] [--host H] [--port N]   an MLflow tracking server

the five sweep axes (and what else a run takes):
  dataset=NAME        {datasets}
  partitioner=NAME    {partitioners}
  p=N                 number of partitions, or auto (from the memory budget)
  sync_interval=N     epochs between model averaging (train=model_avg)
  num_gpus=N          training worker processes (one per GPU with CUDA, else CPU processes)
  train=MODE          {trains}
  model=NAME          {models}
  seed=N, resume=true|false, tracking.uri=URI, tracking.experiment=NAME
  any key inside a group: train.epochs=5, partitioner.beta=1.1, dataset.path=/data/g.txt

experiments (a sweep kept in conf/experiment/, run with -m):
  {experiments}

examples:
  python -m gnnbench dataset=cora partitioner=spring p=4 num_gpus=2
  python -m gnnbench -m dataset=cora partitioner=spring,hash p=2,4,8 train=none
  python -m gnnbench -m experiment=partition_quality
  mlflow ui --backend-store-uri sqlite:///mlflow.db

environment:
  GNNBENCH_HOME       cache root of prepared graphs and partition books (~/.cache/gnnbench)
  GNNBENCH_RAW_DIR    root of raw dataset files, laid out like shared/datasets

options:
  -h, --help          this help;  --hydra-help  Hydra's own help;  --cfg job  the composed config
  -v, --verbose       MLflow's and Hydra's informational lines too
exit status: 0 done, 2 a mistake or an expected failure (one line), 1 a sweep with failed jobs
or an unexpected error, 130/143 interrupted."""


def help_text(conf_dir: Path) -> str:
    """HELP with the choices of every config group filled in from conf/."""

    def choices(group: str) -> str:
        return ", ".join(sorted(path.stem for path in (conf_dir / group).glob("*.yaml")))

    groups = ("dataset", "partitioner", "train", "model", "experiment")
    return HELP.format(**{f"{group}s": choices(group) for group in groups})


def take_verbose(argv: list[str]) -> tuple[list[str], bool]:
    """argv without -v/--verbose, and whether it was there."""
    kept = [arg for arg in argv if arg not in ("-v", "--verbose")]
    return kept, len(kept) != len(argv)


def quiet_libraries() -> None:
    """MLflow's INFO lines ("Creating initial MLflow database tables…") only with -v."""
    os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")


def _plain_overrides(argv: list[str]) -> list[str]:
    """The `key=value` overrides a user typed (Hydra's own keys and +/~ forms are Hydra's)."""
    return [
        arg
        for arg in argv
        if "=" in arg and not arg.startswith(("-", "+", "~", "hydra.", "hydra/"))
    ]


def check_overrides(argv: list[str], conf_dir: Path) -> None:
    """Every command-line key exists in the composed config (each choice of a swept group)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import OverrideParseException
    from omegaconf import OmegaConf

    try:
        parsed = OverridesParser.create().parse_overrides(_plain_overrides(argv))
    except OverrideParseException as exc:
        first = str(exc).strip().splitlines()[0]
        raise ConfigError(f"cannot parse the command line: {first}") from None
    groups = {path.name for path in conf_dir.iterdir() if path.is_dir()}
    choices = {o.key_or_group: _values(o) for o in parsed if o.key_or_group in groups}
    keys = [o.key_or_group for o in parsed if o.key_or_group not in groups]
    primary = OmegaConf.load(conf_dir / "config.yaml")
    keys = [key for key in keys if not _set_by_primary_config(primary, key)]
    if not keys:  # composing costs a tenth of a second of start-up: only for the keys left
        return
    for selection in _selections(choices):
        config = _compose(conf_dir, selection)
        for key in keys:
            _check_key(config, key, selection)


def _set_by_primary_config(primary: Any, key: str) -> bool:
    """Whether conf/config.yaml itself sets `key` (p, seed, tracking.uri, partitioner.refine_passes):
    its own keys are in every composed config, whatever the group choices."""
    parts = key.split(".")
    if parts[0] in ("defaults", "hydra"):  # Hydra's own sections, not keys of the job's config
        return False
    node = primary
    for depth, part in enumerate(parts):
        if not hasattr(node, "keys") or part not in node.keys():
            return False
        if depth < len(parts) - 1:
            node = node[part]
    return True


def _values(override) -> list[str]:
    if override.is_sweep_override():
        return [str(value) for value in override.sweep_string_iterator()]
    return [str(override.value())]


def _selections(choices: Mapping[str, list[str]]) -> Iterator[dict[str, str]]:
    """The first choice of every group, then each other choice of a swept group in turn."""
    first = {group: values[0] for group, values in choices.items()}
    yield first
    for group, values in choices.items():
        for value in values[1:]:
            yield {**first, group: value}


def _compose(conf_dir: Path, selection: Mapping[str, str]):
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException

    overrides = [f"{group}={value}" for group, value in selection.items()]
    try:
        with initialize_config_dir(str(conf_dir), version_base="1.3"):
            return compose("config", overrides=overrides)
    except HydraException as exc:
        first = str(exc).strip().splitlines()[0]
        raise ConfigError(f"{' '.join(overrides)}: cannot compose the config ({first})") from None


def _check_key(config: Any, key: str, selection: Mapping[str, str]) -> None:
    node, walked = config, []
    parts = key.split(".")
    for depth, part in enumerate(parts):
        if not hasattr(node, "keys") or part not in node.keys():  # `in node` is False for ???
            _unknown(node, walked, part, selection)
        if depth < len(parts) - 1:  # reading a ??? leaf (dataset.path) would raise
            node = node[part]
        walked.append(part)


def _unknown(node: Any, walked: list[str], part: str, selection: Mapping[str, str]) -> None:
    prefix = ".".join(walked)
    name = f"{prefix}.{part}" if prefix else part
    if not hasattr(node, "keys"):
        raise ConfigError(f"{name}: {prefix} is a value ({node!r}), it has no keys")
    valid = sorted(str(key) for key in node.keys() if str(key) != "hydra")
    close = difflib.get_close_matches(part, valid, n=1, cutoff=0.6)
    hint = f"did you mean {prefix + '.' if prefix else ''}{close[0]}? " if close else ""
    where = f" for {walked[0]}={selection[walked[0]]}" if walked and walked[0] in selection else ""
    raise ConfigError(
        f"{name}: unknown key{where} ({hint}valid keys{' of ' + prefix if prefix else ''}: "
        f"{', '.join(valid)})"
    )
