"""gnnbench.identity: run keys and book paths stay where the code before it put them, keys added
later at their neutral value move neither, modes declare the axes they ignore, one definition."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from helpers.configured import BASE, job_config

from gnnbench import config_values
from gnnbench.config_values import as_text, is_neutral
from gnnbench.errors import ConfigError
from gnnbench.identity import run_key, run_keys, text_identity
from gnnbench.partition.spec import PartitionSpec
from gnnbench.partition.stage.book_identity import book_path
from gnnbench.spec_keys import ReadOnlyMap
from gnnbench.train.modes import TRAINING_MODES, TrainingMode

# Run keys the code before gnnbench.identity gave (commit 6e3ab65, gnnbench.track.sweep.run_keys):
# a store it wrote must still resume every job.
BASE_KEYS = {
    ("model_avg", 4): "6cb25cf0bb3fc1c1",
    ("model_avg", "auto"): "9aa6a76c0a557e9a",
    ("grad_avg", 4): "3405bbbb24c994c5",
    ("grad_avg", "auto"): "08573a9f8edb9f1c",
    ("centralized", 4): "fd021819f4eddf23",
    ("centralized", "auto"): "fd021819f4eddf23",
    ("none", 4): "376eeee9dac20077",
    ("none", "auto"): "746c5cf0b1d91a6d",
}
# ... and of composed configs: (run key, the oldest alias: every neutral key still in, how many)
COMPOSED_KEYS = {
    ("train=model_avg",): ("ba431e97917d5bec", "02f65ed73acb1a36", 128),
    ("train=grad_avg",): ("9e499fb57adb59df", "fbd9701d27ad8b86", 64),
    ("train=centralized",): ("281c51e7d9f7ed21", "a53908230076a41c", 16),
    ("train=none", "p=auto"): ("85c1fed02e6ec9aa", "b402f23816b372f9", 64),
    ("partitioner=grem",): ("a4fdf8a7cfdde88d", "89fce0b62c50c2e5", 256),
    ("partitioner=grid", "train=none"): ("206adaf1345164fe", "133d124c1810ef1d", 128),
}


# Run keys of jobs in a store written by 71814f5, before the keys added since (feature rows,
# split fractions, feature dtype) existed: (its command's overrides, the key it logged)
STORE_KEYS = [
    (("partitioner=spring", "p=2", "train=none"), "513a60135307b1d0"),
    (("dataset=cora", "partitioner=spring", "p=2", "train=model_avg", "train.epochs=2",
      "num_gpus=2", "partitioner.feature_rows=copy"), "0418c3b7ac28a640"),
]  # fmt: skip


@pytest.mark.parametrize(("overrides", "logged"), STORE_KEYS)
def test_jobs_of_an_older_store_keep_their_run_keys(overrides, logged):
    """A partition-only job's books hold no feature rows, so feature_rows (default shared, which
    the older code did not have: it copied) leaves its run key alone; a training job keeps its
    key with the older behaviour, feature_rows=copy."""
    assert run_key(job_config(*overrides)) == logged


def test_a_partition_only_job_ignores_feature_rows_and_keeps_the_key_that_counted_it(
    monkeypatch,
):
    overrides = [("train=none", f"partitioner.feature_rows={v}") for v in ("copy", "shared")]
    copy, shared = (job_config(*pair) for pair in overrides)
    assert run_key(copy) == run_key(shared)
    trained = [job_config(f"partitioner.feature_rows={v}") for v in ("copy", "shared")]
    assert run_key(trained[0]) != run_key(trained[1])
    keys = run_keys(shared)
    none = TRAINING_MODES.get("none")
    monkeypatch.setattr(none, "ignored_axes", none.ignored_axes[:-1])  # before it was ignored
    assert none.ignored_axes[-1] == "train" and run_key(shared) in keys


@pytest.mark.parametrize(("mode", "p"), BASE_KEYS)
def test_run_keys_are_those_of_the_code_before(mode, p):
    assert run_key({**BASE, "p": p, "train": {"mode": mode, "epochs": 3}}) == BASE_KEYS[mode, p]


# the oldest aliases before train.batch_preparation was added: runs logged with every neutral key
# of that code in stay found
BEFORE_BATCH_PREPARATION = {("train=model_avg",): "2cf8090b1764d1f8",
                            ("train=grad_avg",): "73c6bf2fe732be55",
                            ("train=centralized",): "0de28569036fc272"}  # fmt: skip


@pytest.mark.parametrize("overrides", COMPOSED_KEYS)
def test_composed_configs_keep_their_run_keys_and_aliases(overrides):
    keys = run_keys(job_config(*overrides))
    assert (keys[0], keys[-1], len(keys)) == COMPOSED_KEYS[overrides]
    assert BEFORE_BATCH_PREPARATION.get(overrides, keys[0]) in keys


# (key, its neutral value, another value, the neutral value in another type). No key added so far
# holds a float: spring's beta stands in for one, declared added later by the test.
ADDED = [
    ("partitioner", "grid", "grid_dims", 2, 1, 2.0),
    ("partitioner", "grem", "chunk_refinement", True, False, 1),
    ("partitioner", "spring", "beta", 2.0, 1.5, 2),
]


def _older_and_newer(section, partitioner, key, value):
    """The job config without `section.key` (before it existed) and with it at `value`."""
    older = {**BASE, "partitioner": {"name": partitioner}, "train": {"mode": "model_avg"}}
    return older, {**older, section: {**older[section], key: value}}


def _book(spec: PartitionSpec, key: str | None = None) -> Path:
    """The spec's book path; without its own key `key` (a partitioner from before the key)."""
    if key is not None:
        params = {name: value for name, value in spec.params.items() if name != key}
        spec = dataclasses.replace(spec, params=ReadOnlyMap(params))
    return book_path("g", "f", spec, 4, 0)


