"""The typed specs: partition keys checked against the partitioner's signature, dataset keys
against the source's, the job's top level; defaults in YAML only."""

from __future__ import annotations

import dataclasses
import functools
import inspect

import numpy as np
import pytest
from helpers.configured import job_config

from gnnbench import schema
from gnnbench.data.datasets import store_path
from gnnbench.data.spec import DataSpec
from gnnbench.errors import ConfigError
from gnnbench.partition.base import (
    PARTITIONERS,
    PartitionerTraits,
    partitioner_traits,
    register_partitioner,
)
from gnnbench.partition.spec import (
    FEATURE_ROWS,
    SHARED_KEYS,
    PartitionSpec,
    default_config,
    own_keys,
    vertex_balance_bound,
)
from gnnbench.partition.stage import book
from gnnbench.partition.stage.book_identity import book_path
from gnnbench.spec import JobSpec

# Book digests of every partitioner's default config before PartitionSpec (commit 2c55586):
# the meaning is unchanged, so the cached books must stay where they are.
BOOK_DIGESTS = {
    "dbh": "2e02fe763ac1",
    "distdgl_metis": "50678edc73ee",  # VERSION 2 (issue 28: a structure run and a feature run)
    "fennel": "9edd1be46679",
    "greedy": "6be2d83d93dc",
    "grem": "085235b01417",
    "grid": "80193b2622fa",
    "hash": "83c73a7e94b2",
    "hdrf": "b172e3fb92ba",
    "heistream": "def47599cedf",
    "ldg": "9a08ee7c9d07",
    "metis": "cfc34138e898",
    "pyg_metis": "febf60da9b32",  # VERSION bumped likewise
    "spring": "bcef8b1f1307",
    "twops": "d30a5fa4baeb",
}


@pytest.mark.parametrize("name", PARTITIONERS.names())
def test_every_partitioner_has_its_keys_in_yaml_only(name):
    """Keyword-only parameters without defaults; the YAML names exactly those."""
    parameters = inspect.signature(PARTITIONERS.get(name)).parameters
    assert list(parameters)[:3] == ["store", "p", "seed"]
    for key, parameter in list(parameters.items())[3:]:
        assert parameter.kind is inspect.Parameter.KEYWORD_ONLY, f"{name}: {key} not keyword-only"
        assert parameter.default is inspect.Parameter.empty, f"{name}: {key} has a code default"
    spec = PartitionSpec.defaults(name)
    assert set(spec.params) == set(own_keys(PARTITIONERS.get(name)))
    assert PartitionSpec.from_config(spec.to_config()) == spec


def test_book_keys_unchanged(gnnbench_home, monkeypatch):
    """Books copying their feature rows (all books before partitioner.feature_rows) keep their
    key; structure-only books have no feature rows, so the default (shared) keeps theirs too.
    Book format 3 (the one meter, issue 28: books carry measured figures, and those of the old
    meter must not be reused) moved every book once; under format 2 every key is as before."""
    monkeypatch.setattr(book, "FORMAT_VERSION", 2)
    digests = {
        name: book_path(
            "g", "f", PartitionSpec.defaults(name, feature_rows="copy"), 4, 0
        ).name.rsplit("-", 1)[1]
        for name in BOOK_DIGESTS
    }
    assert digests == BOOK_DIGESTS
    for name in ("spring", "ldg"):
        copy, shared = (PartitionSpec.defaults(name, feature_rows=rows) for rows in FEATURE_ROWS)
        assert book_path("g", "f", copy, 4, 0) != book_path("g", "f", shared, 4, 0)
        assert book_path("g", "f", copy, 4, 0, False) == book_path("g", "f", shared, 4, 0, False)


def test_a_key_added_later_changes_the_book_key_off_its_neutral_value(gnnbench_home):
    """grem's chunk_refinement came after its books: true (BOOK_DIGESTS) keeps their key."""
    refined = book_path("g", "f", PartitionSpec.defaults("grem"), 4, 0)
    placed = book_path("g", "f", PartitionSpec.defaults("grem", chunk_refinement=False), 4, 0)
    assert refined != placed


@pytest.mark.parametrize(
    ("group", "keys"),
    [
        ("partitioner", SHARED_KEYS),
        ("dataset", schema.composed_keys(schema.DatasetKeys)),
    ],
)
def test_shared_keys_live_once_in_the_shared_block(group, keys):
    """The schema's block holds them; a group file repeating one would be overridden."""
    from gnnbench.paths import CONF_DIR

    for path in sorted((CONF_DIR / group).glob("*.yaml")):
        text = path.read_text()
        for key in keys:
            assert f"\n{key}:" not in f"\n{text}", f"{path.name} repeats the shared key {key}"
    shared = job_config()[group]
    assert all(key in shared for key in keys)


