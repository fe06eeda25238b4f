"""The shared GNN-ready step: owners -> partitions a worker can train on, plus every metric.

Partition i holds its owned nodes O_i and their k-hop neighbourhood, with every edge incident to a
node within k-1 hops of O_i (k = 1: every edge incident to O_i; k = 0: O_i and the edges between
its nodes only, no halo); nodes are owned ascending, then halo ascending, and each local CSR row
keeps its neighbours in edge-stream order.

Passes over the edge stream: hops - 1 growing the "full" set (nodes within hops-1 of O_i, whose
edges are all kept), then one that grows the members by the last hop and routes every edge into a
spill file per partition (a counting sort per chunk). Partitions are then built from their spills,
STRUCTURE_WORKERS at a time, by the compiled kernels of gnn_ready_kernels.py: a reusable
global->local array, degree counting, CSR fill. Label rows, and feature rows when the book
copies them (`feature_rows="copy"`; "shared" partitions read the store's feat.npy by global id
through their nodes.npy), are copied in one sequential pass over each store file, every row
written straight into each partition holding it, in the store's dtype. Free disk is checked before
the routing (its spill files) and again, exactly, before the rows are copied.

Peak memory, with b = the narrowest word holding p bits (1 byte for p <= 8; ceil(p/64) 8-byte
words beyond 64): 2 b |V| (full and member bits), + 4 |V| per worker (global->local), + per worker
one partition (16 E_i for its spilled edges and CSR indices, 20 n_i for nodes, indptr, degrees),
+ one chunk of edges and masks, + one 64 MB row window. Never O(|E|) of the whole graph.
"""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import numpy as np

from gnnbench.data.features import npy_header
from gnnbench.data.import_checks import check_disk_space
from gnnbench.data.npy_file import NpyLayout
from gnnbench.data.store import GraphStore
from gnnbench.partition.stage.gnn_ready_kernels import (
    expand_chunk,
    group_rows,
    local_csr,
    members_of,
    owned_bits,
    route_masks,
    route_scatter,
    word_dtype,
)

ROLE_TRAIN, ROLE_VAL, ROLE_TEST = 1, 2, 3
ROW_WINDOW_BYTES = 64 << 20  # rows of a feature/label file read at once
STRUCTURE_WORKERS = 2  # partitions built at once (threads); each holds one partition in memory


def _role_array(store: GraphStore) -> np.ndarray:
    role = np.zeros(store.num_nodes, dtype=np.uint8)
    for value, key in ((ROLE_TRAIN, "train"), (ROLE_VAL, "val"), (ROLE_TEST, "test")):
        role[store.split()[key]] = value
    return role


