"""When two jobs are the same computation: a job's run key and aliases, and a sweep's id.

- A job's **run key** (the MLflow tag `run_key`, what resume looks for): a digest of its resolved
  config without the keys that say where things go (VOLATILE_KEYS) or where an input's checksummed
  bytes come from (ORIGIN_KEYS: `dataset.download`), the axes its training mode
  ignores (`TrainingMode.ignored_axes`) and the keys added later at their neutral value
  (gnnbench/config_values.py). Its **aliases** (`run_keys`, tag `run_key_aliases`) are the keys
  earlier versions gave the same job.
- A job's **identity as text** (`text_identity`): the same rule on a run's logged parameters.
- A **sweep's id**, so the same command resumes the same sweep.

A partition book's path is the partition stage's own (gnnbench/partition/stage/book_identity.py). This
module sits in the job layer, above the stages and below tracking; it loads the training modes
only where a run key needs them, so the sweep driver (sweep ids) and a train=none job's run key
load no torch.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

from gnnbench import config_values
from gnnbench.config_values import digest, is_neutral, is_neutral_text
from gnnbench.data.spec import ORIGIN_KEYS

# Top-level keys that say where things go, not what is computed: never in a run key or sweep id.
VOLATILE_KEYS = ("tracking", "resume", "hydra")
# What p=auto reads to choose p (num_gpus and the train group's memory budget): axes a mode
# ignores still count while p is auto and the mode does not ignore p.
P_AUTO_READS = ("num_gpus", "train")

# Keys one value of another key alone reads (`train.strategy=cluster`): with any other value they
# cannot change the job and stay out of its run key. Keys added later only: older keys read by one
# strategy (num_clusters) have always been in run keys and stay there.
READ_ONLY_UNDER = {
    "train.cluster_method": ("train.strategy", "cluster"),
    "train.cluster_boundary": ("train.strategy", "cluster"),
}


def _neutral_keys_present(config: Mapping[str, Any]) -> list[str]:
    """The KEYS_ADDED_LATER a resolved config holds at their neutral value."""
    present = []
    for dotted in config_values.KEYS_ADDED_LATER:
        section, key = dotted.split(".")
        block = config.get(section)
        if isinstance(block, Mapping) and key in block and is_neutral(dotted, block[key]):
            present.append(dotted)
    return present


def _without_keys(config: Mapping[str, Any], dotted_keys: Iterable[str]) -> dict[str, Any]:
    """A copy of a config without the given `section.key`s."""
    trimmed = dict(config)
    for dotted in dotted_keys:
        section, key = dotted.split(".")
        trimmed[section] = {name: v for name, v in trimmed[section].items() if name != key}
    return trimmed


# --- jobs -----------------------------------------------------------------------------------


def ignored_axes(config: Mapping[str, Any]) -> tuple[str, ...]:
    """Top-level keys that cannot change what this job computes: those its training mode declares
    (`TrainingMode.ignored_axes`), less what p=auto reads while p counts."""
    from gnnbench.train.modes import TRAINING_MODES

    ignored = TRAINING_MODES.get(str(config["train"]["mode"])).ignored_axes
    if config["p"] == "auto" and "p" not in ignored:
        return tuple(axis for axis in ignored if axis not in P_AUTO_READS)
    return tuple(ignored)


def unread_keys(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The READ_ONLY_UNDER keys the job's own values leave unread: out of its run key and of
    its aliases alike (no run was ever keyed with them while unread)."""
    unread = []
    for key, (condition, value) in READ_ONLY_UNDER.items():
        section, name = condition.split(".")
        if config.get(section, {}).get(name) != value:
            unread.append(key)
    return tuple(unread)


def run_keys(config: Mapping[str, Any]) -> list[str]:
    """The job's run key first, then its aliases: the keys earlier versions gave the same job,
    with some of the KEYS_ADDED_LATER it holds at their neutral value still in. Resume looks for
    all of them, so neither the runs from before a key existed nor those logged with it run again.

    Volatile keys never count, nor do the axes the job's train mode ignores, so
    `-m sync_interval=1,2 train=grad_avg` is one job run once and resumed once."""
    ignored = set(VOLATILE_KEYS) | set(ignored_axes(config))
    whole = {key: value for key, value in config.items() if key not in ignored}
    left_out = (*ORIGIN_KEYS, *unread_keys(config))
    whole = _without_keys(whole, [key for key in left_out if key in _dotted_keys(whole)])
    # a key a mode ignores inside a section (`partitioner.feature_rows`); jobs logged while it
    # still counted keep their keys as aliases
    inner = [key for key in ignored if "." in key and key in _dotted_keys(whole)]
    keys = []
    for counted in (_without_keys(whole, inner), whole) if inner else (whole,):
        present = _neutral_keys_present(counted)
        for size in range(len(present), -1, -1):  # every key dropped first: the run key
            for dropped in itertools.combinations(present, size):
                keys.append(digest(_without_keys(counted, dropped), 8))
    return list(dict.fromkeys(keys))


def _dotted_keys(config: Mapping[str, Any]) -> set[str]:
    """`section.key` of every key one level down."""
    return {f"{section}.{key}" for section, block in config.items() if isinstance(block, Mapping)
            for key in block}  # fmt: skip


def run_key(config: Mapping[str, Any]) -> str:
    """Deterministic identity of a job: the resolved config fields that change its result."""
    return run_keys(config)[0]


def text_identity(row: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """A job's identity from `section.key` -> value as text (a run's parameters, a sweep's
    planned values), told apart as its run key tells them: the axes its train mode ignores and
    the keys added later at their neutral value read ''."""
    mode = row.get("train.mode")
    config = {"train": {"mode": mode, "strategy": row.get("train.strategy")}, "p": row.get("p")}
    ignored = set(ignored_axes(config)) | set(unread_keys(config)) if mode else set()
    return tuple(
        (key, "" if {key, key.split(".")[0]} & ignored or is_neutral_text(key, text) else text)
        for key, text in sorted(row.items())
    )


def sweep_id_of(overrides: list[str], sweeper_params: Mapping[str, Any], experiment: str) -> str:
    """A sweep's identity: its overrides (volatile ones aside), sweeper params and experiment."""
    volatile = tuple(f"{key}." for key in VOLATILE_KEYS) + tuple(f"{key}=" for key in VOLATILE_KEYS)
    kept = sorted(o for o in overrides if not o.startswith(volatile))
    return digest({"overrides": kept, "params": dict(sweeper_params), "experiment": experiment}, 8)