def test_a_typo_names_the_valid_keys():
    with pytest.raises(ConfigError) as caught:
        PartitionSpec.defaults("spring", betta=1.1)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("partitioner.betta: unknown key for spring; valid keys: ")
    assert "beta" in message and "chunk_edges" in message and "hops" in message


def test_a_missing_key_names_the_valid_keys():
    config = default_config("spring")
    del config["beta"]
    with pytest.raises(ConfigError, match=r"^partitioner\.beta: missing for spring; valid keys: "):
        PartitionSpec.from_config(config)


@pytest.mark.parametrize(
    ("key", "value"),
    [("hops", -1), ("chunk_edges", 0), ("refine_passes", -1), ("memory_limit_gb", 0),
     ("max_vertex_balance", "x"), ("hops", True)],
)  # fmt: skip
def test_shared_values_are_checked(key, value):
    with pytest.raises(ConfigError, match=rf"^partitioner\.{key}: expected"):
        PartitionSpec.defaults("hash", **{key: value})


@pytest.mark.parametrize(
    ("name", "key", "value", "expected"),
    [("ldg", "passes", 2.5, "a whole number"), ("ldg", "passes", True, "a whole number"),
     ("ldg", "capacity_factor", "1.05", "a number"), ("fennel", "alpha", "x", "a number or null"),
     ("quotient", "base_keys", [1], "a mapping"), ("quotient", "subpart_slack", True, "a number"),
     ("quotient", "base", 3, "a string"), ("grem", "chunk_refinement", 1, "true or false")],
)  # fmt: skip
def test_own_values_are_checked_against_the_annotations(name, key, value, expected):
    """A partitioner's own key of the wrong type is one line at parse time, from its registered
    function's annotation, not an error deep inside the algorithm."""
    with pytest.raises(ConfigError) as caught:
        PartitionSpec.defaults(name, **{key: value})
    assert str(caught.value) == f"partitioner.{key}: expected {expected}, got {value!r}"


def test_own_values_of_the_right_type_pass(monkeypatch):
    """An int fits a float parameter, null an optional one; an unannotated one is not checked."""
    assert PartitionSpec.defaults("ldg", capacity_factor=2, passes=3).params["capacity_factor"] == 2
    assert PartitionSpec.defaults("fennel", alpha=None).params["alpha"] is None
    nested = PartitionSpec.defaults("quotient", base_keys={"passes": 2}, subpart_slack=2)
    assert nested.params["base_keys"] == {"passes": 2}

    def untyped(store, p, seed, *, anything):
        raise AssertionError("not called")

    PARTITIONERS.names()  # every shipped partitioner registered first
    monkeypatch.setitem(PARTITIONERS._items, "test_untyped", untyped)
    config = {**default_config("hash"), "name": "test_untyped", "anything": object()}
    assert PartitionSpec.from_config(config).params["anything"] is config["anything"]


def test_shared_chunk_edges_reaches_the_partitioners_that_stream_by_it():
    assert PartitionSpec.defaults("spring", chunk_edges=97).kwargs()["chunk_edges"] == 97
    assert "chunk_edges" not in PartitionSpec.defaults("ldg").kwargs()
    assert "hops" not in PartitionSpec.defaults("spring").kwargs()


def test_vertex_balance_bound_reads_the_spec():
    bound, source = vertex_balance_bound(PartitionSpec.defaults("spring", beta=1.2), 4, 400)
    assert bound == pytest.approx(1.2 + 4 / 400) and source == "spring's own"
    bound, source = vertex_balance_bound(PartitionSpec.defaults("hash"), 4, 400)
    assert bound == 1.5 and source == "partitioner.max_vertex_balance"


@pytest.mark.parametrize("preset", ["quotient_best", "quotient_multilevel"])
def test_quotients_presets_record_the_fm_bound_they_enforce(preset):
    """Their node FM sheds weight over ceil(1.03 |V| / p) first: that is their bound, not the
    shared 1.5; plain quotient (no node FM) promises nothing of its own."""
    bound, source = vertex_balance_bound(PartitionSpec.defaults(preset), 8, 1001)
    assert bound == pytest.approx(129 / (1001 / 8)) and source == "quotient's own"
    bound, source = vertex_balance_bound(PartitionSpec.defaults("quotient"), 8, 1001)
    assert bound == 1.5 and source == "partitioner.max_vertex_balance"


