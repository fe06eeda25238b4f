"""When two configs are the same computation: the one definition of job and book identity.

- A job's **run key** (the MLflow tag `run_key`, what resume looks for): a digest of its resolved
  config without the keys that say where things go (VOLATILE_KEYS) or where an input's checksummed
  bytes come from (ORIGIN_KEYS: `dataset.download`), the axes its training mode
  ignores (`TrainingMode.ignored_axes`) and the keys added later at their neutral value. Its
  **aliases** (`run_keys`, tag `run_key_aliases`) are the keys earlier versions gave the same job.
- A partition **book's path**: a digest of the store's content, `book_identity` (what of the
  partitioner config determines the book), p, seed and the code versions.
- **Keys added later** (KEYS_ADDED_LATER) and their neutral values, which keep both of the above
  where they were before the key existed.
- **Values**, one rule in two forms. A typed config value (what run keys and book paths digest)
  is neutral only in the neutral value's own type (`is_neutral`): `grid_dims: 2.0` or
  `chunk_refinement: 1` is no config from before the key (grid and grem reject both), so it keeps
  a key of its own and reaches that error instead of a cached book or a skipped job; and the
  digests hash JSON text, where 2 and 2.0 differ, so reading 2.0 as 2 there would move existing
  keys. A value as text (`as_text`: a run's logged parameters are text, and pandas reads
  whole-number columns with gaps as floats) has lost its type: there 2, 2.0, '2' and '2.0' are
  one value, and so are True, 'True' and 'true'.
- A **sweep's id**, so the same command resumes the same sweep.

The partition stage reads book paths here, so this module imports the partition package only in
the book functions and the training modes only where a run key needs them: the sweep driver
(sweep ids) loads neither, and a train=none job's run key loads no torch.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gnnbench.paths import gnnbench_home

if TYPE_CHECKING:
    from gnnbench.partition.spec import PartitionSpec

# Top-level keys that say where things go, not what is computed: never in a run key or sweep id.
VOLATILE_KEYS = ("tracking", "resume", "hydra")
# Keys inside a section that say where an input's bytes come from (checksummed, so the same
# bytes whatever the mirror): never in a run key, never logged as a parameter.
ORIGIN_KEYS = ("dataset.download",)
# What p=auto reads to choose p (num_gpus and the train group's memory budget): axes a mode
# ignores still count while p is auto and the mode does not ignore p.
P_AUTO_READS = ("num_gpus", "train")

# Config keys added after runs and partition books existed, each with the value that computes what
# a config without the key computed. At that value a key is left out of a job's run key, and a
# partitioner's own key (and refine_objective) out of its book's identity, so resuming after an
# upgrade still finds the older runs and books instead of running them again (chunk_edges always
# was in streaming partitioners' book identities, so it stays there). A key whose new default
# changes results does not belong here. Keys are per section, not per partitioner: a partitioner
# that later takes a key of the same name must share its neutral value or pick another name.
KEYS_ADDED_LATER: dict[str, Any] = {
    "partitioner.chunk_edges": 1048576,  # moved into the shared block, with the old default
    "partitioner.refine_objective": "edge_cut",
    "partitioner.chunk_refinement": True,  # grem's
    "partitioner.grid_dims": 2,  # grid's
    "partitioner.subpart_lp_passes": 0,  # quotient's
    "partitioner.subpart_slack": 1.03,  # quotient's
    "partitioner.quotient_ncuts": 1,  # quotient's
    "partitioner.subpart_fm_passes": 0,  # quotient's
    "partitioner.node_fm_passes": 0,  # quotient's
    "partitioner.coarsening": "base",  # quotient's
    "partitioner.cluster_passes": 5,  # quotient's (read only with coarsening=clusters)
    "partitioner.coarse_nodes": 8192,  # quotient's (read only with coarsening=clusters)
    "partitioner.level_fm_passes": 0,  # quotient's (read only with coarsening=clusters)
    "partitioner.vcycles": 0,  # quotient's (read only with coarsening=clusters)
    "train.optimizer_state": "local",
    "dataset.features": "none",
    "dataset.feature_dtype": "float32",
    "dataset.split_fractions": [0.70, 0.15, 0.15],
    "partitioner.feature_rows": "copy",  # books before it copied feature rows into each partition
    "train.cluster_method": "bfs",
    "train.cluster_boundary": True,  # cluster batches held their boundary before the key
}
# Keys one value of another key alone reads (`train.strategy=cluster`): with any other value they
# cannot change the job and stay out of its run key. Keys added later only: older keys read by one
# strategy (num_clusters) have always been in run keys and stay there.
READ_ONLY_UNDER = {
    "train.cluster_method": ("train.strategy", "cluster"),
    "train.cluster_boundary": ("train.strategy", "cluster"),
}


def digest(payload: Any, size: int) -> str:
    """Hex blake2b of the payload's sorted JSON (anything else as its str): `size` bytes."""
    text = json.dumps(payload, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=size).hexdigest()


