"""Stage 1: turn a dataset config into a prepared GraphStore (cached, prepared once).

A dataset source is one module in `gnnbench/data/sources/` registered under the name that
`dataset.source` takes; its function fills a GraphStoreBuilder from raw files or a generator.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gnnbench.data.builder import GraphStoreBuilder
from gnnbench.data.download import fetch_missing, remote_files
from gnnbench.data.import_checks import available_memory, gib
from gnnbench.data.import_measure import measured_import
from gnnbench.data.input_features import with_input_features
from gnnbench.data.sources import SOURCES, SourceFn
from gnnbench.data.spec import ORIGIN_KEYS, DataSpec, shared_value
from gnnbench.data.store import FORMAT_VERSION, GraphStore
from gnnbench.errors import ConfigError, DataError, OutOfMemory, first_line
from gnnbench.paths import gnnbench_home, raw_dir
from gnnbench.schema import DatasetKeys

# How the store is built or where its raw bytes came from, not what it holds.
IMPORT_ONLY_KEYS = (
    "import_memory_gb",
    *(k.split(".")[1] for k in ORIGIN_KEYS if k.startswith("dataset.")),
)
# Keys whose value here builds what stores built before the key existed: left out of the cache key
# at that value, so adding them to a config keeps its store.
IMPORT_DEFAULTS = {
    "nonfinite": "error",
    "feature_dtype": "float32",
    "split_fractions": [0.70, 0.15, 0.15],
    "features": "none",
}


def raw_path(dataset: Mapping[str, Any], key: str = "path") -> Path:
    """A dataset file or folder: absolute, or relative to `GNNBENCH_RAW_DIR`; must exist."""
    value = dataset.get(key)
    if not value or str(value) == "???":  # "???": Hydra's unset marker, kept as text by resolve
        raise ConfigError(
            f"dataset.{key} is required for dataset={dataset.get('name') or dataset.get('source')}"
            " (a file, absolute or relative to GNNBENCH_RAW_DIR)"
        )
    path = Path(str(value)).expanduser()
    if not path.is_absolute():
        path = raw_dir() / path
    if not path.exists():
        raise DataError(
            f"{path}: not found (dataset.{key}; raw files are read from GNNBENCH_RAW_DIR={raw_dir()})"
        )
    return path


def dataset_key(dataset: Mapping[str, Any]) -> str:
    """Hash of the dataset config and its raw file's size and mtime: a changed file re-imports.

    Keys that cannot change the store (the import's memory budget) or hold their default are left
    out, so adding them to a config keeps its existing store.
    """
    identity = {
        key: value
        for key, value in dataset.items()
        if key not in IMPORT_ONLY_KEYS and IMPORT_DEFAULTS.get(key, object()) != value
    }
    for key in ("path", "features_path", "labels_path"):  # the edge list's node files too
        if identity.get(key):
            path = Path(str(identity[key])).expanduser()
            path = path if path.is_absolute() else raw_dir() / path
            if path.exists():
                stamp = "raw_file" if key == "path" else f"raw_file_{key}"
                identity[stamp] = _stamp(path, dataset)
    identity["format_version"] = FORMAT_VERSION  # a store of older code is prepared again
    payload = json.dumps(identity, sort_keys=True, default=str).encode()
    return hashlib.blake2b(payload, digest_size=6).hexdigest()


def _stamp(path: Path, dataset: Mapping[str, Any]) -> list:
    """[size, mtime] of a raw file; of a folder that downloaded files fill (planetoid/, shared by
    cora and citeseer), those files' own, so another dataset's download into it changes nothing."""
    files = [raw_dir() / f.to for f in remote_files(dataset)] if path.is_dir() else []
    files = sorted(f for f in files if f.is_relative_to(path) and f.is_file())
    if not files:
        stat = path.stat()
        return [stat.st_size, int(stat.st_mtime)]
    stats = [(f, f.stat()) for f in files]
    return [[str(f.relative_to(path)), st.st_size, int(st.st_mtime)] for f, st in stats]


def import_memory_gb(dataset: Mapping[str, Any]) -> float:
    """`dataset.import_memory_gb`: the memory bound of the import's deduplication (null: the
    default)."""
    value = shared_value(dataset, "import_memory_gb")
    try:
        budget = float(DatasetKeys.import_memory_gb if value is None else value)
    except (TypeError, ValueError):
        budget = -1.0
    if not budget > 0:
        raise ConfigError(
            f"dataset.import_memory_gb: expected a positive size in GB, got {value!r}"
        )
    return budget


def store_path(dataset: Mapping[str, Any]) -> Path:
    return gnnbench_home() / "graphs" / f"{dataset['name']}-{dataset_key(dataset)}"


def prepare_dataset(dataset: DataSpec | Mapping[str, Any]) -> GraphStore:
    """Open the prepared store for this dataset (a spec, or a config checked into one),
    importing it first if needed."""
    spec = dataset if isinstance(dataset, DataSpec) else DataSpec.from_config(dataset)
    dataset = spec.to_config()
    source = SOURCES.get(spec.source)
    fetch_missing(dataset)  # first use of a public dataset: before its raw file enters the key
    dest = store_path(dataset)
    if not (dest / "meta.json").is_file():
        try:
            _import(dest, dataset, source)
        except MemoryError as exc:  # the builder has removed what it wrote
            raise OutOfMemory(
                f"{dest.parent}: out of memory importing dataset {dataset['name']} "
                f"({first_line(exc)}; {gib(available_memory())} available)"
            ) from None
    return with_input_features(GraphStore(dest), str(shared_value(dataset, "features")))


def _import(dest: Path, dataset: dict[str, Any], source: SourceFn) -> None:
    """Run the source into a builder at `dest`, measured; nothing stays behind if it fails."""
    # The split of a source without one is part of the dataset, not of the run's seed.
    with GraphStoreBuilder(
        dest,
        str(dataset["name"]),
        str(dataset["source"]),
        int(shared_value(dataset, "split_seed")),
        normalize_features=bool(shared_value(dataset, "normalize_features")),
        nonfinite=shared_value(dataset, "nonfinite"),
        import_memory_gb=import_memory_gb(dataset),
        feature_dtype=shared_value(dataset, "feature_dtype"),
        split_fractions=shared_value(dataset, "split_fractions"),
    ) as builder:
        with measured_import(builder.tmp / "import.memray") as figures:
            source(builder, dataset)
            builder.finish()
        builder.record_meta(**figures)
