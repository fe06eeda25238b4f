"""CM-GCN's cohesive mini-batches (train.batching=cmgcn): the training nodes cut into M batches
that minimise J(P) = sum of C(B) over the batches, C(B) being the computation a batch costs.

C(B) is the weight of the (node, radius) pairs its K-layer computational graph holds: node v at
radius r when v is within r hops of B, r = 0 (the batch's outputs) to K (its inputs), each pair
weighted by its layer's cost (unit weights: `computation_cost`'s count). C is a coverage
function, hence submodular, which is what CM-GCN's algorithms rest on:

- Algorithm 1 (greedy splitting): start from one batch holding every element; M - 1 times,
  split the batch whose best bisection raises J(P) least. For a symmetric submodular split cost
  this is a 2 - 2/M approximation of the minimum J(P) (Zhao, Nagamochi and Ibaraki's bound).
- Algorithm 2 (Queyranne): a batch's best bisection, the minimum of C(A) + C(S - A) - C(S) over
  its nonempty proper subsets A, found exactly with pendent pairs in O(m^3) steps for m
  elements.

Elements are the training nodes themselves while there are at most MAX_ELEMENTS of them (the
exact setting); beyond that, the training nodes in BFS order cut into MAX_ELEMENTS equal runs
(a coarsened graph: each run is one element whose cover is the union of its nodes'). The
batches are computed once per partition and kept; each epoch trains them in a new order.
J(P) has no balance term, so batch sizes follow the graph, not `batch_size`: they are logged.
"""

from __future__ import annotations

import numba
import numpy as np

from gnnbench.errors import ConfigError
from gnnbench.train.batching import train_bfs_order

# Queyranne's O(m^3) on m elements: at 512, one split of coauthor_cs's 12.8 k training nodes
# (0.8 M cover pairs) took 4.7 s here, 2 cores under load ~4
MAX_ELEMENTS = 512
# The elements' covers in all (8 bytes a pair, copied a few times while splitting): ~256 MB
MAX_PAIRS = 1 << 25


@numba.njit(cache=True, nogil=True)
def _covers(indptr, indices, element_indptr, element_nodes, layers, max_pairs):
    """Each element's cover as CSR: pair ids radius * n + node for every node within `radius`
    hops of the element's nodes, radius 0..layers (a node at distance d is in radii d..layers).
    Stops at `max_pairs` in all, returning an indptr whose last entry is -1."""
    n = indptr.shape[0] - 1
    count = element_indptr.shape[0] - 1
    stamp = np.full(n, -1, dtype=np.int64)
    dist = np.zeros(n, dtype=np.int64)
    queue = np.empty(n, dtype=np.int64)
    cover_indptr = np.zeros(count + 1, dtype=np.int64)
    pairs = np.empty(max(16, 4 * element_nodes.shape[0]), dtype=np.int64)
    size = 0
    for e in range(count):
        tail = 0
        for i in range(element_indptr[e], element_indptr[e + 1]):
            node = element_nodes[i]
            if stamp[node] != e:
                stamp[node], dist[node] = e, 0
                queue[tail] = node
                tail += 1
        head = 0
        while head < tail:
            v = queue[head]
            head += 1
            if dist[v] == layers:
                continue
            for k in range(indptr[v], indptr[v + 1]):
                u = indices[k]
                if stamp[u] != e:
                    stamp[u], dist[u] = e, dist[v] + 1
                    queue[tail] = u
                    tail += 1
        for i in range(tail):
            v = queue[i]
            for radius in range(dist[v], layers + 1):
                if size == max_pairs:
                    cover_indptr[count] = -1
                    return cover_indptr, pairs[:0].copy()
                if size == pairs.shape[0]:
                    grown = np.empty(min(2 * size, max_pairs), dtype=np.int64)
                    grown[:size] = pairs
                    pairs = grown
                pairs[size] = radius * n + v
                size += 1
        cover_indptr[e + 1] = size
    return cover_indptr, pairs[:size].copy()


@numba.njit(cache=True, nogil=True)
def _group_covers(reps, first, after, cover_indptr, pairs, mark):
    """The active groups' covers without repeats (a group is a linked list of elements), CSR in
    the order of `reps`; `mark` all -1 on entry, restored on exit."""
    out_indptr = np.zeros(reps.shape[0] + 1, dtype=np.int64)
    out = np.empty(pairs.shape[0], dtype=np.int64)
    size = 0
    for a in range(reps.shape[0]):
        e = first[reps[a]]
        while e != -1:
            for k in range(cover_indptr[e], cover_indptr[e + 1]):
                if mark[pairs[k]] != a:
                    mark[pairs[k]] = a
                    out[size] = pairs[k]
                    size += 1
            e = after[e]
        out_indptr[a + 1] = size
    for k in range(size):
        mark[out[k]] = -1
    return out_indptr, out[:size]