# --- values (the rule: module docstring) ----------------------------------------------------


def is_neutral(dotted_key: str, value: Any) -> bool:
    """Whether `section.key` is one of the KEYS_ADDED_LATER and holds its neutral value, of the
    neutral value's type (1 is not True, 2.0 is not 2)."""
    if dotted_key not in KEYS_ADDED_LATER:
        return False
    neutral = KEYS_ADDED_LATER[dotted_key]
    return type(value) is type(neutral) and value == neutral


def as_text(value: Any) -> str:
    """A value as text that compares equal between a config and a run: 4, 4.0, '4' -> '4',
    1048576 -> '1048576', 0.10 -> '0.1'; True, 'True', 'true' -> 'true'; absent (None, NaN: a key
    the chosen partitioner lacks) -> ''."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool) or str(value).lower() in ("true", "false"):
        return str(value).lower()
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    return str(int(number)) if number.is_integer() else repr(number)


def is_neutral_text(dotted_key: str, text: str) -> bool:
    """`is_neutral` for a value as text (`as_text`), whose type is gone."""
    return dotted_key in KEYS_ADDED_LATER and text == as_text(KEYS_ADDED_LATER[dotted_key])


def _neutral_keys_present(config: Mapping[str, Any]) -> list[str]:
    """The KEYS_ADDED_LATER a resolved config holds at their neutral value."""
    present = []
    for dotted in KEYS_ADDED_LATER:
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


# --- partition books ------------------------------------------------------------------------


def book_identity(spec: PartitionSpec) -> dict[str, Any]:
    """What of a partitioner spec determines its book: the shared keys that change it, the own
    keys, chunk_edges only where the algorithm streams by it (the GNN-ready step's output does
    not depend on it), and for a partitioner running another (its `nested_spec`) that one's
    identity and code version. The memory cap changes whether it runs, not what, and the balance
    bound only what is reported: neither is in it. Also the book's meta.json `parameters`."""
    from gnnbench.partition.base import PARTITIONERS, algorithm_version
    from gnnbench.partition.spec import takes_keyword

    identity = {"name": spec.name, "hops": spec.hops, "refine_passes": spec.refine_passes}
    # chunk_edges is not neutral here: streaming partitioners' books always held it
    if spec.refine_passes and not is_neutral("partitioner.refine_objective", spec.refine_objective):
        identity["refine_objective"] = spec.refine_objective
    if not is_neutral("partitioner.feature_rows", spec.feature_rows):
        identity["feature_rows"] = spec.feature_rows  # copy books keep their key
    partition_fn = PARTITIONERS.get(spec.name)
    if takes_keyword(partition_fn, "chunk_edges"):
        identity["chunk_edges"] = spec.chunk_edges
    nested_spec = getattr(partition_fn, "nested_spec", None)
    if nested_spec is not None:
        inner = nested_spec(**spec.kwargs())  # the partitioner it runs: its base
        identity["nested"] = {
            "base": book_identity(inner),
            "base_code_version": algorithm_version(inner.name),
        }
    own = {key: v for key, v in spec.params.items() if not is_neutral(f"partitioner.{key}", v)}
    return {**identity, **own}


def book_path(
    dataset_name: str,
    fingerprint: str,
    partitioner: PartitionSpec,
    p: int,
    seed: int,
    node_data: bool = True,
) -> Path:
    """Directory of the book for (dataset content, algorithm, parameters, p, seed).

    A structure-only book (no per-partition features and labels) is a different book, and so is
    one sharing the store's feature rows instead of copying them (absent from `book_identity` at
    its older value, copy, so existing books keep their path)."""
    from gnnbench.partition.base import algorithm_version
    from gnnbench.partition.book import FORMAT_VERSION

    identity = {
        "fingerprint": fingerprint,
        "partitioner": book_identity(partitioner),
        "p": p,
        "seed": seed,
        "format_version": FORMAT_VERSION,
        "code_version": algorithm_version(partitioner.name),
    }
    if not node_data:
        identity["structure_only"] = True
        identity["partitioner"].pop("feature_rows", None)  # no feature rows to copy or share
    if partitioner.refine_passes:  # a refined book also depends on the post-pass's code
        from gnnbench.partition.refine import REFINE_VERSION

        identity["refine_version"] = REFINE_VERSION
    name = f"{dataset_name}-{partitioner.name}-p{p}-s{seed}-{digest(identity, 6)}"
    return gnnbench_home() / "partitions" / name