# --- DataSpec and JobSpec ----------------------------------------------------------------------


def test_a_dataset_typo_names_the_sources_keys():
    with pytest.raises(ConfigError) as caught:
        DataSpec.from_config({"name": "g", "source": "edgelist", "path": "g.csv", "delimter": ","})
    message = str(caught.value)
    assert message.startswith("dataset.delimter: unknown key for source edgelist; valid keys: ")
    assert "delimiter" in message and "import_memory_gb" in message and "\n" not in message


def test_a_dataset_spec_keeps_the_config_and_its_cache_key(gnnbench_home):
    config = job_config("dataset=cora")["dataset"]
    spec = DataSpec.from_config(config)
    assert spec.to_config() == config
    assert store_path(spec.to_config()) == store_path(config)


def test_synthetic_defaults_live_in_its_yaml_only():
    from gnnbench.data.sources.synthetic import SbmParams

    assert all(item.default is dataclasses.MISSING for item in dataclasses.fields(SbmParams))
    yaml = job_config("dataset=synthetic")["dataset"]
    assert SbmParams.from_config({"num_nodes": 300}) == SbmParams.from_config(
        {**yaml, "num_nodes": 300}
    )


def test_the_default_job_parses():
    job = JobSpec.from_config(job_config())
    assert (job.data.name, job.partition.name, job.p, job.num_gpus) == ("synthetic", "spring", 4, 2)
    assert job.train is not None and job.train.model.name == "sage"
    assert JobSpec.from_config(job_config("train=none")).train is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"seeed": 1}, r"^seeed: unknown key for the job; valid keys: dataset, model, "),
        ({"tracking": {"uri": "x", "experiment": "e", "urii": "y"}}, r"^tracking\.urii: unknown"),
        ({"partitioner": {**default_config("hash"), "hopz": 2}}, r"^partitioner\.hopz: unknown"),
        ({"p": 0}, r"^p: expected at least 1 partition, got 0$"),
        ({"p": "many"}, r"^p: expected a whole number or auto, got 'many'$"),
        ({"resume": "yes"}, r"^resume: expected true or false, got 'yes'$"),
    ],
)
def test_a_bad_job_key_is_one_line(change, message):
    with pytest.raises(ConfigError, match=message):
        JobSpec.from_config({**job_config("train=none"), **change})


def test_an_unknown_training_mode_is_one_line():
    """The job checks train.mode against the modes' registry (TrainSpec itself sits below it)."""
    config = job_config()
    with pytest.raises(ConfigError, match=r"^train\.mode: unknown training mode 'bogus'"):
        JobSpec.from_config({**config, "train": {**config["train"], "mode": "bogus"}})


def test_p_auto_passes_through():
    assert JobSpec.from_config({**job_config("train=none"), "p": "auto"}).p == "auto"


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("+partitioner.betta=1.1", "partitioner.betta: unknown key for spring; valid keys: beta,"),
        ("+dataset.homophilly=0.5", "dataset.homophilly: unknown key for source synthetic;"),
        ("+seeed=1", "seeed: unknown key for the job; valid keys: dataset, model, num_gpus,"),
    ],
)
def test_an_unread_key_fails_the_job_before_any_stage(tmp_path, gnnbench_home, override, expected):
    """`+key=value` adds a key the composed config lacks (the command-line check leaves Hydra's
    `+` forms alone): JobSpec refuses it in one line, exit 2, before the data stage runs."""
    from helpers.cli import gnnbench

    completed = gnnbench(tmp_path, override, "train=none")
    assert completed.returncode == 2
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gnnbench: error: ") and expected in lines[0]
    assert not (gnnbench_home / "graphs").exists()  # nothing was imported


# --- TrackingSpec, p=auto's MemoryBudget, one parse per job ----------------------------------


def test_tracking_is_a_frozen_spec():
    from gnnbench.tracking_spec import TrackingSpec

    tracking = JobSpec.from_config(job_config("train=none", "tracking.experiment=e")).tracking
    assert tracking == TrackingSpec(uri="sqlite:///mlflow.db", experiment="e")
    with pytest.raises(dataclasses.FrozenInstanceError):
        tracking.uri = "sqlite:///other.db"  # type: ignore[misc]
    with pytest.raises(ConfigError, match=r"^tracking\.experiment: missing for tracking; valid"):
        TrackingSpec.from_config({"uri": "sqlite:///a.db"})


def test_run_name_is_unchanged():
    from gnnbench.track.mlflow_run import run_name

    assert run_name(JobSpec.from_config(job_config("dataset=cora"))) == "cora-spring-p4"
    auto = JobSpec.from_config({**job_config("dataset=cora", "partitioner=hash"), "p": "auto"})
    assert run_name(auto) == "cora-hash-pauto"


