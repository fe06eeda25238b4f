"""Quality gates: deterministic partition metrics and a short seeded training run's F1.

Every streaming partitioner, the in-memory baselines of IN_MEMORY_GATED and the presets of
PRESETS_GATED (quotient_best, quotient_multilevel), on a fixed set of small graphs at p=4 with seed 0 (the METIS baselines are checked in tests/test_baselines.py);
replication factor, edge cut and vertex balance worse by more than 1% than
bench/baselines/quality.json fails, naming partitioner, graph, p and both values. Restreaming (`passes`) and the refinement post-pass (`refine_passes`, both
`refine_objective`s) are gated on cora at p=4 as their own keys (VARIANTS).
"""

from __future__ import annotations

import functools

import pytest

from gnnbench.data.datasets import prepare_dataset
from gnnbench.partition.base import streaming_partitioners
from gnnbench.partition.spec import PartitionSpec
from gnnbench.partition.stage.gnn_ready import build_partitions

from .conftest import dataset_config, require_raw

P = 4
GATED_METRICS = ("replication_factor", "edge_cut", "vertex_balance")
GRAPHS = {
    "cora": dataset_config("cora"),
    "citeseer": dataset_config("citeseer"),
    "3elt": dataset_config("metis_graph", name="3elt", path="walshaw/graphs/3elt.graph"),
    "synthetic": dataset_config(
        "synthetic", name="synthetic-gate", num_nodes=5000, avg_degree=8, seed=3
    ),
}


@functools.cache
def gate_store(graph: str):
    require_raw(GRAPHS[graph].get("path"))
    return prepare_dataset(GRAPHS[graph])


def partition_quality(name: str, graph: str, out_dir) -> dict[str, float]:
    """The gated metrics of one partitioner on one graph (in-process, same code as a run)."""
    store = gate_store(graph)
    result = PartitionSpec.defaults(name).run_refined(store, P, 0)  # a preset may refine
    metrics = build_partitions(store, result.owner, P, out_dir)
    return {f"{name}/{graph}/p{P}/{metric}": metrics[metric] for metric in GATED_METRICS}


@pytest.mark.parametrize("graph", GRAPHS)
@pytest.mark.parametrize("name", streaming_partitioners())
def test_partition_quality(name, graph, quality_gates, tmp_path):
    quality_gates.check(partition_quality(name, graph, tmp_path), "lower")


# In-memory baselines gated like the streaming partitioners: deterministic per seed (KaMinPar with
# its default single thread), and the reference the streaming configurations are measured against.
IN_MEMORY_GATED = ("kaminpar",)
# Presets (conf/partitioner/<name>.yaml extending a partitioner's file) gated the same way.
PRESETS_GATED = ("quotient_best", "quotient_multilevel")


@pytest.mark.parametrize("graph", GRAPHS)
@pytest.mark.parametrize("name", (*IN_MEMORY_GATED, *PRESETS_GATED))
def test_baseline_and_preset_quality(name, graph, quality_gates, tmp_path):
    quality_gates.check(partition_quality(name, graph, tmp_path), "lower")


# key prefix -> (partitioner, overrides of its config file and of the shared keys)
VARIANTS = {
    "ldg-passes3": ("ldg", {"passes": 3}),
    "ldg-refine2": ("ldg", {"refine_passes": 2}),
    "ldg-refine2-replication": ("ldg", {"refine_passes": 2, "refine_objective": "replication"}),
    "grem-refine10-replication": (
        "grem",
        {"refine_passes": 10, "refine_objective": "replication"},
    ),
    "quotient-s128-refine10-replication": (
        "quotient",
        {"subparts_per_part": 128, "refine_passes": 10, "refine_objective": "replication"},
    ),
}


@pytest.mark.parametrize("variant", VARIANTS)
def test_variant_quality(variant, quality_gates, tmp_path):
    name, overrides = VARIANTS[variant]
    store = gate_store("cora")
    result = PartitionSpec.defaults(name, **overrides).run_refined(store, P, 0)
    metrics = build_partitions(store, result.owner, P, tmp_path)
    figures = {f"{variant}/cora/p{P}/{metric}": metrics[metric] for metric in GATED_METRICS}
    quality_gates.check(figures, "lower")


def test_training_f1(quality_gates, tmp_path):
    from gnnbench.train.runner import run_training
    from gnnbench.train.spec import spec_from_conf

    store = gate_store("cora")
    train = {"mode": "centralized", "epochs": 10}
    model = {"name": "sage", "layers": 2, "hidden": 256, "dropout": 0.5}
    result = run_training(
        store_path=store.path,
        book_path=None,
        spec=spec_from_conf(train, model, num_gpus=1, sync_interval=1, seed=0),
    )
    quality_gates.check({"sage-centralized/cora/test_f1_micro": result.test_f1_micro}, "higher")