@pytest.mark.parametrize(("section", "partitioner", "key", "neutral", "other", "retyped"), ADDED)
def test_a_key_added_later_at_its_neutral_value_keeps_run_keys_and_book_paths(
    monkeypatch, gnnbench_home, section, partitioner, key, neutral, other, retyped
):
    """At the neutral value (int, bool, float) a job keeps its run key and a partitioner its book;
    another value, or the neutral one in another type (2.0 for 2, 1 for true, 2 for 2.0), is a
    config no earlier version ran: it gets keys of its own (and, 2.0 for an int or 1 for a bool,
    the partitioner spec's one-line type error)."""
    monkeypatch.setitem(config_values.KEYS_ADDED_LATER, f"{section}.{key}", neutral)
    older, newer = _older_and_newer(section, partitioner, key, neutral)
    assert run_key(newer) == run_key(older)
    assert run_key(older) in run_keys(newer) and len(run_keys(newer)) == 2 * len(run_keys(older))
    spec = PartitionSpec.defaults(partitioner, **{key: neutral})
    assert _book(spec) == _book(spec, key)
    for value in (other, retyped):
        assert run_key(_older_and_newer(section, partitioner, key, value)[1]) != run_key(older)
        assert not is_neutral(f"{section}.{key}", value)
    assert _book(PartitionSpec.defaults(partitioner, **{key: other})) != _book(spec, key)
    if isinstance(neutral, float):  # an int fits a float parameter: a book of its own
        assert _book(PartitionSpec.defaults(partitioner, **{key: retyped})) != _book(spec, key)
    else:  # 2.0 for an int, 1 for a bool: refused when the spec is parsed (its annotation)
        with pytest.raises(ConfigError, match=rf"^partitioner\.{key}: expected "):
            PartitionSpec.defaults(partitioner, **{key: retyped})


@pytest.mark.parametrize(
    ("given", "text"),
    [(4, "4"), ("4.0", "4"), (1048576, "1048576"), (1048580.0, "1048580"), (0.1, "0.1"),
     ("0.01", "0.01"), (True, "true"), ("False", "false"), (None, ""), ("sage", "sage")],
)  # fmt: skip
def test_values_compare_as_text_without_rounding(given, text):
    assert as_text(given) == text


def test_as_text_a_neutral_value_is_neutral_whatever_its_lost_type():
    """A run's logged `2` or a pandas column's 2.0 is the grid_dims=2 of runs without the key:
    one job, as resume has it (a typed 2.0 never ran: grid rejects it)."""
    row = {"train.mode": "none", "p": "4", "partitioner.name": "grid"}
    without = text_identity({**row, "partitioner.grid_dims": ""})
    for logged in (2, 2.0, "2", "2.0"):
        assert text_identity({**row, "partitioner.grid_dims": as_text(logged)}) == without
    assert text_identity({**row, "partitioner.grid_dims": "1"}) != without


def test_text_identity_drops_what_the_mode_ignores():
    """Centralized ignores p and the partitioner; train=none with p=auto reads num_gpus."""
    central = {"train.mode": "centralized", "seed": "0"}
    assert text_identity({**central, "p": "4"}) == text_identity({**central, "p": "8"})
    assert text_identity({**central, "seed": "1"}) != text_identity(central)
    auto = {"train.mode": "none", "p": "auto"}
    assert text_identity({**auto, "num_gpus": "1"}) != text_identity({**auto, "num_gpus": "2"})
    fixed = {"train.mode": "none", "p": "4"}
    assert text_identity({**fixed, "num_gpus": "1"}) == text_identity({**fixed, "num_gpus": "2"})


@TRAINING_MODES.register("test_no_seed")
class NoSeed(TrainingMode):
    """A mode registered outside gnnbench, declaring an axis of its own to ignore."""

    ignored_axes = ("seed",)


def test_a_new_mode_declares_the_axes_it_ignores():
    def key(mode: str, seed: int) -> str:
        return run_key({**BASE, "seed": seed, "train": {"mode": mode}})

    assert key("test_no_seed", 0) == key("test_no_seed", 1)
    assert key("model_avg", 0) != key("model_avg", 1)
    assert key("test_no_seed", 0) != key("model_avg", 0)  # the mode is part of the job


# Each identity rule and the one module that may define it (docs/design.md, "Where each rule
# lives"): run keys and sweep ids, the keys added later and the value rule, book paths.
RULES = {
    "gnnbench/identity.py": r"def (run_keys?|ignored_axes|sweep_id_of|text_identity)\b"
    r"|VOLATILE_KEYS\s*=|READ_ONLY_UNDER\s*=",
    "gnnbench/config_values.py": r"def (is_neutral\w*|as_text|digest)\b|KEYS_ADDED_LATER\s*[:=]",
    "gnnbench/partition/stage/book_identity.py": r"def (book_path|book_identity)\b",
}


def test_identity_is_defined_once():
    root = Path(__file__).resolve().parent.parent
    sources = [*(root / "gnnbench").rglob("*.py"), *(root / "scripts").glob("*.py")]
    for home, rule in RULES.items():
        pattern = re.compile(rf"^\s*({rule})", re.MULTILINE)
        elsewhere = [
            f"{path.relative_to(root)}: {match.group(0).strip()}"
            for path in sources
            if path.relative_to(root).as_posix() != home
            for match in pattern.finditer(path.read_text())
        ]
        assert elsewhere == [], f"defined outside {home}"
        assert pattern.search((root / home).read_text()), f"{home} no longer defines its rule"
