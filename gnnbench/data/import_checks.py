"""Checks the import makes before and while it writes a store, so faults end in one DataError line.

Memory for the per-node arrays, free disk space, a read-only or full GNNBENCH_HOME, non-finite
feature values and label values that are not 0..C-1 are all refused (or repaired on request)
here, instead of surfacing as numpy or OS tracebacks halfway through an import.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import numpy as np

from gnnbench import schema
from gnnbench.errors import ConfigError, DataError

# Bytes per node held at once by the import's O(|V|) arrays. The largest holder is the synthetic
# generator while it builds its alias tables (labels, weights, order, two tables, scratch): 95 B
# per node measured with memray at 2 M nodes; other sources hold less (split 16, degree 8,
# labels 8).
NODE_ARRAY_BYTES = 96
NONFINITE_CHOICES = schema.choices(schema.Nonfinite)
FEATURE_BLOCK_BYTES = 64 << 20  # rows scanned per step for non-finite values
_DISK_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
_ACCESS_ERRNOS = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR}


def available_memory() -> int:
    """Bytes the OS could hand to this process now without swapping (Linux MemAvailable)."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def check_node_memory(num_nodes: int, origin: str) -> None:
    """Refuse a node count whose per-node arrays cannot fit in memory, before allocating them."""
    needed = NODE_ARRAY_BYTES * int(num_nodes)
    available = available_memory()
    if needed > available:
        raise DataError(
            f"{origin}={num_nodes}: the import's per-node arrays (split, degree, labels) need "
            f"{gib(needed)} of memory, only {gib(available)} is available"
        )


def free_disk_bytes(directory: Path) -> int:
    """Bytes free for this process on the file system holding `directory`."""
    return shutil.disk_usage(directory).free


# What a generated store writes per node: degree.npy, label.npy and split.npz, 8 bytes each (the
# 1 B-edge RGG's are 800 MB each at 100 M nodes; 16 here undercounted them by a third).
NODE_ARRAY_BYTES = 24


def generated_disk_bytes(
    num_raw_edges: int, num_nodes: int, id_bytes: int, feature_bytes: int, *, features_first: bool
) -> int:
    """The disk peak of importing a generated graph, bounded: raw edges (16 bytes each) with the
    bucket files of an external deduplication (32 at most, gnnbench/data/canonical.py), or later
    the canonical edges (`id_bytes` per end, written once the raw files are gone); the feature
    rows beside the raw edges when the generator writes them first, else beside the canonical
    edges; plus the node arrays (NODE_ARRAY_BYTES a node)."""
    raw = 48 * num_raw_edges
    edges = 2 * id_bytes * num_raw_edges
    nodes = NODE_ARRAY_BYTES * num_nodes
    if features_first:
        return max(raw, edges) + feature_bytes + nodes
    return max(raw, edges + feature_bytes) + nodes


def check_disk_space(directory: Path, needed: int, what: str) -> None:
    """Refuse to start writing `what` when the file system has less than `needed` bytes free
    (the import's files, the synthetic graph, the GNN-ready step's partitions)."""
    free = free_disk_bytes(directory)
    if needed > free:
        raise DataError(
            f"{Path(directory).parent}: not enough disk space for {what} "
            f"(needs {needed} bytes, {free} free)"
        )


def os_error_as_data_error(exc: BaseException | None, directory: Path) -> DataError | None:
    """A read-only, forbidden or full store directory as one line; None for other errors."""
    if not isinstance(exc, OSError):
        return None
    where = Path(directory)
    if exc.errno in _ACCESS_ERRNOS:
        return DataError(
            f"{where}: not writable ({exc.strerror}); the import needs a directory it can "
            "write there (set GNNBENCH_HOME to a writable directory)"
        )
    if exc.errno in _DISK_ERRNOS:
        return DataError(
            f"{where}: disk full or file too large ({exc.strerror}) while writing "
            f"{Path(exc.filename).name if exc.filename else 'the store'}; free space there "
            "or set GNNBENCH_HOME to another disk"
        )
    return None


def nonfinite_policy(value: object) -> str:
    """`dataset.nonfinite`: what to do with NaN/inf features (error or zero)."""
    policy = schema.DatasetKeys.nonfinite if value is None else str(value)
    if policy not in NONFINITE_CHOICES:
        raise ConfigError(
            f"dataset.nonfinite: expected one of {', '.join(NONFINITE_CHOICES)}, got {value!r}"
        )
    return policy


def scan_nonfinite(path: Path, policy: str, origin: str) -> int:
    """Count feature rows holding NaN or inf, a row block at a time; zero them or refuse them.

    Returns the number of bad rows (0 when clean). With policy "error" any bad row is a DataError
    naming `origin`, the count and the first bad row.
    """
    from gnnbench.data.npy_file import NpyLayout

    layout = NpyLayout.read(path)
    bad_rows = 0
    first_bad = -1
    start = 0
    for block in layout.row_blocks(FEATURE_BLOCK_BYTES, "r+" if policy == "zero" else "r"):
        bad = ~np.isfinite(block)
        rows = bad.any(axis=1)
        count = int(rows.sum())
        if count and first_bad < 0:
            first_bad = start + int(np.argmax(rows))
        bad_rows += count
        if count and policy == "zero":
            block[bad] = 0.0
        start += len(block)
    if bad_rows and policy == "error":
        raise DataError(
            f"{origin}: {bad_rows} feature rows hold NaN or inf (first: row {first_bad}); "
            "set dataset.nonfinite=zero to replace them by 0"
        )
    return bad_rows


def compact_labels(labels: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """Class labels renumbered 0..C-1 in sorted order of their values (negative = unlabelled kept).

    Returns the renumbered labels and the original value of each class.
    """
    labelled = labels >= 0
    values = np.unique(labels[labelled])
    if len(values) and values[-1] == len(values) - 1:
        return labels, values.tolist()  # already 0..C-1
    compact = labels.copy()
    compact[labelled] = np.searchsorted(values, labels[labelled])
    return compact, values.tolist()


def gib(num_bytes: int) -> str:
    return f"{num_bytes / 2**30:.1f} GiB"
