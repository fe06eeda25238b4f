"""What `python -m gnnbench` checks and says before Hydra runs: its own help, quiet logs, and
command-line keys checked against the composed config.

Hydra answers a misspelled key (`partitoner=spring`, `train.epochz=3`, `partitioner.betta=1.1`)
with five to seven lines and exit 1. Here every `key=value` of the command line is parsed and
looked up in the config composed with the same group choices (each choice of a swept group), and
a key that is not there is one line naming the closest valid key and the valid ones, exit 2.
Groups, their choices and the composed configs come from the config search path Hydra builds for
the same command line (`HydraConfigs`: gnnbench/conf, `--config-dir`, `hydra.searchpath`). A
mapping given for a key holding one replaces it (`replace_mappings`), where Hydra would merge. A
partitioner file setting a key every partitioner shares is one line (`check_shared_keys`).
"""

from __future__ import annotations

import difflib
import os
import warnings
from collections.abc import Iterator, Mapping
from functools import cached_property
from typing import Any

from gnnbench import schema
from gnnbench.errors import ConfigError
from gnnbench.paths import CONF_DIR, CONFIG_NAME

HELP = """\
gnnbench: benchmark and track distributed GNN training on partitioned graphs

usage:
  python -m gnnbench [KEY=VALUE ...]             one run (embedded defaults: synthetic, spring, p=4)
  python -m gnnbench -m KEY=A,B KEY=C,D ...      a sweep: every combination, one MLflow run each
  python -m gnnbench report [--sweep-id ID]      table, CSV and plots of a sweep (the latest)
  python -m gnnbench report --experiment NAME --out FILE   a whole experiment's table
  python -m gnnbench setup pyg_metis|distdgl_metis|all   set up the in-memory METIS baselines
  python -m gnnbench download NAME|all           fetch public datasets now (else on first use)
  python -m gnnbench baseline save|check FILE    a sweep's figures as a baseline; exit 1 on regressions
  python -m gnnbench server [--store DIR] [--host H] [--port N]   an MLflow tracking server
  python -m gnnbench wheelhouse --present FILE --out DIR   wheels for a machine without an index

the sweep axes (any key can be swept; these are the usual ones) and what else a run takes:
  dataset=NAME        {datasets}
  partitioner=NAME    {partitioners}
  p=N                 number of partitions, or auto (from the memory budget)
  sync_interval=N     epochs between model averaging (train=model_avg)
  num_gpus=N          training worker processes (one per GPU with CUDA, else CPU processes)
  train=MODE          {trains}
  model=NAME          {models}
  seed=N, resume=true|false, tracking.uri=URI, tracking.experiment=NAME
  any key inside a group: train.epochs=5, partitioner.beta=1.1, dataset.path=/data/g.txt

experiments (a sweep kept in gnnbench/conf/experiment/, run with -m):
  {experiments}

examples:
  python -m gnnbench dataset=cora partitioner=spring p=4 num_gpus=2
  python -m gnnbench -m dataset=cora partitioner=spring,hash p=2,4,8 train=none
  python -m gnnbench -m experiment=partition_quality
  mlflow ui --backend-store-uri sqlite:///mlflow.db

environment:
  GNNBENCH_HOME       cache root of prepared graphs and partition books (~/.cache/gnnbench)
  GNNBENCH_RAW_DIR    root of raw dataset files, laid out like shared/datasets (public ones
                      are downloaded there on first use; default $GNNBENCH_HOME/raw)
  GNNBENCH_DOWNLOAD_BASE  http://host:port of a mirror: <base>/<origin host>/<origin path>

options:
  -h, --help          this help;  --hydra-help  Hydra's own help;  --cfg job  the composed config
  -v, --verbose       MLflow's and Hydra's informational lines too
exit status: 0 done, 2 a mistake or an expected failure (one line), 1 a sweep with failed jobs
or an unexpected error, 130/143 interrupted."""


