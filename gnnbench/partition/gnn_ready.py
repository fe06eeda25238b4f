"""The shared GNN-ready step: owners -> partitions a worker can train on, plus every metric.

Partition i holds its owned nodes O_i and their k-hop neighbourhood, with every edge incident to a
node within k-1 hops of O_i (k = 1: every edge incident to O_i), features and labels copied through
bounded windows of the store's files. Membership is a bitset of |V| x ceil(p/64) words; the edges of
each partition are first spilled to one file per partition in a streaming pass, then each partition
is built alone, so peak memory is O(|V| p / 8 + largest partition), never O(|E|) of the whole graph.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import numba
import numpy as np

from gnnbench.data.graph_ops import csr_from_edges
from gnnbench.data.store import GraphStore, NpyLayout
from gnnbench.partition.edge_partition import add_replica

ROLE_TRAIN, ROLE_VAL, ROLE_TEST = 1, 2, 3


@numba.njit(cache=True)
def _owned_bits(owner, words):
    bits = np.zeros((owner.shape[0], words), dtype=np.uint64)
    for v in range(owner.shape[0]):
        add_replica(bits, v, owner[v])
    return bits


@numba.njit(cache=True, nogil=True)
def _expand_chunk(edges, inner, outer):
    """outer |= neighbours' inner bits: one hop of membership growth over a chunk of edges."""
    for k in range(edges.shape[0]):
        u = edges[k, 0]
        v = edges[k, 1]
        for w in range(inner.shape[1]):
            outer[v, w] |= inner[u, w]
            outer[u, w] |= inner[v, w]


@numba.njit(cache=True, nogil=True)
def _route_chunk(edges, full, owner, p, edge_count):
    """Group a chunk's edges by every partition they belong to (a counting sort).

    Returns the grouped edges, the offsets of each partition's run, and the chunk's cut edges.
    """
    words = full.shape[1]
    counts = np.zeros(p + 1, dtype=np.int64)
    cut = 0
    for k in range(edges.shape[0]):
        u = edges[k, 0]
        v = edges[k, 1]
        if owner[u] != owner[v]:
            cut += 1
        for w in range(words):
            mask = full[u, w] | full[v, w]
            while mask:
                low = mask & (~mask + np.uint64(1))
                counts[w * 64 + _bit_index(low) + 1] += 1
                mask ^= low
    offsets = np.cumsum(counts)
    cursor = offsets[:-1].copy()
    grouped = np.empty((offsets[-1], 2), dtype=edges.dtype)
    for k in range(edges.shape[0]):
        u = edges[k, 0]
        v = edges[k, 1]
        for w in range(words):
            mask = full[u, w] | full[v, w]
            while mask:
                low = mask & (~mask + np.uint64(1))
                part = w * 64 + _bit_index(low)
                grouped[cursor[part], 0] = u
                grouped[cursor[part], 1] = v
                cursor[part] += 1
                mask ^= low
    for i in range(p):
        edge_count[i] += offsets[i + 1] - offsets[i]
    return grouped, offsets, cut


@numba.njit(cache=True, inline="always")
def _bit_index(single_bit):
    index = 0
    while single_bit > np.uint64(1):
        single_bit >>= np.uint64(1)
        index += 1
    return index


@numba.njit(cache=True)
def _members(bits, owner, part):
    """Owned nodes of `part`, then its other members (halo), each in ascending id order."""
    word = part >> 6
    flag = np.uint64(1) << np.uint64(part & 63)
    owned = 0
    total = 0
    for v in range(bits.shape[0]):
        if bits[v, word] & flag:
            total += 1
            if owner[v] == part:
                owned += 1
    nodes = np.empty(total, dtype=np.int64)
    o = 0
    h = owned
    for v in range(bits.shape[0]):
        if bits[v, word] & flag:
            if owner[v] == part:
                nodes[o] = v
                o += 1
            else:
                nodes[h] = v
                h += 1
    return nodes, owned


def _role_array(store: GraphStore) -> np.ndarray:
    role = np.zeros(store.num_nodes, dtype=np.uint8)
    for value, key in ((ROLE_TRAIN, "train"), (ROLE_VAL, "val"), (ROLE_TEST, "test")):
        role[store.split()[key]] = value
    return role


def _gather_rows(layout: NpyLayout, nodes: np.ndarray, owned: int) -> Iterator[np.ndarray]:
    """Rows of `nodes` in their order; both the owned and the halo run are ascending."""
    for run in (nodes[:owned], nodes[owned:]):
        yield from layout.iter_rows_of(run)


