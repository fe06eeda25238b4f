"""PartitionBook: the partition stage's product on disk, keyed by what determines it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gnnbench.data.store import read_json
from gnnbench.errors import DataError
from gnnbench.paths import gnnbench_home


def book_path(
    dataset_name: str,
    fingerprint: str,
    partitioner: Mapping[str, Any],
    p: int,
    seed: int,
    node_data: bool = True,
) -> Path:
    """Directory of the book for (dataset content, algorithm, parameters, p, seed).

    A structure-only book (no per-partition features and labels) is a different book.
    """
    identity = {"fingerprint": fingerprint, "partitioner": dict(partitioner), "p": p, "seed": seed}
    if not node_data:
        identity["structure_only"] = True
    identity["partitioner"].pop("memory_limit_gb", None)  # a cap changes whether it runs, not what
    digest = hashlib.blake2b(
        json.dumps(identity, sort_keys=True, default=str).encode(), digest_size=6
    )
    name = f"{dataset_name}-{partitioner['name']}-p{p}-s{seed}-{digest.hexdigest()}"
    return gnnbench_home() / "partitions" / name


@dataclass(frozen=True)
class LocalPartition:
    """What one worker loads: local CSR (owned nodes first), features, labels, local split."""

    nodes: np.ndarray
    num_owned: int
    indptr: np.ndarray
    indices: np.ndarray
    features: np.ndarray
    labels: np.ndarray
    split: dict[str, np.ndarray]


class PartitionBook:
    """An opened book directory: meta.json, owner.npy and part-<i>/ directories."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.meta = read_json(self.path / "meta.json")
        self.p = int(self.meta["p"])

    @property
    def metrics(self) -> dict[str, Any]:
        return self.meta["metrics"]

    def owner(self) -> np.ndarray:
        return np.load(self.path / "owner.npy")

    def part_meta(self, i: int) -> dict[str, Any]:
        return read_json(self.path / f"part-{i}" / "meta.json")

    def load(self, i: int) -> LocalPartition:
        part = self.path / f"part-{i}"
        if not part.is_dir():
            raise DataError(f"{part}: partition {i} missing from the book (p={self.p})")
        with np.load(part / "split.npz") as split:
            local_split = {key: split[key] for key in ("train", "val", "test")}
        return LocalPartition(
            nodes=np.load(part / "nodes.npy"),
            num_owned=int(self.part_meta(i)["num_owned"]),
            indptr=np.load(part / "indptr.npy"),
            indices=np.load(part / "indices.npy"),
            features=np.load(part / "feat.npy"),
            labels=np.load(part / "label.npy"),
            split=local_split,
        )


def is_complete(path: Path) -> bool:
    return (Path(path) / "meta.json").is_file()
