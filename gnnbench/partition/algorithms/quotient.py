"""Streaming sub-partitions coarsened into a quotient graph, METIS on the quotient graph.

After Cuttana's coarsening step (Hajidehi, Sridhar & Seltzer, PVLDB 2025): a streaming partitioner
cuts the graph into k = p * `subparts_per_part` sub-partitions, which act as the coarse nodes of a
small quotient graph; assigning whole sub-partitions to the p parts then sees the whole graph at
once, which a one-pass stream never does. Cuttana's own buffer (holding back nodes whose
neighbourhood is unseen) is not part of this: the sub-partitions come from any registered
streaming partitioner (`base`, with `base_keys` over its config file).

1. Sub-partitions: `base` at k parts (k = min(p * subparts_per_part, |V|, MAX_SUBPARTS)).
2. Quotient graph, one stream over the on-disk CSR (gnnbench.data.adjacency): W[a, b] = edges
   between sub-partitions a != b, kept dense (k x k int64: 8 MB at the cap of 1024, 2 MB at
   p = 16 with 32 each; its CSR for METIS at most as much again); node weights = sub-partition
   sizes. Edge weights are scaled down if their sum would pass METIS's 32-bit range.
3. METIS k-way (pymetis, seeded with the run's seed) splits the quotient graph into p parts,
   balancing the summed sizes (its default 3% imbalance, over coarse nodes, so a part may end a
   little above: vertex_balance is measured, not promised); node v goes where its sub-partition
   went. A quotient graph without edges is packed largest sub-partition first onto the lightest
   part instead.

Cut-aware refinement between the levels (issue 30; each off at its default in quotient.yaml;
`partitioner=quotient_best` turns them on):
- `subpart_lp_passes`: before the quotient graph, label-propagation passes (the edge-cut rule of
  gnnbench/partition/refine.py at k blocks, blocks up to `subpart_slack` times their mean) turn
  the sub-partitions into tighter clusters, so fewer edges are left for METIS's split of the
  quotient graph to get wrong;
- `quotient_ncuts`: METIS splits the quotient graph that many times and keeps the lowest cut;
- `subpart_fm_passes`: FM passes moving whole sub-partitions on the quotient graph (in memory,
  from its k x k matrix), ranked by gain with a priority queue, rolled back to the best prefix
  (gnnbench/partition/multilevel/fm.py); they also pull METIS's coarse split back under 3% imbalance where
  whole sub-partitions can;
- `node_fm_passes`: the split projected onto the nodes, the same FM kernel moving single nodes,
  one CSR window at a time (|V| owners, p sizes and a window x p connection matrix), finishing
  the rebalancing at node grain.
Neither FM raises the cut of a partition within 3% over the mean (the pair (weight over it, cut)
never rises); `quotient_cut_edges` is the cut after the sub-partition level.

`coarsening: clusters` (`partitioner=quotient_multilevel`) replaces the streaming base, whose k
is capped at MAX_SUBPARTS by the dense matrix, with a multilevel coarsening that scales with the
graph (gnnbench/partition/multilevel/clustering.py, as KaMinPar's): label-propagation clusters of at most
ceil(|V| / (p * subparts_per_part)) nodes over the on-disk CSR (`cluster_passes` passes), their
weighted graph kept as a sparse CSR, coarsened again in memory while it has more than
`coarse_nodes` nodes; METIS splits the coarsest graph; the split is projected back level by
level with `level_fm_passes` FM passes at each (the same kernel as `subpart_fm_passes`, on a
sparse graph), then `node_fm_passes` at the nodes; `vcycles` more cycles each coarsen again
with clusters kept inside the parts (another seed), project the partition up and refine it the
same way on the way back (KaHIP's iterated V-cycles; no cycle moves a node across parts while
coarsening, so each starts from the last cycle's cut). `base`, `base_keys` and the `subpart_*` keys
are not read there. State: O(|V|) (labels, cluster weights, a connection scratch) plus the coarse
graphs, which shrink level by level, and the CSR windows.

State (coarsening: base): the base partitioner's, then O(|V|) (the sub-partition array) plus the k x k matrix and the
CSR windows. `partitioner.chunk_edges` reaches the base; the book's identity holds the base's own
identity and code version (`nested_spec`). The shared refinement post-pass
(`partitioner.refine_passes`, best with `refine_objective=replication`) then moves single nodes
across the coarse boundaries.
Deterministic for a given seed (the base's and METIS's).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numba
import numpy as np

from gnnbench.data.adjacency import DEFAULT_MAX_ENTRIES, adjacency_scope, ensure_adjacency
from gnnbench.data.store import GraphStore
from gnnbench.errors import ConfigError
from gnnbench.partition.base import PartitionResult, partitioner_traits, register_partitioner
from gnnbench.partition.multilevel.clustering import cluster_values, coarsen
from gnnbench.partition.multilevel.contraction import CoarseGraph
from gnnbench.partition.multilevel.fm import refine_graph, refine_nodes, refine_quotient
from gnnbench.partition.refine import refine, slack_balance_bound
from gnnbench.spec_keys import whole_at_least

# Bump when this module's output changes (or partition/multilevel/'s: quotient alone runs it):
# part of every partition book's cache key.
VERSION = "5"  # 2: FM lets an overfull block shed weight to a block it does not touch; 3: clusters;
# 4: a graph within coarse_nodes is its own coarsest level; 5: node FM windows of 1 Mi entries,
# shifted on odd passes, above 4 Mi entries (the same output up to 4 Mi)
# The on-disk CSR's build holds one bucket of rows at a time and reads the edge stream once per
# bucket (gnnbench.data.adjacency): an eighth of the graph's entries (at least 1 Mi, at most the
# default 16 Mi) keeps the bucket out of the multilevel peak on small graphs (67 MB of 94 on the
# 1 M-node RGG) for 8 passes over a stream that is small there; from 128 Mi entries up it builds
# as every node-stream partitioner does.
BUILD_SHARE = 8
MIN_BUILD_ENTRIES = 1 << 20
MAX_SUBPARTS = 1024  # the quotient graph's dense matrix is k^2 int64
METIS_MAX_WEIGHT = 2**31 - 1  # METIS's idx_t: the summed edge weights must fit


@numba.njit(cache=True)
def _add_quotient_edges(nodes, starts, stops, indices, sub, weights):
    """W[sub(v), sub(u)] += 1 for every CSR entry (v, u) crossing two sub-partitions."""
    for i in range(nodes.shape[0]):
        a = sub[nodes[i]]
        for e in range(starts[i], stops[i]):
            b = sub[indices[e]]
            if a != b:
                weights[a, b] += 1


def quotient_weights(store: GraphStore, sub: np.ndarray, k: int) -> np.ndarray:
    """The k x k matrix of edges between sub-partitions (symmetric: the CSR has both ends)."""
    weights = np.zeros((k, k), dtype=np.int64)
    for block in ensure_adjacency(store).blocks("id"):
        _add_quotient_edges(*block.rows, sub, weights)
    return weights


def metis_on_quotient(
    weights: np.ndarray, sizes: np.ndarray, p: int, seed: int, ncuts: int = 1
) -> np.ndarray:
    """METIS k-way of the dense quotient graph into p parts (metis_on_graph); the part of every
    sub-partition."""
    return metis_on_graph(CoarseGraph.from_dense(weights, sizes), p, seed, ncuts)


def metis_on_graph(graph: CoarseGraph, p: int, seed: int, ncuts: int = 1) -> np.ndarray:
    """METIS k-way (pymetis) of a weighted graph held in memory into p parts, the best of
    `ncuts` tries (METIS's own option: each from another seed); the part of every node."""
    node_weights, edge_weights = graph.node_weights, graph.edge_weights
    if p == 1:
        return np.zeros(graph.num_nodes, dtype=np.int64)
    if not len(graph.indices):
        return _pack_largest_first(node_weights, p)  # nothing to cut
    try:
        import pymetis
    except ImportError as exc:
        raise ConfigError(
            "partitioner=quotient: pymetis (>= 2025.2) is not installed (pip install pymetis)"
        ) from exc
    total = int(edge_weights.sum())
    if total > METIS_MAX_WEIGHT:  # keep every edge (weight >= 1), scale the rest down
        scale = -(-total // (METIS_MAX_WEIGHT // 2))
        edge_weights = np.maximum(edge_weights // scale, 1)
    _, membership = pymetis.part_graph(
        p,
        pymetis.CSRAdjacency(graph.indptr, graph.indices),
        vweights=np.maximum(node_weights, 1).tolist(),  # an empty sub-partition still weighs 1
        eweights=edge_weights.tolist(),
        options=pymetis.Options(seed=int(seed), ncuts=ncuts),
    )
    return np.asarray(membership, dtype=np.int64)


def _pack_largest_first(sizes: np.ndarray, p: int) -> np.ndarray:
    part = np.zeros(len(sizes), dtype=np.int64)
    loads = np.zeros(p, dtype=np.int64)
    for index in np.argsort(-sizes, kind="stable"):
        part[index] = int(np.argmin(loads))
        loads[part[index]] += sizes[index]
    return part


def _tighten_subparts(
    store: GraphStore, sub: np.ndarray, k: int, passes: int, slack: float
) -> dict[str, Any]:
    """Label-propagation passes lowering the cut between the k sub-partitions (`sub`, in place),
    each growing up to `slack` times their mean size: fewer edges left between them is less for
    METIS on the quotient graph to get wrong."""
    if not passes:
        return {}
    owner = sub.astype(np.int32)
    stats = refine(store, owner, k, passes, slack=slack)
    sub[:] = owner
    done = sum(key.startswith("refine_moves_") for key in stats)  # it stops at a pass moving none
    return {
        "subpart_lp_cut_0": stats["refine_cut_0"],
        "subpart_lp_cut": stats[f"refine_cut_{done}"],
        "subpart_lp_stream_passes": done,
    }


def _base_spec(base: str, base_keys: Any, chunk_edges: int):
    from gnnbench.partition.spec import SHARED_KEYS, PartitionSpec  # spec imports the registry

    # an unknown name fails in partitioner_traits, in one line
    if base == "quotient" or partitioner_traits(base).in_memory_baseline:
        raise ConfigError(
            f"partitioner.base: expected a streaming partitioner other than quotient, got {base!r}"
        )
    if not isinstance(base_keys, Mapping):
        raise ConfigError(f"partitioner.base_keys: expected a mapping of keys, got {base_keys!r}")
    shared = sorted(set(base_keys) & set(SHARED_KEYS))
    if shared:
        raise ConfigError(
            f"partitioner.base_keys: {', '.join(shared)} is a shared key, set on the partitioner "
            "itself (partitioner.<key>), not on its base"
        )
    return PartitionSpec.defaults(base, **dict(base_keys), chunk_edges=chunk_edges)


def _nested_spec(*, base, base_keys, chunk_edges, **_own):
    """The base partitioner quotient runs, as a spec: its full identity (its config file's
    defaults included) and code version enter quotient's book identity
    (gnnbench/partition/stage/book_identity.py)."""
    return _base_spec(base, base_keys, chunk_edges)


def _vertex_balance_bound(p: int, num_nodes: int, *, node_fm_passes, **_own) -> float | None:
    """With node FM passes (quotient_best, quotient_multilevel): the FM's bound,
    ceil(1.03 |V| / p), the excess over which its passes shed first (a run still over it is
    tagged balance_violation). Without: METIS's 3% over coarse nodes promises nothing at node
    grain, so the shared partitioner.max_vertex_balance applies."""
    if not node_fm_passes:
        return None
    return slack_balance_bound(p, num_nodes)


# warm_up_keys: the JIT warm-up's 256-node graph is under coarse_nodes and its clusters would hold one node:
# these keys make it cluster, coarsen and cycle as a real graph does (gnnbench.partition.stage.runner),
# with at least one level in memory below the disk level: that level's label propagation is
# weighted and its arrays writable, other kernel signatures, which a warm-up that stopped at one
# level (coarse_nodes 16, subparts_per_part 1) left to be compiled inside the measured step.
@register_partitioner(
    "quotient",
    nested_spec=_nested_spec,
    vertex_balance_bound=_vertex_balance_bound,
    warm_up_keys={"coarse_nodes": 2, "subparts_per_part": 4},
)
def quotient(
    store: GraphStore,
    p: int,
    seed: int,
    *,
    coarsening: Literal["base", "clusters"],
    base: str,
    base_keys: Mapping[str, Any],
    subparts_per_part: int,
    cluster_passes: int,
    coarse_nodes: int,
    level_fm_passes: int,
    vcycles: int,
    subpart_lp_passes: int,
    subpart_slack: float,
    quotient_ncuts: int,
    subpart_fm_passes: int,
    node_fm_passes: int,
    chunk_edges: int,
) -> PartitionResult:
    """Sub-partitions from `base` (or label-propagation clusters, level after level), METIS on
    their quotient graph, then FM at every level."""
    spec = _base_spec(base, base_keys, chunk_edges)
    per_part = whole_at_least("partitioner.subparts_per_part", subparts_per_part, 1)
    whole_at_least("partitioner.subpart_lp_passes", subpart_lp_passes, 0)
    slack = subpart_slack
    if isinstance(slack, bool) or not isinstance(slack, int | float) or not slack >= 1:
        raise ConfigError(f"partitioner.subpart_slack: expected a number >= 1, got {slack!r}")
    ncuts = whole_at_least("partitioner.quotient_ncuts", quotient_ncuts, 1)
    subpart_passes = whole_at_least("partitioner.subpart_fm_passes", subpart_fm_passes, 0)
    node_passes = whole_at_least("partitioner.node_fm_passes", node_fm_passes, 0)
    if p == 1:
        return PartitionResult(np.zeros(store.num_nodes, dtype=np.int32), {"passes": 0})
    if coarsening == "clusters":
        multilevel = Multilevel(
            cluster_cap=math.ceil(store.num_nodes / (p * per_part)),
            passes=whole_at_least("partitioner.cluster_passes", cluster_passes, 1),
            coarse_nodes=whole_at_least("partitioner.coarse_nodes", coarse_nodes, 1),
            level_fm_passes=whole_at_least("partitioner.level_fm_passes", level_fm_passes, 0),
            vcycles=whole_at_least("partitioner.vcycles", vcycles, 0),
        )
        return multilevel.partition(store, p, seed, ncuts, node_passes)
    keys = (per_part, subpart_lp_passes, subpart_slack, ncuts, subpart_passes, node_passes)
    return _subpart_quotient(store, p, seed, spec, base, *keys)


def _subpart_quotient(
    store: GraphStore, p: int, seed: int, spec, base: str, per_part: int,
    subpart_lp_passes: int, subpart_slack: float, ncuts: int, subpart_passes: int,
    node_passes: int,
) -> PartitionResult:  # fmt: skip
    """`coarsening: base`: the base's k sub-partitions as the quotient graph's nodes."""
    k = max(1, min(p * per_part, store.num_nodes, MAX_SUBPARTS))
    with adjacency_scope():  # a node-stream base and the quotient stream share one CSR build
        sub_result = spec.run(store, k, seed)
        sub = np.asarray(sub_result.owner, dtype=np.int64)
        if sub.shape != (store.num_nodes,) or (len(sub) and (sub.min() < 0 or sub.max() >= k)):
            raise ValueError(
                f"partitioner.base={base}: its owners are not one part in [0, {k}) a node"
            )
        fm_stats = _tighten_subparts(store, sub, k, subpart_lp_passes, subpart_slack)
        weights = quotient_weights(store, sub, k)
        sizes = np.bincount(sub, minlength=k)
        part = metis_on_quotient(weights, sizes, p, seed, ncuts)
        fm_stats.update(refine_quotient(weights, sizes, part, p, subpart_passes, seed))
        owner = part[sub].astype(np.int32)
        if node_passes:
            fm_stats.update(refine_nodes(store, owner, p, node_passes, seed))
    cut = int(weights[part[:, None] != part[None, :]].sum()) // 2
    refine_streams = fm_stats.get("subpart_lp_stream_passes", 0)
    refine_streams += fm_stats.get("node_fm_stream_passes", 0)
    stats = {
        # + the quotient's stream and the refinements' streams
        "passes": int(sub_result.stats.get("passes", 0)) + 1 + refine_streams,
        "subparts": k,
        "base_passes": int(sub_result.stats.get("passes", 0)),
        "quotient_edges": int(np.count_nonzero(weights)) // 2,
        "quotient_cut_edges": cut,
        "subpart_cut_edges": int(weights.sum()) // 2,
        **fm_stats,
    }
    return PartitionResult(owner, stats)


@dataclass(frozen=True)
class Multilevel:
    """`coarsening: clusters`: label-propagation clusters of at most `cluster_cap` nodes as the
    coarse nodes (gnnbench/partition/multilevel/clustering.py), coarsened again in memory down to about
    `coarse_nodes`, METIS on the coarsest graph, then FM at every level on the way back; each
    of `vcycles` more cycles coarsens inside the parts and refines the same way again."""

    cluster_cap: int
    passes: int
    coarse_nodes: int
    level_fm_passes: int
    vcycles: int

    def partition(
        self, store: GraphStore, p: int, seed: int, ncuts: int, node_passes: int
    ) -> PartitionResult:
        with adjacency_scope():
            adjacency = ensure_adjacency(store, max_entries=build_entries(store))
            streams = adjacency.passes
            levels = coarsen(adjacency, self.cluster_cap, self.passes, self.coarse_nodes, seed)
            coarsest = levels[-1].graph
            part = metis_on_graph(coarsest, p, seed, ncuts)
            stats: dict[str, Any] = {
                "adjacency_build_passes": adjacency.build_passes,
                "cluster_cap": self.cluster_cap,
                "clusters": levels[0].graph.num_nodes,
                "coarse_levels": len(levels),
                "quotient_nodes": coarsest.num_nodes,
                "quotient_edges": len(coarsest.indices) // 2,
                "quotient_cut_edges": coarsest.cut(part),
            }
            del coarsest
            owner = self._uncoarsen(store, levels, part, p, seed, node_passes, stats, "")
            for cycle in range(1, self.vcycles + 1):
                del levels  # the last cycle's levels are done with: not held beside the new ones
                levels = coarsen(
                    adjacency, self.cluster_cap, self.passes, self.coarse_nodes, seed + cycle,
                    block=owner,
                )  # fmt: skip
                # the partition of each coarser level: its members' part (no |V| int64 copy)
                part = cluster_values(levels[0].label, owner, levels[0].graph.num_nodes)
                del owner  # its part is in `part`: not held beside the cycle's new owner
                part = part.astype(np.int64)
                for level in levels[1:]:
                    part = cluster_values(level.label, part, level.graph.num_nodes)
                tag = f"vcycle_{cycle}_"
                owner = self._uncoarsen(store, levels, part, p, seed, node_passes, stats, tag)
            # node-stream passes plus the CSR build's edge passes, as LDG and HeiStream count them
            stats["passes"] = adjacency.passes - streams + adjacency.build_passes
        return PartitionResult(owner, stats)

    def _uncoarsen(self, store, levels, part, p, seed, node_passes, stats, tag) -> np.ndarray:
        """The coarsest level's `part` projected back level by level (`levels` is emptied), FM at
        each, then at the nodes; the owner array (stats gain `<tag>level_<i>_fm_*` and `<tag>node_fm_*`)."""
        for depth in range(len(levels) - 1, -1, -1):
            level_stats = refine_graph(
                levels[depth].graph, part, p, self.level_fm_passes, seed, f"level_{depth + 1}_fm"
            )
            stats.update({tag + key: value for key, value in level_stats.items()})
            if depth:
                part = part[levels[depth].label]
        owner = part.astype(np.int32)[levels[0].label]  # one |V| array, int32 (not int64 first)
        levels.clear()  # consumed: the node-level FM below runs without the coarse levels
        del part
        if node_passes:
            node_stats = refine_nodes(store, owner, p, node_passes, seed)
            stats.update({tag + key: value for key, value in node_stats.items()})
        return owner


def build_entries(store: GraphStore) -> int:
    """The CSR build's bucket for the multilevel coarsening: 1/BUILD_SHARE of the entries,
    within [MIN_BUILD_ENTRIES, DEFAULT_MAX_ENTRIES]."""
    share = -(-2 * store.num_edges // BUILD_SHARE)
    return max(MIN_BUILD_ENTRIES, min(DEFAULT_MAX_ENTRIES, share))