def test_run_names_of_a_sweep_show_the_axes_it_varies():
    """A seed x train sweep: each child's name carries its seed and train mode, so no two of a
    sweep's runs share a name; axes already in the name (dataset, partitioner, p) are not repeated."""
    from gnnbench.track.mlflow_run import run_name

    names = set()
    for seed in (0, 1):
        for mode in ("model_avg", "grad_avg"):
            config = job_config("dataset=cora", f"train={mode}", f"seed={seed}")
            sweep = {"sweep_id": "s", "parent_run_id": "r", "axes": ["seed", "train", "p"]}
            config["tracking"] = {**config["tracking"], "sweep": sweep}
            names.add(run_name(JobSpec.from_config(config), config))
    assert names == {
        f"cora-spring-p4-seed={s}-train={m}" for s in (0, 1) for m in ("model_avg", "grad_avg")
    }


def test_p_auto_budget_is_parsed_with_the_job():
    """train=none has no TrainSpec, yet its `+train.worker_mem_gb` is p=auto's budget; a fixed p
    has none; a bad budget fails before any stage, in one line."""
    from gnnbench.partition.num_parts import MemoryBudget

    none = {**job_config("train=none", "+train.worker_mem_gb=0.01"), "p": "auto"}
    # the declared default (gnnbench/schema.py), as the partitioned modes compose it
    assert JobSpec.from_config(none).memory_budget == MemoryBudget("auto", 0.01, 0.6667)
    model_avg = JobSpec.from_config({**job_config("train.device=cpu"), "p": "auto"})
    assert model_avg.memory_budget == MemoryBudget("cpu", 4.0, 0.6667)
    assert JobSpec.from_config(job_config()).memory_budget is None
    bad = {**none, "train": {"mode": "none", "worker_mem_gb": "lots"}}
    with pytest.raises(ConfigError, match=r"^train\.worker_mem_gb: expected a number > 0, got"):
        JobSpec.from_config(bad)
    bad["train"] = {"mode": "none", "compute_mem_fraction": 1.0}
    with pytest.raises(ConfigError, match=r"^train\.compute_mem_fraction: expected a number in"):
        JobSpec.from_config(bad)


class FakeStore:
    """What p=auto reads of a GraphStore: cora's sizes (int32 ids, 1433 float32 features)."""

    num_nodes, num_edges, has_features = 2708, 5278, True
    id_dtype = np.dtype(np.int32)

    def feature_layout(self):
        return type("Layout", (), {"row_bytes": 1433 * 4})()


def test_auto_choice_counts_torchrun_ranks_as_workers(monkeypatch):
    from gnnbench.partition.num_parts import MemoryBudget, auto_choice

    budget = MemoryBudget(device="cpu", worker_mem_gb=1.0, compute_mem_fraction=0.5)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    choice = auto_choice(FakeStore(), num_gpus=3, budget=budget)
    assert choice["p"] == 3 and choice["auto_p_memory_source"] == "train.worker_mem_gb"
    assert choice["auto_p_data_mb"] == (5278 * 2 * 4 + 2708 * 1433 * 4) / 2**20
    monkeypatch.setenv("WORLD_SIZE", "5")  # alone, not torchrun's launch: num_gpus still counts
    assert auto_choice(FakeStore(), num_gpus=3, budget=budget)["p"] == 3
    for name, value in (("RANK", "0"), ("MASTER_ADDR", "127.0.0.1")):
        monkeypatch.setenv(name, value)
    assert auto_choice(FakeStore(), num_gpus=3, budget=budget)["p"] == 5


def test_run_takes_the_parsed_job_keyword_only():
    from gnnbench.run import run

    parameter = inspect.signature(run).parameters["job"]
    assert parameter.kind is inspect.Parameter.KEYWORD_ONLY
    assert parameter.default is inspect.Parameter.empty


def test_a_job_is_parsed_once(monkeypatch):
    """`python -m gnnbench`'s job: one JobSpec (one TrainSpec) handed to run."""
    import gnnbench.__main__ as main
    import gnnbench.run
    from gnnbench.train.spec import TrainSpec

    parses: list[type] = []
    for cls in (JobSpec, TrainSpec):
        monkeypatch.setattr(cls, "from_config", counted(cls.from_config.__func__, parses))
    handed = {}
    monkeypatch.setattr(gnnbench.run, "run", lambda *args, job: handed.setdefault("job", job))
    assert main._job(compose_cfg("dataset=cora", "train=grad_avg")) is handed["job"]
    assert parses == [JobSpec, TrainSpec] and handed["job"].train.mode == "grad_avg"


