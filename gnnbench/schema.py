"""The config schema: every key a job's config holds outside a group file's own keys, declared
once, with its type and its default.

Hydra composes a job from gnnbench/conf and from the nodes `register` puts in its ConfigStore,
built from these dataclasses: `gnnbench_schema` (the top level, the blocks every dataset and every
partitioner share, tracking; config.yaml's defaults list takes it where its own keys were) and
`shared/train` and `shared/p_auto/memory_budget` (what the training modes' files pull in). The specs
(gnnbench/spec.py, data/spec.py, partition/spec.py, train/spec.py, tracking_spec.py) read their
valid keys, types and defaults from here; a group file's own keys stay its own (a partitioner's
from its function's signature, a source's from its `config_keys`, a model's from its file).

Hydra holds the defaults only, as plain values: OmegaConf 2.3 rejects `Literal` and turns an int
in a float field into a float (which would move run keys that hash `import_memory_gb: 2`). The
specs check each value against its declared type (or a narrower rule of their own) in one line;
an unknown key on the command line is one line with "did you mean" (gnnbench/cli.py).

A key marked `optional` is declared with its default but not composed: a config holds it only
where a file or the command line sets it, so the configs (and run and cache keys) of files that
leave it out are what they were before the key existed.

Below every stage: it imports nothing of gnnbench but itself.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

# The name of the ConfigStore node config.yaml's defaults list extends.
SCHEMA_NODE = "gnnbench_schema"

_NOT_COMPOSED = {"composed": False}


def optional(default: Any) -> Any:
    """A key read with `default` where a config leaves it out, and not composed (module doc)."""
    return field(default=default, metadata=_NOT_COMPOSED)


def group() -> Any:
    """A top-level key whose block comes from its config group's file (model, train)."""
    return field(default=None, metadata=_NOT_COMPOSED)


# What the choices are, once: the specs read their tuples of valid values from these.
Nonfinite = Literal["error", "zero"]
InputFeatures = Literal["none", "degree", "onehot", "random", "embedding"]
FeatureDtype = Literal["float32", "float16"]
RefineObjective = Literal["edge_cut", "replication"]
FeatureRows = Literal["copy", "shared"]
Strategy = Literal["minibatch", "full", "cluster"]
Batching = Literal["random", "cohesive", "cmgcn"]
ClusterMethod = Literal["bfs", "metis", "louvain"]
BatchPreparation = Literal["inline", "thread"]
Backend = Literal["auto", "gloo", "nccl"]
Device = Literal["auto", "cpu", "cuda"]
OptimizerState = Literal["local", "reset", "average"]


def choices(literal: Any) -> tuple[str, ...]:
    """The values of a Literal type, in declared order."""
    return tuple(typing.get_args(literal))


@dataclass(frozen=True, kw_only=True)
class DatasetKeys:
    """Keys every dataset shares, whatever its source (read by prepare_dataset and the builder)."""

    # NaN/inf features: refuse, or replace by 0 (counted in meta.json)
    nonfinite: Nonfinite = "error"
    import_memory_gb: float = 2  # memory bound of the import's deduplication (larger: through disk)
    # inputs of a graph without node features (gnnbench/data/input_features.py); none: cannot train
    features: InputFeatures = "none"
    feature_dtype: FeatureDtype = "float32"  # feat.npy's storage (float16: half the disk)
    # train/val/test shares of a seeded split, for sources without one
    split_fractions: tuple[float, float, float] = (0.70, 0.15, 0.15)
    split_seed: int = optional(0)  # the seed of that split (part of the dataset, not of the run)
    normalize_features: bool = optional(False)  # rows scaled to sum 1 at import
    # the public files to fetch on first use (gnnbench/data/download.py)
    download: list[Mapping[str, Any]] | None = optional(None)


@dataclass(frozen=True, kw_only=True)
class PartitionerKeys:
    """Keys every partitioner shares; a partitioner function taking one as a keyword (chunk_edges)
    receives the shared value."""

    hops: int = 1  # k of the GNN-ready k-hop neighbourhood (0: owned nodes, inner edges only)
    # edges per streamed chunk (the GNN-ready step, streaming partitioners)
    chunk_edges: int = 1048576
    memory_limit_gb: float | None = None  # cap on the partition process's private memory
    # bound on vertex_balance where the algorithm states none
    max_vertex_balance: float | None = 1.5
    refine_passes: int = 0  # label-propagation refinement passes after any partitioner
    # what they lower (replication: |V| x p bytes more)
    refine_objective: RefineObjective = "edge_cut"
    # partitions read the store's feat.npy by global id (shared) or hold a copy of their rows (copy:
    # RF x |V| x F x bytes more disk; docs/design.md, "Feature rows")
    feature_rows: FeatureRows = "shared"