class HydraConfigs:
    """The configs Hydra will compose for one command line: the config search path Hydra builds
    from the same arguments (gnnbench/conf, `--config-path`, `--config-name`, `--config-dir`,
    `hydra.searchpath`), its groups, their choices and composed configs. Hydra has no public way
    to get that search path before it runs, so this calls the hydra._internal functions that
    `hydra.main` calls (hydra-core 1.3)."""

    def __init__(self, argv: list[str]) -> None:
        from hydra._internal.config_loader_impl import ConfigLoaderImpl
        from hydra._internal.utils import get_args_parser

        args = get_args_parser().parse_args(argv)
        self.overrides: list[str] = list(args.overrides)
        self.config_name: str = args.config_name or CONFIG_NAME
        self._searchpath = [o for o in self.overrides if o.startswith("hydra.searchpath=")]
        self._loader = ConfigLoaderImpl(config_search_path=_search_path(args))
        self._repository = self._loader.repository
        self._primary = self._repository.load_config(self.config_name)
        primary = self.primary()
        if self._searchpath or (primary is not None and "searchpath" in primary.get("hydra", {})):
            with warnings.catch_warnings():  # Hydra warns of a missing searchpath entry itself
                warnings.simplefilter("ignore")  # (a copy of the repository: 25 ms, so only here)
                _, self._repository = self._loader._parse_overrides_and_create_caching_repo(
                    self.config_name, self._searchpath
                )
        self._composed: dict[tuple[str, ...], Any] = {}

    @cached_property
    def groups(self) -> set[str]:
        """The top-level config groups (dataset, partitioner, ..., and Hydra's own `hydra`)."""
        from hydra.core.object_type import ObjectType

        return set(self._repository.get_group_options("", ObjectType.GROUP))

    def choices(self, group: str) -> list[str]:
        """The config files of `group` on the search path, by name."""
        from hydra.core.object_type import ObjectType

        return sorted(self._repository.get_group_options(group, ObjectType.CONFIG))

    def primary(self) -> Any:
        """The primary config file as written (None where there is none)."""
        return None if self._primary is None else self._primary.config

    def compose(self, overrides: tuple[str, ...]) -> Any:
        """The config Hydra composes with these overrides (its `hydra` node included)."""
        from hydra.types import RunMode

        if overrides not in self._composed:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self._composed[overrides] = self._loader.load_configuration(
                    self.config_name, [*self._searchpath, *overrides], RunMode.RUN
                )
        return self._composed[overrides]

    def check_group_file(self, group: str, choice: str) -> None:
        """The group file sets no key of the primary config's block of its group (one line)."""
        from gnnbench.composition import check_group_file

        check_group_file(self._loader, self._repository, group, choice, self._searchpath)


def _search_path(args: Any) -> Any:
    """Hydra's config search path for its parsed arguments, as `hydra.main` builds it: Hydra's
    own configs, the primary config directory (gnnbench/conf or `--config-path`), and
    `--config-dir` before them (hydra/_internal/utils.py, _run_hydra)."""
    from hydra._internal.utils import create_automatic_config_search_path
    from hydra.core.config_search_path import SearchPathQuery

    main_file = str(CONF_DIR.parent / "__main__.py")  # where hydra.main is declared
    search_path = create_automatic_config_search_path(
        main_file, None, args.config_path or str(CONF_DIR)
    )
    if args.config_dir is not None:
        config_dir = os.path.abspath(args.config_dir)
        if not os.path.isdir(config_dir):
            raise ConfigError(f"--config-dir {args.config_dir}: no such directory")
        search_path.prepend(
            "command-line", f"file://{config_dir}", anchor=SearchPathQuery(provider="schema")
        )
    return search_path


def help_text(configs: HydraConfigs) -> str:
    """HELP with the choices of every config group filled in from the search path."""

    def choices(group: str) -> str:
        return ", ".join(configs.choices(group))

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


def check_group_choices(configs: HydraConfigs) -> None:
    """Reject `group=value` overrides that name no config file on the search path, in one line."""
    groups = configs.groups
    for arg in configs.overrides:
        if "=" not in arg or arg.startswith(("-", "+", "~", "hydra")):
            continue
        key, value = arg.split("=", 1)
        if key not in groups or "(" in value or "*" in value:
            continue
        choices = configs.choices(key)
        for choice in value.split(","):
            if choice.strip() not in choices and choice.strip() != "null":
                raise ConfigError(
                    f"{key}={choice}: unknown {key} (expected one of: {', '.join(choices)})"
                )


def check_overrides(configs: HydraConfigs) -> None:
    """Every command-line key exists in the composed config (each choice of a swept group)."""
    parsed = _parsed_plain_overrides(configs)
    choices = _group_choices(parsed, configs)
    keys = [o.key_or_group for o in parsed if o.key_or_group not in choices]
    primary = configs.primary()
    keys = [key for key in keys if not _set_by_primary_config(primary, key)]
    if not keys:  # composing costs a tenth of a second of start-up: only for the keys left
        return
    for selection in _selections(choices):
        config = _compose(configs, selection)
        for key in keys:
            _check_key(config, key, selection)