@numba.njit(cache=True, nogil=True)
def _pair_groups(cover_indptr, cover, num_pairs):
    """Inverted covers: for each pair, the groups (positions in the phase's order) covering it."""
    count = np.zeros(num_pairs + 1, dtype=np.int64)
    for k in range(cover.shape[0]):
        count[cover[k] + 1] += 1
    inv_indptr = np.cumsum(count)
    fill = inv_indptr[:-1].copy()
    inv = np.empty(cover.shape[0], dtype=np.int64)
    for a in range(cover_indptr.shape[0] - 1):
        for k in range(cover_indptr[a], cover_indptr[a + 1]):
            inv[fill[cover[k]]] = a
            fill[cover[k]] += 1
    return inv_indptr, inv


@numba.njit(cache=True, nogil=True)
def _pendent_order(cov_indptr, cov, inv_indptr, inv, weight):
    """Queyranne's ordering of one phase's groups: v1 = group 0, then repeatedly the group v
    outside W minimising f(W + v) - f(v), f(X) = C(X) + C(S - X) - C(S). Returns the last two
    groups and f({last})."""
    g = cov_indptr.shape[0] - 1
    in_w = np.zeros(g, dtype=np.bool_)
    cnt_w = np.zeros(weight.shape[0], dtype=np.int64)
    cnt_r = inv_indptr[1:] - inv_indptr[:-1]  # groups outside W covering each pair
    own = np.zeros(g)  # C({v})
    unique = np.zeros(g)  # weight only v covers: C(S) - C(S - v)
    for a in range(g):
        for k in range(cov_indptr[a], cov_indptr[a + 1]):
            own[a] += weight[cov[k]]
            if cnt_r[cov[k]] == 1:
                unique[a] += weight[cov[k]]
    gain = own.copy()  # C(W + v) - C(W)
    loss = unique.copy()  # C(S - W) - C(S - W - v)
    previous, last = -1, 0
    for step in range(g):
        if step:
            best, chosen = np.inf, -1
            for v in range(g):
                # f(W + v) - f(v) up to a constant of the phase and step
                score = gain[v] - loss[v] - own[v] + unique[v]
                if not in_w[v] and score < best:
                    best, chosen = score, v
            previous, last = last, chosen
        x = last
        in_w[x] = True
        for k in range(cov_indptr[x], cov_indptr[x + 1]):
            p = cov[k]
            cnt_w[p] += 1
            cnt_r[p] -= 1
            if cnt_w[p] != 1 and cnt_r[p] != 1:
                continue  # only these two changes move any score: each pair's list is read twice
            for j in range(inv_indptr[p], inv_indptr[p + 1]):
                y = inv[j]
                if not in_w[y]:
                    if cnt_w[p] == 1:
                        gain[y] -= weight[p]
                    if cnt_r[p] == 1:
                        loss[y] += weight[p]
    return previous, last, own[last] - unique[last]


@numba.njit(cache=True, nogil=True)
def _min_split(cover_indptr, pairs, weight):
    """Algorithm 2: the nonempty proper subset A of the elements minimising C(A) + C(S - A) -
    C(S), by Queyranne's pendent pairs (m - 1 phases, each merging its last two groups).
    Returns (that minimum, A as a mask over the elements); (inf, empty) for one element."""
    m = cover_indptr.shape[0] - 1
    first = np.arange(m)  # a group's elements: first, then `after` links; `end` its last
    end = np.arange(m)
    after = np.full(m, -1, dtype=np.int64)
    reps = np.arange(m)
    mark = np.full(weight.shape[0], -1, dtype=np.int64)
    best, best_mask = np.inf, np.zeros(m, dtype=np.bool_)
    for g in range(m, 1, -1):
        cov_indptr, cov = _group_covers(reps[:g], first, after, cover_indptr, pairs, mark)
        inv_indptr, inv = _pair_groups(cov_indptr, cov, weight.shape[0])
        t, u, value = _pendent_order(cov_indptr, cov, inv_indptr, inv, weight)
        if value < best:
            best = value
            best_mask[:] = False
            e = first[reps[u]]
            while e != -1:
                best_mask[e] = True
                e = after[e]
        # merge u's group into t's, and drop u from the active groups
        keep, gone = reps[t], reps[u]
        after[end[keep]] = first[gone]
        end[keep] = end[gone]
        reps[u] = reps[g - 1]
    return best, best_mask


