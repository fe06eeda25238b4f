"""Compiled kernels of the GNN-ready step: membership bitsets, edge routing, local CSR, rows.

A node's partition membership is a row of words (the narrowest unsigned type holding p bits);
every kernel walks set bits with one De Bruijn multiply per bit. gnn_ready.py drives them.
"""

from __future__ import annotations

import numba
import numpy as np

from gnnbench.data.graph_ops import fill_csr

# De Bruijn table: index of the single set bit of a uint64 in one multiply and one lookup.
_DEBRUIJN = np.uint64(0x03F79D71B4CB0A89)
_DEBRUIJN_INDEX = np.zeros(64, dtype=np.int64)
for _bit in range(64):
    _DEBRUIJN_INDEX[((1 << _bit) * 0x03F79D71B4CB0A89 & (2**64 - 1)) >> 58] = _bit


@numba.njit(cache=True, inline="always")
def _bit_index(single_bit):
    return _DEBRUIJN_INDEX[(single_bit * _DEBRUIJN) >> np.uint64(58)]


def word_dtype(p: int) -> np.dtype:
    """The narrowest unsigned word holding p partition bits (uint64 words beyond 64): p = 8
    keeps a node's bits in one byte, so the random accesses per edge stay in cache longer."""
    for dtype in (np.uint8, np.uint16, np.uint32):
        if p <= np.dtype(dtype).itemsize * 8:
            return np.dtype(dtype)
    return np.dtype(np.uint64)


@numba.njit(cache=True)
def owned_bits(owner, bits):
    """Set each node's own partition bit in the zeroed (|V|, words) array `bits`."""
    width = bits.itemsize * 8
    for v in range(owner.shape[0]):
        part = owner[v]
        bits[v, part // width] |= np.uint64(1) << np.uint64(part % width)
    return bits


@numba.njit(cache=True, nogil=True)
def expand_chunk(edges, inner, outer):
    """outer |= neighbours' inner bits: one hop of membership growth over a chunk of edges."""
    for k in range(edges.shape[0]):
        u = edges[k, 0]
        v = edges[k, 1]
        for w in range(inner.shape[1]):
            outer[v, w] |= inner[u, w]
            outer[u, w] |= inner[v, w]


@numba.njit(cache=True, nogil=True)
def route_masks(edges, state, masks, inner_only):
    """The random-access half of routing: each edge's partitions, and the last membership hop.

    state[v] holds v's "full" words, then its member words, side by side so one cache miss per
    endpoint serves both. Writes the edge's partition mask (masks[k]) for the sequential half;
    returns the offsets of each partition's run when the chunk is grouped by partition.
    `inner_only` (hops = 0): an edge goes only to a partition holding both endpoints, and the
    members stay the owned nodes.
    """
    words = masks.shape[1]
    width = masks.itemsize * 8
    counts = np.zeros(words * width + 1, dtype=np.int64)
    for k in range(edges.shape[0]):
        u = edges[k, 0]
        v = edges[k, 1]
        for w in range(words):
            full_u = np.uint64(state[u, w])
            full_v = np.uint64(state[v, w])
            if inner_only:
                mask = full_u & full_v
            else:
                state[v, words + w] |= full_u
                state[u, words + w] |= full_v
                mask = full_u | full_v
            masks[k, w] = mask
            while mask:
                low = mask & (~mask + np.uint64(1))
                counts[w * width + _bit_index(low) + 1] += 1
                mask ^= low
    for i in range(words * width):
        counts[i + 1] += counts[i]
    return counts


@numba.njit(cache=True, nogil=True)
def route_scatter(edges, masks, offsets, grouped):
    """The sequential half: each edge copied into the run of every partition in its mask."""
    width = masks.itemsize * 8
    cursor = offsets[:-1].copy()
    for k in range(edges.shape[0]):
        for w in range(masks.shape[1]):
            mask = np.uint64(masks[k, w])
            while mask:
                low = mask & (~mask + np.uint64(1))
                part = w * width + _bit_index(low)
                grouped[cursor[part], 0] = edges[k, 0]
                grouped[cursor[part], 1] = edges[k, 1]
                cursor[part] += 1
                mask ^= low


@numba.njit(cache=True, nogil=True)
def members_of(bits, owner, part):
    """Owned nodes of `part`, then its other members (halo), each in ascending id order."""
    width = bits.itemsize * 8
    word = part // width
    flag = np.uint64(1) << np.uint64(part % width)
    owned = 0
    total = 0
    for v in range(bits.shape[0]):
        if np.uint64(bits[v, word]) & flag:
            total += 1
            if owner[v] == part:
                owned += 1
    nodes = np.empty(total, dtype=np.int64)
    o = 0
    h = owned
    for v in range(bits.shape[0]):
        if np.uint64(bits[v, word]) & flag:
            if owner[v] == part:
                nodes[o] = v
                o += 1
            else:
                nodes[h] = v
                h += 1
    return nodes, owned


@numba.njit(cache=True, nogil=True)
def local_csr(edges, nodes, owned, local_of, cursor, indices):
    """Symmetric local CSR of a partition's edges (global ids, stream order) into `indices`.

    Fills the reusable `local_of` for this partition's nodes first; `cursor` (n zeros, int32
    when the partition allows: half the cache footprint) counts degrees, then fill positions.
    Row entries keep edge-stream order, as csr_from_edges does. Returns indptr and the cut edges
    whose first endpoint is owned here (each cut edge is counted in exactly one partition).
    """
    n = nodes.shape[0]
    for position in range(n):
        local_of[nodes[position]] = position
    cut = 0
    for k in range(edges.shape[0]):
        a = local_of[edges[k, 0]]
        b = local_of[edges[k, 1]]
        edges[k, 0] = a
        edges[k, 1] = b
        cursor[a] += 1
        cursor[b] += 1
        if a < owned and b >= owned:
            cut += 1
    indptr = np.zeros(n + 1, dtype=np.int64)
    for position in range(n):
        indptr[position + 1] = indptr[position] + cursor[position]
    fill_csr(edges, indptr, indices, cursor)
    return indptr, cut


@numba.njit(cache=True, nogil=True)
def group_rows(members, owner, start, stop, p):
    """Rows [start, stop) grouped by (partition, owned or halo): group 2i owned, 2i+1 halo.

    Returns the rows (relative to start) in group order, ascending within a group, and the
    2p + 1 group offsets.
    """
    width = members.itemsize * 8
    offsets = np.zeros(2 * p + 1, dtype=np.int64)
    for v in range(start, stop):
        for w in range(members.shape[1]):
            mask = np.uint64(members[v, w])
            while mask:
                low = mask & (~mask + np.uint64(1))
                part = w * width + _bit_index(low)
                offsets[2 * part + (1 if owner[v] != part else 0) + 1] += 1
                mask ^= low
    for g in range(2 * p):
        offsets[g + 1] += offsets[g]
    cursor = offsets[:-1].copy()
    rows = np.empty(offsets[-1], dtype=np.int64)
    for v in range(start, stop):
        for w in range(members.shape[1]):
            mask = np.uint64(members[v, w])
            while mask:
                low = mask & (~mask + np.uint64(1))
                part = w * width + _bit_index(low)
                group = 2 * part + (1 if owner[v] != part else 0)
                rows[cursor[group]] = v - start
                cursor[group] += 1
                mask ^= low
    return rows, offsets