def counted(parse, parses: list[type]) -> classmethod:
    """`parse` (a from_config classmethod's function) noting each class it parses for."""

    def parse_and_note(cls, *args, **kwargs):
        parses.append(cls)
        return parse(cls, *args, **kwargs)

    return classmethod(parse_and_note)


def test_a_torchrun_rank_asks_rank0_with_the_parsed_job(monkeypatch):
    """Under torchrun the resume check joins the process group with the job's own TrainSpec
    (no second parse of the config) and asks rank 0's store through the coordinator."""
    import gnnbench.__main__ as main
    import gnnbench.train.coordinator as coordinator
    from gnnbench.train.spec import TrainSpec

    job = JobSpec.from_config(job_config("train=grad_avg"))
    joined = []

    class Leader(coordinator.SingleProcess):
        def __init__(self, spec):
            joined.append(spec)

    monkeypatch.setattr(coordinator, "coordinator_for", Leader)
    monkeypatch.setattr(TrainSpec, "from_config", None)  # a second parse would fail here
    monkeypatch.setattr(main, "_already_finished", lambda spec, key: f"run-of-{key}")
    assert main._finished_run(job, "k1", rank=0) == "run-of-k1"
    assert joined == [job.train]
    no_resume = dataclasses.replace(job, resume=False)
    assert main._finished_run(no_resume, "k1", rank=0) is None


def compose_cfg(*overrides: str):
    """The composed job config as Hydra hands it to the app (a DictConfig)."""
    from hydra import compose, initialize_config_dir

    from gnnbench.paths import CONF_DIR

    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        return compose("config", overrides=list(overrides))


def test_auto_p_sizes_partitions_by_host_memory_on_cuda_and_logs_the_gpus(monkeypatch):
    """A partition stays in host memory on CUDA (only batches and the model go to the GPU):
    the same p as on the CPU, and the GPU's memory beside it for gpu_peak_mb."""
    import torch

    from gnnbench.partition.num_parts import MemoryBudget, auto_choice

    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda index: type("Props", (), {"total_memory": 80 * 2**30})())  # fmt: skip
    small_host = dict(worker_mem_gb=0.01, compute_mem_fraction=0.5)  # 5 MiB of data each
    on_cuda = auto_choice(FakeStore(), num_gpus=2, budget=MemoryBudget(device="cuda", **small_host))
    on_cpu = auto_choice(FakeStore(), num_gpus=2, budget=MemoryBudget(device="cpu", **small_host))
    assert on_cuda["p"] == on_cpu["p"] == 3  # ceil(14.8 MiB / 5.12 MiB), not 2 from 80 GiB
    assert on_cuda["auto_p_gpu_mem_mb"] == 80 * 1024 and "auto_p_gpu_mem_mb" not in on_cpu


TRAIT_NAMES = {field.name for field in dataclasses.fields(PartitionerTraits)}


@pytest.mark.parametrize("name", PARTITIONERS.names())
def test_partitioners_declare_traits_in_one_record(name):
    """What the stage reads beside the call is the registered PartitionerTraits, never an
    attribute set on the function afterwards (which a typo would have made silently ignored)."""
    assert not TRAIT_NAMES & set(vars(PARTITIONERS.get(name))), name
    assert isinstance(partitioner_traits(name), PartitionerTraits)


def test_traits_are_typed_read_only_and_survive_wrapping(monkeypatch):
    with pytest.raises(TypeError, match="balance_bound"):
        register_partitioner("typo", balance_bound=lambda p, n, **_: 1.0)
    traits = partitioner_traits("quotient")
    with pytest.raises(dataclasses.FrozenInstanceError):
        traits.warm_up = False
    with pytest.raises(TypeError):
        traits.warm_up_keys["coarse_nodes"] = 1
    assert partitioner_traits("metis").in_memory_baseline
    assert not partitioner_traits("distdgl_metis").warm_up

    original = PARTITIONERS.get("metis")

    @functools.wraps(original)
    def wrapped(*args, **kwargs):
        return original(*args, **kwargs)

    def plain(store, p, seed):
        raise AssertionError("not called")

    monkeypatch.setitem(PARTITIONERS._items, "metis", wrapped)
    assert partitioner_traits("metis").in_memory_baseline  # a planted wrapper keeps them
    monkeypatch.setitem(PARTITIONERS._items, "metis", plain)
    assert partitioner_traits("metis") == PartitionerTraits()  # a plain registration: defaults
