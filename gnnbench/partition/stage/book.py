"""PartitionBook: the partition stage's product on disk, keyed by what determines it.

A book is trusted only after a check: its meta.json carries the book FORMAT_VERSION and a manifest
of every file it wrote (size, and a blake2b checksum of each file up to CHECKSUM_FULL_BYTES; of its
first and last CHECKSUM_EDGE_BYTES beyond that), and its path (gnnbench/partition/stage/book_identity.py) holds
the partitioner module's VERSION (bumped when its output changes). `open_verified` checks the
manifest; a book that fails is removed (one warning line) and recomputed, never used.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gnnbench.config_values import KEYS_ADDED_LATER
from gnnbench.data.features import FeatureRows
from gnnbench.data.store import read_json
from gnnbench.errors import DataError, OutOfMemory, first_line

log = logging.getLogger(__name__)

# Version of the book's layout, of the GNN-ready step's output and of the meter of its metrics:
# bump it when any changes (3: the one meter of docs/design.md, resident peaks of the step's own).
FORMAT_VERSION = 3
CHECKSUM_FULL_BYTES = 8 << 20  # files up to this size are hashed whole: owner.npy, splits, metas
CHECKSUM_EDGE_BYTES = 1 << 20  # larger ones: their first and last MiB (truncation changes the size)
MANIFEST_SKIPS = ("meta.json",)


@dataclass(frozen=True)
class LocalPartition:
    """What one worker loads: local CSR (owned nodes first), features, labels, local split.

    `features[local_ids]` gathers float32 rows through a memory map, of the partition's copy or
    of the store's feat.npy by global id (a book with `feature_rows: shared`).
    """

    nodes: np.ndarray
    num_owned: int
    indptr: np.ndarray
    indices: np.ndarray
    features: FeatureRows
    labels: np.ndarray
    split: dict[str, np.ndarray]


class PartitionBook:
    """An opened book directory: meta.json, owner.npy and part-<i>/ directories."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.meta = read_json(self.path / "meta.json")
        version = self.meta.get("format_version")
        if version != FORMAT_VERSION:
            raise DataError(
                f"{self.path / 'meta.json'}: book format_version {version!r}, expected "
                f"{FORMAT_VERSION} (written by another gnnbench version: delete the book)"
            )
        self.p = int(self.meta["p"])

    def verify(self) -> None:
        """Every file of the manifest present with its size and checksum; DataError otherwise."""
        manifest = self.meta.get("files")
        if not isinstance(manifest, dict) or not manifest:
            raise DataError(f"{self.path / 'meta.json'}: no file manifest")
        for name, expected in manifest.items():
            path = self.path / name
            if not path.is_file():
                raise DataError(f"{path}: missing from the book")
            size = path.stat().st_size
            if size != expected["size"]:
                raise DataError(f"{path}: {size} bytes, expected {expected['size']} (truncated?)")
            if file_checksum(path) != expected["checksum"]:
                raise DataError(f"{path}: checksum differs from the book's manifest")

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
        try:
            with np.load(part / "split.npz") as split:
                local_split = {key: split[key] for key in ("train", "val", "test")}
            arrays = {
                name: np.load(part / f"{name}.npy")
                for name in ("nodes", "indptr", "indices", "label")
            }
        except MemoryError as exc:
            raise OutOfMemory(
                f"{part}: out of memory loading partition {i} ({first_line(exc)})"
            ) from None
        except (OSError, ValueError, EOFError, KeyError) as exc:
            raise DataError(f"{part}: unreadable partition file ({exc})") from None
        # ids, offsets and class labels are stored narrow (gnn_ready.narrowest_int,
        # book_label_dtype) and widened here: every reader sees int64, as before
        nodes = arrays["nodes"].astype(np.int64, copy=False)
        indptr = arrays["indptr"].astype(np.int64, copy=False)
        labels = arrays["label"]
        if labels.dtype.kind == "i":
            labels = labels.astype(np.int64, copy=False)
        return LocalPartition(
            nodes=nodes,
            num_owned=int(self.part_meta(i)["num_owned"]),
            indptr=indptr,
            indices=arrays["indices"],
            features=self.features(i, nodes),
            labels=labels,
            split=local_split,
        )

    def features(self, i: int, nodes: np.ndarray) -> FeatureRows:
        """Partition i's feature rows: its own feat.npy, or the store's read by global id."""
        # a book written before the key holds copies (the key's neutral value)
        before_the_key = KEYS_ADDED_LATER["partitioner.feature_rows"]
        if self.meta.get("feature_rows", before_the_key) == "copy":
            return FeatureRows(self.path / f"part-{i}" / "feat.npy")
        store_features = Path(self.meta["store"]) / "feat.npy"
        if not store_features.is_file():
            raise DataError(
                f"{store_features}: not found; the book {self.path.name} shares the store's "
                "feature rows (partitioner.feature_rows=shared) and needs that store in place"
            )
        return FeatureRows(store_features, global_ids=nodes)


def file_checksum(path: Path) -> str:
    """blake2b of the whole file up to CHECKSUM_FULL_BYTES, else of its first and last MiB."""
    digest = hashlib.blake2b(digest_size=12)
    size = path.stat().st_size
    with open(path, "rb") as handle:
        if size <= CHECKSUM_FULL_BYTES:
            while block := handle.read(1 << 20):
                digest.update(block)
        else:
            digest.update(handle.read(CHECKSUM_EDGE_BYTES))
            handle.seek(size - CHECKSUM_EDGE_BYTES)
            digest.update(handle.read(CHECKSUM_EDGE_BYTES))
    return digest.hexdigest()


def manifest(directory: Path) -> dict[str, dict[str, Any]]:
    """Size and checksum of every file under a book directory being written (meta.json aside)."""
    directory = Path(directory)
    files = sorted(path for path in directory.rglob("*") if path.is_file())
    return {
        str(path.relative_to(directory)): {
            "size": path.stat().st_size,
            "checksum": file_checksum(path),
        }
        for path in files
        if path.name not in MANIFEST_SKIPS or path.parent != directory
    }


def open_verified(path: Path) -> PartitionBook | None:
    """The book at `path` if it is there and passes its check; a failing one is removed."""
    path = Path(path)
    if not (path / "meta.json").is_file():
        return None
    try:
        book = PartitionBook(path)
        book.verify()
        return book
    except (DataError, KeyError, TypeError) as exc:
        log.warning("cached partition book failed its check, recomputing: %s", exc)
        _remove(path)
        return None


def _remove(path: Path) -> None:
    """Move a bad book aside first (one rename), so no reader ever sees it half-deleted."""
    doomed = path.with_name(f".{path.name}.bad-{os.getpid()}")
    try:
        os.rename(path, doomed)
    except OSError:
        return  # another process moved or replaced it already
    shutil.rmtree(doomed, ignore_errors=True)