@dataclass(frozen=True, kw_only=True)
class TrackingKeys:
    """Where a job's MLflow runs go."""

    uri: str = "sqlite:///mlflow.db"  # relative to the directory the command runs in
    experiment: str = "gnnbench"
    # set by a sweep for each of its jobs ({sweep_id, parent_run_id, axes}); not by hand
    sweep: Mapping[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class TrainKeys:
    """What every training mode shares (`shared/train`, pulled in by each mode's file), and the
    keys only some modes' files set (`optional`: p=auto's budget, model_avg's optimizer_state)."""

    epochs: int = 20  # test F1 is reported at the best-validation evaluation point
    batch_size: int = 512  # seed nodes per mini-batch (grad_avg: per rank and step, as DistDGL)
    fanouts: tuple[int, ...] = (25, 10)  # neighbours per hop, nearest the seeds first (PyG's order)
    # minibatch (sampled) | full (all of a partition's training nodes, every neighbour) | cluster
    # (a few clusters plus, with cluster_boundary, their 1-hop neighbours)
    strategy: Strategy = "minibatch"
    # minibatch: random shuffle | cohesive (BFS-ordered batches, gnnbench's stand-in) | cmgcn
    # (CM-GCN's Algorithms 1-2, gnnbench/train/cmgcn.py)
    batching: Batching = "random"
    batches_per_epoch: int = 0  # minibatch: 0 = batch_size decides; else per partition per epoch
    num_clusters: int = 16  # cluster: clusters per partition
    clusters_per_batch: int = 2  # cluster: clusters in one batch
    # cluster: bfs (equal BFS-grown pieces), metis (METIS k-way on the partition) or louvain
    # (modularity communities, their own count; GraphTheta's choices)
    cluster_method: ClusterMethod = "bfs"
    # cluster: whether a batch also holds its clusters' 1-hop neighbours as inputs (GraphTheta's
    # default, Appendix B: off; runs from before the key had them)
    cluster_boundary: bool = False
    sampler_workers: int = 0  # Armada: CPU processes preparing each trainer's batches; 0: itself
    # sampler_workers=0: inline (between steps) or thread (a helper thread prepares the next batch
    # while this one trains; on the CPU it takes one of the rank's torch threads)
    batch_preparation: BatchPreparation = "inline"
    lr: float = 0.01  # Adam
    weight_decay: float = 0.0
    eval_every: int = 1  # epochs between evaluations (model_avg: after a sync)
    eval_batch_size: int = 2048  # nodes per chunk of layer-wise evaluation
    backend: Backend = "auto"  # auto: nccl with CUDA, else gloo
    device: Device = "auto"  # auto: cuda:<local_rank> when available, else cpu
    timeout_s: float = 300  # collective timeout: a stuck rank fails the run instead of hanging it
    # p=auto (`shared/p_auto/memory_budget`, the partitioned modes' files): host memory of one worker,
    # where its partition lives (on CUDA too), and the share T/M of it kept for computation
    worker_mem_gb: float | None = optional(4)
    compute_mem_fraction: float | None = optional(0.6667)
    # more partitions than workers: load a rank's next partition in a thread while the current
    # one trains (CATGNN's turns without waiting for the load; two partitions held, p=auto counts
    # both)
    prefetch_partitions: bool = optional(False)
    # Ginex's superbatch: batches sampled together, their feature rows read in one sorted gather
    # (each row once) into a buffer they take theirs from; 1: each batch reads its own
    superbatch: int = optional(1)
    # the most MB of float32 feature rows one superbatch's buffer may hold: it groups fewer than
    # `superbatch` batches where that many could name more rows (None: no bound)
    superbatch_mb: float | None = optional(None)
    # model_avg's alone (its file sets it): each partition's Adam moments at a sync: local (kept),
    # reset (every round starts Adam afresh) or average (averaged like the model)
    optimizer_state: OptimizerState | None = optional(None)


MEMORY_BUDGET_KEYS = ("worker_mem_gb", "compute_mem_fraction")


@dataclass(frozen=True, kw_only=True)
class JobKeys:
    """The top level of a job's config: the groups, the sweep axes, resume and tracking."""

    p: int | Literal["auto"] = 4  # partitions, or auto (SDT-GNN's rule from train.worker_mem_gb)
    sync_interval: int = 1  # epochs between model averaging
    num_gpus: int = 2  # training worker processes: one per GPU with CUDA, else CPU processes
    seed: int = 0
    resume: bool = True  # in a sweep, skip jobs whose run_key already FINISHED in the store
    dataset: DatasetKeys = field(default_factory=DatasetKeys)
    partitioner: PartitionerKeys = field(default_factory=PartitionerKeys)
    model: Mapping[str, Any] | None = group()
    train: Mapping[str, Any] | None = group()
    tracking: TrackingKeys = field(default_factory=TrackingKeys)


def keys(schema: type) -> tuple[str, ...]:
    """Every key `schema` declares, composed or not."""
    return tuple(f.name for f in dataclasses.fields(schema))


def composed_keys(schema: type) -> tuple[str, ...]:
    """The keys of `schema` every composed config holds."""
    return tuple(f.name for f in dataclasses.fields(schema) if f.metadata.get("composed", True))


def optional_keys() -> dict[str, Any]:
    """{dotted name: declared default} of every key declared but not composed, over the job's
    blocks (train's through TrainKeys): what the command line sets with a leading `+`."""
    blocks = {"": JobKeys, "dataset": DatasetKeys, "partitioner": PartitionerKeys,
              "train": TrainKeys, "tracking": TrackingKeys}  # fmt: skip
    return {
        f"{prefix}.{f.name}".lstrip("."): default(cls, f.name)
        for prefix, cls in blocks.items()
        for f in dataclasses.fields(cls)
        if not f.metadata.get("composed", True) and f.name not in ("model", "train")
    }


def default(schema: type, key: str) -> Any:
    """The declared default of `schema`'s `key` (a tuple as the list a config holds)."""
    return _plain(getattr(schema(), key))


def configured(schema: type, config: Mapping[str, Any], key: str) -> Any:
    """`config`'s value of `schema`'s `key`, else its declared default (a key the schema does not
    compose, a block without it such as train=none's, or a config built in code)."""
    return config[key] if key in config else default(schema, key)


def require_every_key(schema: type, values: Mapping[str, Any]) -> Mapping[str, Any]:
    """`values` when they hold every key `schema` declares: a spec parsing a config must not leave
    a declared key to its dataclass default (a key added here but not parsed would be ignored
    without a word). A TypeError names the keys left out: a mistake in gnnbench, not the config."""
    missing = sorted(set(keys(schema)) - set(values))
    if missing:
        raise TypeError(f"{schema.__name__}: the spec parses no value for {', '.join(missing)}")
    return values


def node(schema: type) -> dict[str, Any]:
    """The composed keys of `schema` with their defaults, as plain config values (nested blocks
    as dicts, tuples as lists): what Hydra's ConfigStore holds."""
    instance = schema()
    return {key: _plain(getattr(instance, key)) for key in composed_keys(schema)}


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        return node(type(value))
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    return value


def memory_budget_node() -> dict[str, Any]:
    """p=auto's two keys with their defaults (`shared/p_auto/memory_budget`)."""
    return {key: default(TrainKeys, key) for key in MEMORY_BUDGET_KEYS}


def register() -> None:
    """Put the schema's nodes in Hydra's ConfigStore, where it lacks them. Called by gnnbench's
    search-path plugin (hydra_plugins/gnnbench_plugin_configs), which Hydra runs before every
    composition of gnnbench's configs: hydra.main, gnnbench/cli.py's checks, composition.py and
    Hydra's own `initialize_config_dir` + `compose` alike."""
    from hydra.core.config_store import ConfigStore

    store = ConfigStore.instance()
    if f"{SCHEMA_NODE}.yaml" in store.repo:
        return
    store.store(name=SCHEMA_NODE, node=node(JobKeys))
    store.store(group="shared", name="train", node=node(TrainKeys))
    store.store(group="shared/p_auto", name="memory_budget", node=memory_budget_node())
