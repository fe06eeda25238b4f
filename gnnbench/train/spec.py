"""The train and model config groups parsed once into frozen specs. The train keys, their types
and defaults are declared once in gnnbench/schema.py (`TrainKeys`, which TrainSpec extends); a
mode's file sets `mode` and what only it uses, a model's file every key of ModelSpec.

A `TrainSpec` also carries the job axes training reads (sync_interval, seed, num_gpus as
num_gpus), so nothing travels as a bare positional number.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gnnbench import schema
from gnnbench.errors import ConfigError
from gnnbench.schema import TrainKeys
from gnnbench.spec_keys import check_keys, whole_at_least, whole_axis

STRATEGIES = schema.choices(schema.Strategy)  # train.strategy (gnnbench/train/batching.py)
BATCHINGS = schema.choices(schema.Batching)  # train.batching, for strategy=minibatch
CLUSTER_METHODS = schema.choices(schema.ClusterMethod)  # train.cluster_method, strategy=cluster
# train.batch_preparation, with sampler_workers=0 (gnnbench/train/batch_source.py)
BATCH_PREPARATIONS = schema.choices(schema.BatchPreparation)
OPTIMIZER_STATES = schema.choices(schema.OptimizerState)
# Keys only some modes' files set (p=auto's budget, model_avg's optimizer_state)
OPTIONAL_TRAIN_KEYS = tuple(
    sorted(set(schema.keys(TrainKeys)) - set(schema.composed_keys(TrainKeys)))
)
OPTIONAL_MODEL_KEYS = ("heads",)  # gat's alone


def _valid_keys(cls: type, excluded: tuple[str, ...] = ()) -> list[str]:
    return [f.name for f in dataclasses.fields(cls) if f.name not in excluded]


def _check_keys(group: str, given: Mapping[str, Any], valid: list[str], optional) -> None:
    """Unknown keys and missing required keys are one-line errors naming the key and the valid
    ones (the format every spec shares)."""
    owner = f"{group}={given.get('mode' if group == 'train' else 'name')}"
    required = [key for key in valid if key not in optional]
    check_keys(group, given, valid, owner, required=required)


def _number(key: str, value: Any, positive: bool) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or value < 0
        or (positive and value == 0)
    ):
        expected = "> 0" if positive else ">= 0"
        raise ConfigError(f"train.{key}: expected a number {expected}, got {value!r}")
    return float(value)


def _boolean(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"train.{key}: expected true or false, got {value!r}")
    return value


def _choice(key: str, value: Any, choices: tuple[str, ...]) -> str:
    if str(value) not in choices:
        raise ConfigError(f"train.{key}: expected one of {', '.join(choices)}, got {value!r}")
    return str(value)


def _fanouts(value: Any) -> tuple[int, ...]:
    def neighbour_count(f: Any) -> bool:
        return isinstance(f, int) and not isinstance(f, bool) and (f >= 1 or f == -1)

    if isinstance(value, str) or not isinstance(value, Sequence) or not value:
        value = None
    if value is None or not all(neighbour_count(f) for f in value):
        raise ConfigError(
            f"train.fanouts: expected a list of neighbour counts >= 1 (or -1 = all), got {value!r}"
        )
    return tuple(value)


@dataclass(frozen=True)
class ModelSpec:
    """The model group: which registered model, its depth, width and dropout (heads: gat)."""

    name: str
    layers: int
    hidden: int
    dropout: float
    heads: int | None
    # rows of a learnable input table (dataset.features=embedding): set from the graph by the
    # runner (with_input_table), never configured
    input_nodes: int | None = None

    @classmethod
    def from_config(cls, model: Mapping[str, Any]) -> ModelSpec:
        """Validate the keys (the model's builder validates the values, once, on the meta device)."""
        keys = _valid_keys(cls, excluded=("input_nodes",))
        _check_keys("model", model, keys, OPTIONAL_MODEL_KEYS)
        return cls(**{key: model.get(key) for key in keys})

    def as_config(self) -> dict[str, Any]:
        """The mapping the model registry's builders read."""
        values = dataclasses.asdict(self)
        return {key: value for key, value in values.items() if value is not None}


@dataclass(frozen=True, kw_only=True)
class TrainSpec(TrainKeys):
    """Everything a training rank needs to know about the run (the train keys are TrainKeys'
    fields); picklable for spawned ranks."""

    mode: str
    sync_interval: int  # the job axes training reads
    seed: int
    num_gpus: int  # ranks to train on (one process per GPU on CUDA; torchrun's WORLD_SIZE wins)
    model: ModelSpec

    @classmethod
    def from_config(
        cls,
        train: Mapping[str, Any],
        model: Mapping[str, Any],
        *,
        sync_interval: int,
        seed: int,
        num_gpus: int,
        check_mode: Callable[[str], object] | None = None,
    ) -> TrainSpec:
        """Parse the train and model groups plus the job axes; one line per bad or unknown key.
        `check_mode` refuses an unknown train.mode after the keys and before the values: the
        modes' registry sits above this module (a mode reads a TrainSpec), so the job passes it
        (gnnbench/spec.py); the runner checks the mode again before training."""
        _check_keys("train", train, ["mode", *schema.keys(TrainKeys)], OPTIONAL_TRAIN_KEYS)
        if check_mode is not None:
            check_mode(str(train["mode"]))
        return cls(
            **schema.require_every_key(TrainKeys, _train_values(train)),
            sync_interval=whole_axis("sync_interval", sync_interval, 1),
            seed=whole_axis("seed", seed),
            num_gpus=whole_axis("num_gpus", num_gpus, 1),
            model=ModelSpec.from_config(model),
        )

    @classmethod
    def from_job_config(
        cls, config: Mapping[str, Any], check_mode: Callable[[str], object] | None = None
    ) -> TrainSpec:
        """The spec of a composed job config (train and model groups, sync_interval, seed,
        num_gpus)."""
        return cls.from_config(
            config["train"],
            config["model"],
            sync_interval=config["sync_interval"],
            seed=config["seed"],
            num_gpus=config["num_gpus"],
            check_mode=check_mode,
        )


def _train_values(train: Mapping[str, Any]) -> dict[str, Any]:
    """The train group's values, each checked against what it may hold."""
    whole = {"epochs": 1, "batch_size": 1, "eval_every": 1, "eval_batch_size": 1,
             "batches_per_epoch": 0, "num_clusters": 1, "clusters_per_batch": 1,
             "sampler_workers": 0}  # fmt: skip
    values: dict[str, Any] = {
        k: whole_at_least(f"train.{k}", train[k], low) for k, low in whole.items()
    }
    values.update(
        mode=str(train["mode"]),
        fanouts=_fanouts(train["fanouts"]),
        lr=_number("lr", train["lr"], positive=True),
        weight_decay=_number("weight_decay", train["weight_decay"], positive=False),
        timeout_s=_number("timeout_s", train["timeout_s"], positive=True),
        backend=_choice("backend", train["backend"], schema.choices(schema.Backend)),
        device=_choice("device", train["device"], schema.choices(schema.Device)),
        strategy=_choice("strategy", train["strategy"], STRATEGIES),
        batching=_choice("batching", train["batching"], BATCHINGS),
        cluster_method=_choice("cluster_method", train["cluster_method"], CLUSTER_METHODS),
        cluster_boundary=_boolean("cluster_boundary", train["cluster_boundary"]),
        batch_preparation=_choice(
            "batch_preparation", train["batch_preparation"], BATCH_PREPARATIONS
        ),
    )
    if values["batch_preparation"] == "thread" and values["sampler_workers"] > 0:
        raise ConfigError(
            f"train.batch_preparation=thread: the trainer's own preparation, but "
            f"train.sampler_workers={values['sampler_workers']} processes prepare its batches"
        )
    values.update({key: train.get(key) for key in OPTIONAL_TRAIN_KEYS})  # auto_num_parts checks
    values["superbatch"] = whole_at_least(
        "train.superbatch", schema.configured(TrainKeys, train, "superbatch"), 1
    )
    if values["superbatch_mb"] is not None:
        values["superbatch_mb"] = _number("superbatch_mb", values["superbatch_mb"], positive=True)
        if values["superbatch"] == 1:
            raise ConfigError(
                "train.superbatch_mb: bounds the buffer of superbatches, but train.superbatch=1 "
                "reads each batch alone; set train.superbatch > 1 or leave the bound out"
            )
    values["prefetch_partitions"] = _boolean(
        "prefetch_partitions", schema.configured(TrainKeys, train, "prefetch_partitions")
    )
    if values["prefetch_partitions"] and values["sampler_workers"] > 0:
        raise ConfigError(  # forked while a thread loads, a sampler could inherit a held lock
            "train.prefetch_partitions: the sampler processes "
            f"(train.sampler_workers={values['sampler_workers']}) are forked at each turn, which "
            "a loading thread makes unsafe; use one or the other"
        )
    if values["optimizer_state"] is not None:
        if values["mode"] != "model_avg":  # one Adam state per partition exists there only
            raise ConfigError(
                f"train.optimizer_state: only train=model_avg has one, not {values['mode']}"
            )
        values["optimizer_state"] = _choice(
            "optimizer_state", values["optimizer_state"], OPTIMIZER_STATES
        )
    return values


def spec_from_conf(
    train: Mapping[str, Any], model: Mapping[str, Any] | None = None, **axes: int
) -> TrainSpec:
    """A TrainSpec from what Hydra composes for `train=<train.mode> model=<model.name>` (the
    default model without a name) with `train`, `model` and the axes (sync_interval, seed,
    num_gpus) laid over it: for tests, benchmarks and scripts that train without Hydra. A mode
    without a config file (a plugin's) or without the shared keys (none) gets
    the schema's `shared/train` (gnnbench/schema.py)."""
    from gnnbench.composition import composed
    from gnnbench.paths import CONF_DIR

    model = dict(model or {})
    mode = str(train["mode"])
    has_file = (CONF_DIR / "train" / f"{mode}.yaml").is_file()
    choices = [f"train={mode}" if has_file else "~train", "+shared@shared_train=train"]
    if "name" in model:
        path = CONF_DIR / "model" / f"{model['name']}.yaml"
        if not path.is_file():
            raise ConfigError(f"{path}: no such config file")
        choices.append(f"model={model['name']}")
    config = composed(*choices)
    train_defaults = {**config["shared_train"], **(config.get("train") or {})}
    values = {"sync_interval": config["sync_interval"], "seed": config["seed"]}
    values["num_gpus"] = config["num_gpus"]
    values.update(axes)
    return TrainSpec.from_config(
        {**train_defaults, **train}, {**config["model"], **model}, **values
    )


@dataclass(frozen=True)
class Job:
    """One training job: the spec plus where the data lies and what it holds."""

    spec: TrainSpec
    store_path: Path
    book_path: Path | None
    num_features: int
    num_classes: int
    multilabel: bool
    ogb_name: str | None  # an ogbn dataset: its official metric is logged too
