"""A partition book's identity and path: what of a partitioner spec determines its book, and the
directory that digest names (gnnbench/partition/stage/runner.py writes and reuses books there)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gnnbench.config_values import digest, is_neutral
from gnnbench.partition.base import PARTITIONERS, algorithm_version, partitioner_traits
from gnnbench.partition.spec import PartitionSpec, takes_keyword
from gnnbench.partition.stage import book
from gnnbench.paths import gnnbench_home


def book_identity(spec: PartitionSpec) -> dict[str, Any]:
    """What of a partitioner spec determines its book: the shared keys that change it, the own
    keys, chunk_edges only where the algorithm streams by it (the GNN-ready step's output does
    not depend on it), and for a partitioner running another (its `nested_spec`) that one's
    identity and code version. The memory cap changes whether it runs, not what, and the balance
    bound only what is reported: neither is in it. Also the book's meta.json `parameters`."""
    identity = {"name": spec.name, "hops": spec.hops, "refine_passes": spec.refine_passes}
    # chunk_edges is not neutral here: streaming partitioners' books always held it
    if spec.refine_passes and not is_neutral("partitioner.refine_objective", spec.refine_objective):
        identity["refine_objective"] = spec.refine_objective
    if not is_neutral("partitioner.feature_rows", spec.feature_rows):
        identity["feature_rows"] = spec.feature_rows  # copy books keep their key
    partition_fn = PARTITIONERS.get(spec.name)
    if takes_keyword(partition_fn, "chunk_edges"):
        identity["chunk_edges"] = spec.chunk_edges
    nested_spec = partitioner_traits(spec.name).nested_spec
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
    identity = {
        "fingerprint": fingerprint,
        "partitioner": book_identity(partitioner),
        "p": p,
        "seed": seed,
        "format_version": book.FORMAT_VERSION,  # read at call time (tests set older formats)
        "code_version": algorithm_version(partitioner.name),
    }
    if not node_data:
        identity["structure_only"] = True
        identity["partitioner"].pop("feature_rows", None)  # no feature rows to copy or share
    if partitioner.refine_passes:  # a refined book also depends on the post-pass's code
        from gnnbench.partition.refine import REFINE_VERSION  # numba: loaded only here

        identity["refine_version"] = REFINE_VERSION
    name = f"{dataset_name}-{partitioner.name}-p{p}-s{seed}-{digest(identity, 6)}"
    return gnnbench_home() / "partitions" / name