def check_shared_keys(configs: HydraConfigs) -> None:
    """No partitioner or dataset file the command line runs (each choice of each selection: the
    command line's, an experiment's, its sweep's) sets a key every file of its group shares."""
    from gnnbench.composition import SHARED_BLOCK_GROUPS, sweep_grid

    parsed = _parsed_plain_overrides(configs)
    choices = _group_choices(parsed, configs)
    checked = set()
    for selection in _selections(choices):
        hydra = _compose(configs, selection).hydra
        params = hydra.sweeper.get("params") or {}
        for group in SHARED_BLOCK_GROUPS:
            if group in choices:
                runs = choices[group]
            elif group in params:
                runs = sweep_grid((), {group: params[group]})[group]
            else:
                runs = [hydra.runtime.choices.get(group)]
            for choice in set(runs) - checked - {None, "null"}:
                configs.check_group_file(group, choice)
                checked.add(choice)


def replace_mappings(argv: list[str], configs: HydraConfigs) -> list[str]:
    """argv with each `key={...}` whose key holds a mapping given as `~key +key={...}`: Hydra
    merges a command-line mapping into the config's (and refuses a key it lacks), where
    gnnbench's command line replaces it, so `partitioner.base_keys={chunk_fraction: 0.05}` drops
    quotient's default `passes: 3` (README)."""
    from omegaconf import OmegaConf

    parsed = _parsed_plain_overrides(configs)
    given = [o for o in parsed if o.key_or_group not in configs.groups and _all_mappings(o)]
    if not given:
        return argv
    config = _compose(configs, next(_selections(_group_choices(parsed, configs))))
    replaced = {
        o.input_line: o.key_or_group
        for o in given
        if OmegaConf.is_dict(OmegaConf.select(config, o.key_or_group, throw_on_missing=False))
    }
    return [
        part
        for arg in argv
        for part in ((f"~{replaced[arg]}", f"+{arg}") if arg in replaced else (arg,))
    ]


def _all_mappings(override) -> bool:
    values = list(override.sweep_iterator()) if override.is_sweep_override() else [override.value()]
    return all(isinstance(value, dict) for value in values)


def _parsed_plain_overrides(configs: HydraConfigs) -> list:
    """The command line's plain `key=value` overrides, parsed by Hydra's grammar."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import OverrideParseException

    try:
        return OverridesParser.create().parse_overrides(_plain_overrides(configs.overrides))
    except OverrideParseException as exc:
        first = str(exc).strip().splitlines()[0]
        raise ConfigError(f"cannot parse the command line: {first}") from None


def _set_by_primary_config(primary: Any, key: str) -> bool:
    """Whether the schema (gnnbench/schema.py) or the primary config itself sets `key` (p, seed,
    tracking.uri, partitioner.refine_passes): their keys are in every composed config, whatever
    the group choices."""
    parts = key.split(".")
    if parts[0] in ("defaults", "hydra"):  # Hydra's own sections, not keys of the job's config
        return False
    return _holds(schema.node(schema.JobKeys), parts) or _holds(primary, parts)


def _holds(node: Any, parts: list[str]) -> bool:
    """Whether the nested config `node` has the key path `parts`."""
    for depth, part in enumerate(parts):
        if not hasattr(node, "keys") or part not in node.keys():
            return False
        if depth < len(parts) - 1:
            node = node[part]
    return True


def _group_choices(parsed: list, configs: HydraConfigs) -> dict[str, list[str]]:
    """{group: its choices} of the group overrides among `parsed`."""
    return {o.key_or_group: _values(o) for o in parsed if o.key_or_group in configs.groups}


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


def _compose(configs: HydraConfigs, selection: Mapping[str, str]):
    from hydra.errors import HydraException

    overrides = tuple(f"{group}={value}" for group, value in selection.items())
    try:
        return configs.compose(overrides)
    except HydraException as exc:
        first = str(exc).strip().splitlines()[0]
        given = f"{' '.join(overrides)}: " if overrides else ""
        raise ConfigError(f"{given}cannot compose the config ({first})") from None


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
    if name in (optional := schema.optional_keys()):
        raise ConfigError(
            f"{name}: an optional key this config leaves out (default {optional[name]!r}); "
            f"set it with +{name}=<value>"
        )
    valid = sorted(str(key) for key in node.keys() if str(key) != "hydra")
    close = difflib.get_close_matches(part, valid, n=1, cutoff=0.6)
    hint = f"did you mean {prefix + '.' if prefix else ''}{close[0]}? " if close else ""
    where = f" for {walked[0]}={selection[walked[0]]}" if walked and walked[0] in selection else ""
    raise ConfigError(
        f"{name}: unknown key{where} ({hint}valid keys{' of ' + prefix if prefix else ''}: "
        f"{', '.join(valid)})"
    )