def _scatter_rows(
    layout: NpyLayout,
    dtype: np.dtype,
    members: np.ndarray,
    owner: np.ndarray,
    sizes: list[dict],
    paths: list[Path],
) -> None:
    """Copy every member row of `layout` into each partition's file, in one pass over the source.

    Partition i's file holds its owned rows, then its halo rows (both ascending): rows arrive in
    ascending order, so each of the two runs is written sequentially at its own cursor.
    """
    p = len(paths)
    row_dims = layout.shape[1:]
    window_rows = max(1, ROW_WINDOW_BYTES // max(1, layout.row_bytes))
    row_bytes = int(np.prod(row_dims, dtype=np.int64)) * np.dtype(dtype).itemsize
    headers = [npy_header((size["num_nodes"], *row_dims), dtype) for size in sizes]
    # cursors[2i] / cursors[2i+1]: next owned / halo row of partition i
    cursors = np.zeros(2 * p, dtype=np.int64)
    cursors[1::2] = [size["num_owned"] for size in sizes]
    with ExitStack() as stack:
        handles = [stack.enter_context(open(path, "wb")) for path in paths]
        for handle, header in zip(handles, headers, strict=True):
            handle.write(header)
        # a group holds each row of a window at most once: one reused buffer, no allocation per
        # group (fresh pages for every gathered block cost as much as the copy itself)
        buffer = np.empty((min(window_rows, layout.shape[0]), *row_dims), dtype=dtype)
        for start in range(0, layout.shape[0], window_rows):
            stop = min(layout.shape[0], start + window_rows)
            window = np.asarray(layout.window(start, stop))
            rows, offsets = group_rows(members, owner, start, stop, p)
            for group in range(2 * p):
                count = int(offsets[group + 1] - offsets[group])
                if count == 0:
                    continue
                block = buffer[:count]
                chosen = rows[offsets[group] : offsets[group + 1]]
                np.take(window, chosen, axis=0, out=block, mode="clip")  # "raise" would buffer
                handle = handles[group // 2]
                handle.seek(len(headers[group // 2]) + int(cursors[group]) * row_bytes)
                handle.write(block)
                cursors[group] += count
            del window


def _route_edges(store, owner, p, hops, tmp_dir, chunk_edges):
    """Membership bitset, each partition's edge count, its spill file, and the edges no partition
    holds (the cut edges when hops = 0; none otherwise).

    hops - 1 passes grow the "full" set (nodes within hops - 1 of O_i: all their edges are kept);
    one last pass appends every edge to the spill of each partition it belongs to and grows the
    members (the hops-hop set) by one more hop; with hops = 0 it keeps only edges inside a
    partition and grows nothing.
    """
    dtype = word_dtype(p)
    words = -(-p // (dtype.itemsize * 8))
    full = owned_bits(owner, np.zeros((len(owner), words), dtype=dtype))
    passes = 0
    for _ in range(hops - 1):
        grown = full.copy()
        stream = store.edge_stream(chunk_edges)
        for chunk in stream:
            expand_chunk(chunk, full, grown)
        passes += stream.passes
        full = grown
    state = np.concatenate([full, full], axis=1)  # full words, then member words, per node
    del full
    edge_count = np.zeros(p, dtype=np.int64)
    dropped = 0
    masks = np.empty((min(chunk_edges, store.num_edges), words), dtype=dtype)
    grouped = np.empty((0, 2), dtype=store.id_dtype)
    stream = store.edge_stream(chunk_edges)
    with ExitStack() as stack:
        spills = [stack.enter_context(open(tmp_dir / f"edges-{i}.bin", "wb")) for i in range(p)]
        for chunk in stream:
            offsets = route_masks(chunk, state, masks, hops == 0)[: p + 1]
            if offsets[-1] > len(grouped):  # reused across chunks; grows only for hops > 1
                grouped = np.empty((int(offsets[-1]), 2), dtype=store.id_dtype)
            route_scatter(chunk, masks, offsets, grouped)
            edge_count += np.diff(offsets)
            dropped += len(chunk) - int(offsets[-1]) if hops == 0 else 0
            for i in range(p):
                if offsets[i + 1] > offsets[i]:
                    spills[i].write(grouped[offsets[i] : offsets[i + 1]])
    members = np.ascontiguousarray(state[:, words:])
    return members, edge_count, dropped, passes + stream.passes


def build_partitions(
    store: GraphStore,
    owner: np.ndarray,
    p: int,
    out_dir: Path,
    hops: int = 1,
    chunk_edges: int = 1 << 20,
    node_data: bool = True,
    feature_rows: str = "copy",
) -> dict:
    """Write part-<i>/ for every partition under `out_dir` and return the partition metrics.

    `node_data=False` writes the structure and local splits only (no feature or label rows);
    `feature_rows="shared"` writes the label rows but no feature rows.
    """
    owner = np.ascontiguousarray(owner, dtype=np.int32)
    # spills: each edge goes to at most two partitions for hops <= 1 (more for larger hops:
    # then a lower bound), and the CSR indices of the partitions in progress take as much again
    edge_file = store.num_edges * 2 * store.id_dtype.itemsize
    check_disk_space(out_dir, 4 * edge_file, "the GNN-ready step's edge spills and CSRs")
    started = time.perf_counter()
    members, edge_count, dropped, passes = _route_edges(store, owner, p, hops, out_dir, chunk_edges)
    routed = time.perf_counter()
    role = _role_array(store)
    workers = max(1, min(p, STRUCTURE_WORKERS, _usable_cpus()))

    def build_every(first: int) -> dict[int, dict]:
        """Partitions first, first + workers, ...: one reusable global->local array per worker."""
        local_of = np.empty(store.num_nodes, np.int32 if store.num_nodes < 2**31 else np.int64)
        return {
            i: _write_structure(store, owner, members, role, local_of, i, out_dir)
            for i in range(first, p, workers)
        }

    built: dict[int, dict] = {}
    with ThreadPoolExecutor(workers) as pool:  # the kernels and file I/O release the GIL
        for done in pool.map(build_every, range(workers)):
            built.update(done)
    sizes = [built[i] for i in range(p)]
    structured = time.perf_counter()
    if node_data:
        _write_node_data(store, owner, members, sizes, out_dir, feature_rows == "copy")
    phases = {  # where the step's time goes, logged beside gnn_ready_time_s
        "gnn_ready_route_s": routed - started,
        "gnn_ready_structure_s": structured - routed,
        "gnn_ready_rows_s": time.perf_counter() - structured,
    }
    # hops >= 1: each cut edge sits in its owners' partitions, counted once by local_csr;
    # hops = 0: no partition holds a cut edge, so the routing counted them
    cut = sum(size.pop("cut") for size in sizes) + dropped
    return {**_metrics(store, owner, p, sizes, edge_count, cut, role, passes), **phases}


def _usable_cpus() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _write_structure(store, owner, members, role, local_of, i, out_dir) -> dict:
    """part-i/: nodes, local CSR, local splits and meta.json, from partition i's spill file."""
    part_dir = out_dir / f"part-{i}"
    part_dir.mkdir()
    nodes, owned = members_of(members, owner, i)
    spill = out_dir / f"edges-{i}.bin"
    edges = np.fromfile(spill, dtype=store.id_dtype).reshape(-1, 2)
    spill.unlink()
    indices = np.empty(2 * len(edges), dtype=np.int32 if len(nodes) < 2**31 else np.int64)
    cursor = np.zeros(len(nodes), dtype=np.int32 if len(indices) < 2**31 else np.int64)
    indptr, cut = local_csr(edges, nodes, owned, local_of, cursor, indices)
    del edges, cursor
    np.save(part_dir / "nodes.npy", nodes.astype(store.id_dtype, copy=False))
    np.save(part_dir / "indptr.npy", indptr.astype(narrowest_int(indptr[-1]), copy=False))
    np.save(part_dir / "indices.npy", indices)
    owned_role = role[nodes[:owned]]
    split = {
        key: np.flatnonzero(owned_role == value)
        for key, value in (("train", ROLE_TRAIN), ("val", ROLE_VAL), ("test", ROLE_TEST))
    }
    np.savez(part_dir / "split.npz", **split)
    info = {
        "num_nodes": int(len(nodes)),
        "num_owned": int(owned),
        "num_local_edges": int(len(indices) // 2),
        "num_train": int(len(split["train"])),
    }
    (part_dir / "meta.json").write_text(json.dumps(info, indent=2))
    return {**info, "cut": cut}


def _write_node_data(store, owner, members, sizes, out_dir, copy_features: bool) -> None:
    """label.npy (and feat.npy when copying features) of every partition, one sequential pass
    over each store file, after checking that the disk holds them all."""
    sources: list[tuple[str, NpyLayout, np.dtype]] = []
    features = store.feature_layout() if copy_features else None
    if features is not None:  # float16 stays float16: FeatureRows casts the rows it reads
        sources.append(("feat.npy", features, features.dtype))
    if (store.path / "label.npy").is_file():
        labels = NpyLayout.read(store.path / "label.npy")
        sources.append(("label.npy", labels, book_label_dtype(labels.dtype, store.num_classes)))
    rows = sum(size["num_nodes"] for size in sizes)  # RF x |V|
    needed = sum(
        rows * int(np.prod(layout.shape[1:], dtype=np.int64)) * np.dtype(dtype).itemsize
        for _, layout, dtype in sources
    )
    what = " and ".join(name for name, _, _ in sources) + " rows of every partition"
    check_disk_space(out_dir, needed, what)
    for name, layout, dtype in sources:
        paths = [out_dir / f"part-{i}" / name for i in range(len(sizes))]
        _scatter_rows(layout, dtype, members, owner, sizes, paths)


def narrowest_int(largest: int) -> np.dtype:
    """int32 for values below 2^31, else int64: a book's ids and offsets on disk (its reader
    widens them to int64 on load, so only the disk is saved: 4 bytes per RF x |V| each)."""
    return np.dtype(np.int32 if int(largest) < 2**31 else np.int64)


def book_label_dtype(stored: np.dtype, num_classes: int) -> np.dtype:
    """A book's label.npy dtype: single-label classes (0..C-1, with -1 for none) in the
    smallest signed integer that holds them, widened to int64 on load; multi-label rows (uint8
    columns) as stored. At 100 M nodes and RF 8.6 int16 saves 5 GB of the book against int64."""
    if stored.kind not in "iu" or stored.itemsize == 1:
        return stored
    for candidate in (np.int8, np.int16, np.int32):
        if num_classes <= np.iinfo(candidate).max:
            return np.dtype(candidate)
    return stored


def _metrics(store, owner, p, sizes, edge_count, cut, role, passes) -> dict:
    n = store.num_nodes
    owned = np.bincount(owner, minlength=p)
    train = np.bincount(owner[role == ROLE_TRAIN], minlength=p)
    total_members = sum(size["num_nodes"] for size in sizes)
    return {
        "replication_factor": total_members / n,
        "edge_cut": cut / max(1, store.num_edges),
        "vertex_balance": float(owned.max() / (n / p)),
        "edge_balance": float(edge_count.max() / max(1e-12, edge_count.sum() / p)),
        "train_balance": float(train.max() / max(1e-12, train.sum() / p)),
        "gnn_ready_passes": int(passes),
        "partition_nodes": [size["num_nodes"] for size in sizes],
        "partition_owned": owned.tolist(),
        "partition_edges": edge_count.tolist(),
        "partition_train": train.tolist(),
    }