def _write_npy_rows(
    path: Path, blocks: Iterator[np.ndarray], shape: tuple, dtype: np.dtype
) -> None:
    """Write an .npy file block by block, never holding the whole array."""
    header = {
        "descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
        "fortran_order": False,
        "shape": shape,
    }
    with open(path, "wb") as handle:
        np.lib.format.write_array_header_1_0(handle, header)
        for block in blocks:
            handle.write(np.ascontiguousarray(block, dtype=dtype).tobytes())


def _spill_edges(store, owner, full, p, tmp_dir, chunk_edges):
    """One streaming pass: every edge appended to the spill file of each partition it belongs to."""
    edge_count = np.zeros(p, dtype=np.int64)
    cut = 0
    stream = store.edge_stream(chunk_edges)
    with ExitStack() as stack:
        spills = [stack.enter_context(open(tmp_dir / f"edges-{i}.bin", "wb")) for i in range(p)]
        for chunk in stream:
            grouped, offsets, chunk_cut = _route_chunk(chunk, full, owner, p, edge_count)
            cut += chunk_cut
            for i in range(p):
                if offsets[i + 1] > offsets[i]:
                    spills[i].write(grouped[offsets[i] : offsets[i + 1]].tobytes())
    return edge_count, cut, stream.passes


def _membership(store, owner, p, hops, chunk_edges):
    """Bitsets of the (hops-1)-hop set ("full" nodes, whose edges are all kept) and the hops-hop set."""
    words = (p + 63) // 64
    full = _owned_bits(owner, words)
    passes = 0
    for _ in range(hops - 1):
        grown = full.copy()
        stream = store.edge_stream(chunk_edges)
        for chunk in stream:
            _expand_chunk(chunk, full, grown)
        passes += stream.passes
        full = grown
    members = full.copy()
    stream = store.edge_stream(chunk_edges)
    for chunk in stream:
        _expand_chunk(chunk, full, members)
    return full, members, passes + stream.passes


def build_partitions(
    store: GraphStore,
    owner: np.ndarray,
    p: int,
    out_dir: Path,
    hops: int = 1,
    chunk_edges: int = 1 << 20,
    node_data: bool = True,
) -> dict:
    """Write part-<i>/ for every partition under `out_dir` and return the partition metrics.

    `node_data=False` writes the structure and local splits only (no feature or label rows).
    """
    owner = np.ascontiguousarray(owner, dtype=np.int32)
    full, members, passes = _membership(store, owner, p, hops, chunk_edges)
    edge_count, cut, spill_passes = _spill_edges(store, owner, full, p, out_dir, chunk_edges)
    del full
    role = _role_array(store)
    sizes = [_write_partition(store, owner, members, role, i, out_dir, node_data) for i in range(p)]
    return _metrics(store, owner, p, sizes, edge_count, cut, role, passes + spill_passes)


def _write_partition(store, owner, members, role, i, out_dir, node_data) -> dict:
    part_dir = out_dir / f"part-{i}"
    part_dir.mkdir()
    nodes, owned = _members(members, owner, i)
    spill = out_dir / f"edges-{i}.bin"
    edges = np.fromfile(spill, dtype=store.id_dtype).reshape(-1, 2)
    spill.unlink()
    local = _localise(nodes, edges)
    del edges
    indptr, indices = csr_from_edges(local, len(nodes))
    del local
    np.save(part_dir / "nodes.npy", nodes)
    np.save(part_dir / "indptr.npy", indptr)
    np.save(part_dir / "indices.npy", indices.astype(np.int32 if len(nodes) < 2**31 else np.int64))
    layout = store.feature_layout() if node_data else None
    if layout is not None:
        _write_npy_rows(
            part_dir / "feat.npy",
            _gather_rows(layout, nodes, owned),
            (len(nodes), layout.shape[1]),
            np.float32,
        )
    labels = store.path / "label.npy"
    if node_data and labels.is_file():
        label_layout = NpyLayout.read(labels)
        _write_npy_rows(
            part_dir / "label.npy",
            _gather_rows(label_layout, nodes, owned),
            (len(nodes), *label_layout.shape[1:]),
            label_layout.dtype,
        )
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
    return info


def _localise(nodes: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Global ids -> positions in `nodes` (every endpoint of a partition's edge is a member)."""
    order = np.argsort(nodes, kind="stable")
    positions = np.searchsorted(nodes[order], edges)
    return order[positions]


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