def elements(
    indptr: np.ndarray, indices: np.ndarray, train: np.ndarray, rng: np.random.Generator
) -> list[np.ndarray]:
    """What Algorithm 1 partitions: each training node, or, beyond MAX_ELEMENTS of them, the
    training nodes in BFS order cut into MAX_ELEMENTS equal runs."""
    if len(train) <= MAX_ELEMENTS:
        return [train[i : i + 1] for i in range(len(train))]
    return np.array_split(train_bfs_order(indptr, indices, train, rng), MAX_ELEMENTS)


class Covers:
    """The elements' covers (pair ids radius * n + node) and each radius's weight."""

    def __init__(self, indptr, indices, groups: list[np.ndarray], layer_weights: np.ndarray):
        self.n = len(indptr) - 1
        self.layer_weights = np.asarray(layer_weights, dtype=np.float64)
        sizes = np.fromiter(map(len, groups), dtype=np.int64, count=len(groups))
        element_indptr = np.concatenate([[0], np.cumsum(sizes)])
        nodes = np.concatenate(groups).astype(np.int64) if groups else np.zeros(0, np.int64)
        layers = len(self.layer_weights) - 1
        self.indptr, self.pairs = _covers(np.asarray(indptr, dtype=np.int64),
                                          np.asarray(indices), element_indptr, nodes, layers,
                                          MAX_PAIRS)  # fmt: skip
        if self.indptr[-1] < 0:
            raise ConfigError(
                f"train.batching=cmgcn: the training nodes' {layers}-hop computational graphs "
                f"hold more than {MAX_PAIRS:,} (node, layer) pairs on this partition, more than "
                "Algorithms 1-2 can split in memory here; use train.batching=cohesive, fewer "
                "model layers or a larger p"
            )

    def cost(self, block: np.ndarray) -> float:
        """C(block): the weight of its elements' covers' union."""
        union = np.unique(np.concatenate([self._of(e) for e in block]))
        return float(self.layer_weights[union // self.n].sum())

    def _of(self, element: int) -> np.ndarray:
        return self.pairs[self.indptr[element] : self.indptr[element + 1]]

    def best_split(self, block: np.ndarray) -> tuple[float, np.ndarray]:
        """Algorithm 2 on the block's elements, with its pairs renumbered 0..P-1."""
        if len(block) < 2:
            return np.inf, np.zeros(len(block), dtype=bool)
        covers = [self._of(e) for e in block]
        local_indptr = np.concatenate([[0], np.cumsum([len(c) for c in covers])])
        union, local = np.unique(np.concatenate(covers), return_inverse=True)
        weight = self.layer_weights[union // self.n]
        return _min_split(local_indptr, local.astype(np.int64), weight)


def greedy_split(covers: Covers, count: int) -> list[np.ndarray]:
    """Algorithm 1: from one block of every element, `count` - 1 times split the block whose
    best bisection adds least to J(P) (fewer blocks if elements run out)."""
    blocks = [np.arange(len(covers.indptr) - 1)]
    splits = [covers.best_split(blocks[0])]
    while len(blocks) < count:
        chosen = min(range(len(blocks)), key=lambda b: splits[b][0])
        if not np.isfinite(splits[chosen][0]):
            break  # every block is one element
        block, (_, mask) = blocks.pop(chosen), splits.pop(chosen)
        for half in (block[mask], block[~mask]):
            blocks.append(half)
            splits.append(covers.best_split(half))
    return blocks


def cmgcn_batches(
    indptr: np.ndarray,
    indices: np.ndarray,
    train: np.ndarray,
    count: int,
    layer_weights: np.ndarray,
    rng: np.random.Generator,
) -> list[np.ndarray]:
    """The training nodes cut into `count` CM-GCN batches (each sorted); `layer_weights` has
    one weight per radius 0..K (K = the model's layers)."""
    if len(train) == 0:
        return []
    groups = elements(indptr, indices, np.asarray(train, dtype=np.int64), rng)
    covers = Covers(indptr, indices, groups, layer_weights)
    blocks = greedy_split(covers, max(1, count))
    return [np.sort(np.concatenate([groups[e] for e in block])) for block in blocks]
