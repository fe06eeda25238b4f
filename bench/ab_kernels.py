"""The kernels `make bench-compare` times, and which source paths select them (one place).

It is also the one definition of the work the committed-ratio speed gates time (bench/test_*.py
build their kernels here), so a gate over its limit can be timed A/B against the code that wrote
its baseline, on the same graph (bench/conftest.py GateRecorder.paired_speed).

This file is run as a script by bench/compare.py, once per side, with that side's tree first on
PYTHONPATH: it imports gnnbench only inside functions, so the same file drives an older tree.
Protocol: after the warm-up it writes one JSON line {"edges": the graph's edge count, "warm":
{kernel: CPU seconds of one warm call}}; then
for each line "<kernel> <calls>" read on stdin it runs that kernel `calls` times and writes the
CPU and the wall-clock seconds they took together.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

# Timed on every compare: one partitioner per family (high-degree replicated, streaming vertex,
# SPRING), the GNN-ready step and one epoch of neighbour sampling.
DEFAULT_KERNELS = ("hdrf", "ldg", "spring", "gnn_ready", "sampler")
# A change to gnnbench/partition/algorithms/<name>.py adds partitioner <name>; these paths add
# the kernels listed (shared code the partitioners or the other kernels run).
SOURCE_KERNELS = {
    "gnnbench/partition/stage/gnn_ready.py": ("gnn_ready",),
    "gnnbench/partition/stage/gnn_ready_kernels.py": ("gnn_ready",),
    "gnnbench/train/sampler.py": ("sampler",),
    "gnnbench/partition/streaming/edge_partition.py": ("hdrf", "dbh", "grid", "greedy", "twops"),
    "gnnbench/partition/streaming/hashing.py": ("hash", "hdrf", "dbh", "grid"),
    "gnnbench/partition/refine.py": ("refine-edge_cut", "refine-replication"),
    "gnnbench/data/store.py": DEFAULT_KERNELS,
    "gnnbench/data/features.py": ("reader",),
    "gnnbench/data/npy_file.py": ("reader",),
}
ALGORITHMS_DIR = "gnnbench/partition/algorithms/"
REFINE_PREFIX = "refine-"  # refine-<objective>: one refinement pass
GRAPH_EDGES = 1_000_000
P = 8
SAMPLER_FANOUTS = (25, 10)
SAMPLER_BATCH = 512
# The reader kernel's batches: papers_scale's 128 float16 columns, and batches small enough that
# each reads 2% of the rows, as a 10 M-node batch reads 1.5% (sparse: one pread a row)
READER_COLUMNS = 128
READER_BATCH = 32
READER_FANOUTS = (10, 5)
READER_BATCHES = 200


def kernels_for(changed_paths: Iterable[str]) -> list[str]:
    """DEFAULT_KERNELS plus those the changed paths select, in a stable order. The in-memory
    baselines (METIS, KaHIP, KaMinPar, PyG's and DistDGL's METIS) are never selected, as the
    speed gates skip them: their time is a pinned library's, and one KaHIP call on the 1 M-edge
    graph took ~16 s CPU beside a test run, ~19 of a compare's minutes over 12 rounds
    (`--kernels` still runs them)."""
    selected = list(DEFAULT_KERNELS)
    for path in changed_paths:
        if path.startswith(ALGORITHMS_DIR) and path.endswith(".py"):
            extra = (Path(path).stem,)
        else:
            extra = SOURCE_KERNELS.get(path, ())
        selected += [
            name
            for name in extra
            if name not in selected and name != "__init__" and not _in_memory_baseline(name)
        ]
    return selected


def _in_memory_baseline(name: str) -> bool:
    """Whether `name` is a registered in-memory baseline in this tree (the compare's own)."""
    from gnnbench.partition.base import PARTITIONERS, partitioner_traits

    return name in PARTITIONERS.names() and partitioner_traits(name).in_memory_baseline


def open_graph(home: Path, num_edges: int = GRAPH_EDGES):
    """The generated power-law graph of power_law_config, in the shared cache `home`; a
    side whose GraphStore format differs gets a copy of its own under `home`."""
    from gnnbench.data.datasets import prepare_dataset
    from gnnbench.errors import DataError

    from_conf = power_law_config(num_edges)
    os.environ["GNNBENCH_HOME"] = str(home)
    try:
        return prepare_dataset(from_conf)
    except DataError:
        os.environ["GNNBENCH_HOME"] = str(home / f"side-{os.getpid()}")
        return prepare_dataset(from_conf)


def power_law_config(
    num_edges: int, num_nodes: int | None = None, feature_dim: int = 8, name: str | None = None
) -> dict:
    """A synthetic contextual SBM with power-law degrees and about `num_edges` edges: the graphs
    of every speed gate and of both sides of an A/B (gnnbench/conf/dataset/synthetic.yaml below,
    as the side's tree has it)."""
    from omegaconf import OmegaConf

    from gnnbench import paths

    # this script also runs on a base tree from before conf/ moved into the package
    conf_dir = getattr(paths, "CONF_DIR", paths.REPO_ROOT / "conf")
    num_nodes = num_nodes or max(1000, num_edges // 10)
    config = OmegaConf.merge(
        OmegaConf.load(conf_dir / "dataset" / "synthetic.yaml"),
        dict(
            name=name or f"powerlaw-{num_edges}",
            num_nodes=num_nodes,
            avg_degree=2 * num_edges / num_nodes * 1.02,  # a little over, for duplicates
            num_classes=16,
            feature_dim=feature_dim,
            seed=7,
        ),
    )
    return OmegaConf.to_container(config, resolve=True)


def partitioner_kernel(store, name: str) -> Callable[[], object]:
    from gnnbench.partition.base import PARTITIONERS
    from gnnbench.partition.spec import PartitionSpec

    partition_fn = PARTITIONERS.get(name)
    keywords = PartitionSpec.defaults(name).kwargs()
    if hasattr(partition_fn, "prepare_store"):  # trees where the adjacency is built outside
        partition_fn.prepare_store(store)
    return lambda: partition_fn(store, P, 0, **keywords)


def gnn_ready_kernel(store) -> Callable[[], object]:
    """The structure-only GNN-ready step over contiguous blocks of node ids (the same owners on
    both sides, whatever their partitioners do)."""
    import numpy as np

    try:
        from gnnbench.partition.stage.gnn_ready import build_partitions
    except ImportError:  # trees before partition/ was laid out by phase
        from gnnbench.partition.gnn_ready import build_partitions

    owner = (np.arange(store.num_nodes, dtype=np.int64) * P // store.num_nodes).astype(np.int32)
    # Written to memory where there is a tmpfs: the step's own CPU, not the disk's writeback, is
    # what is compared (on disk its system time swung +-10% between identical runs at load 18).
    scratch = "/dev/shm" if Path("/dev/shm").is_dir() else None

    def build():
        out = Path(tempfile.mkdtemp(prefix="ab-gnn-ready-", dir=scratch))
        try:
            build_partitions(store, owner, P, out, 1, 1 << 20, node_data=False)
        finally:
            shutil.rmtree(out)

    return build


def refine_kernel(store, objective: str, cleanup: contextlib.ExitStack) -> Callable[[], object]:
    """One refinement pass (partitioner.refine_passes=1) from hash's owners. The store's CSR is
    built by the first call and reused by the next (the pass alone is timed; the stage times the
    build with the partitioner): each call runs in a context of its own where an adjacency_scope
    stays open until `cleanup` closes, so the partitioner kernels beside it still build theirs."""
    import contextvars

    import numpy as np

    from gnnbench.partition.refine import refine
    from gnnbench.partition.spec import PartitionSpec

    start = PartitionSpec.defaults("hash").run(store, P, 0).owner.astype(np.int32)
    context = contextvars.copy_context()
    with contextlib.suppress(ImportError):  # trees before the scope rebuilt the CSR per call
        from gnnbench.data.adjacency import adjacency_scope

        scope = adjacency_scope()
        context.run(scope.__enter__)
        cleanup.callback(context.run, scope.__exit__, None, None, None)
    return lambda: context.run(refine, store, start.copy(), P, 1, objective)


def sampler_kernel(store) -> Callable[[], object]:
    """One epoch's sampling: every training node in batches of 512, fanouts 25, 10."""
    from gnnbench.train.sampler import NeighbourSampler, batch_seed

    indptr, indices = store.csr()
    train = store.split()["train"]
    sampler = NeighbourSampler(indptr, indices, SAMPLER_FANOUTS)

    def epoch():
        for batch, start in enumerate(range(0, len(train), SAMPLER_BATCH)):
            sampler.sample(train[start : start + SAMPLER_BATCH], batch_seed(0, 0, 0, batch))

    return epoch


def reader_kernel(store, cleanup: contextlib.ExitStack) -> Callable[[], object]:
    """Feature reads as a trainer makes them: READER_BATCHES batches of training nodes (sampled
    once, outside the timed call), each batch's rows gathered through gnnbench's reader
    (FeatureRows) from a file of READER_COLUMNS float16 columns per node of the graph (25.6 MB
    at 1 M edges; the same seeded rows on both sides), warm in the page cache."""
    import numpy as np

    from gnnbench.data.features import FeatureRows
    from gnnbench.train.sampler import NeighbourSampler, batch_seed

    folder = Path(tempfile.mkdtemp(prefix="ab-reader-"))
    cleanup.callback(shutil.rmtree, folder, True)
    path = folder / "feat.npy"
    rng = np.random.default_rng(0)
    np.save(path, rng.standard_normal((store.num_nodes, READER_COLUMNS), dtype=np.float32)
            .astype(np.float16))  # fmt: skip
    indptr, indices = store.csr()
    train = store.split()["train"]
    sampler = NeighbourSampler(indptr, indices, READER_FANOUTS)
    starts = range(0, min(len(train), READER_BATCH * READER_BATCHES), READER_BATCH)
    batches = [
        sampler.sample(train[start : start + READER_BATCH], batch_seed(0, 0, 0, batch)).n_id
        for batch, start in enumerate(starts)
    ]
    rows = FeatureRows(path)

    def epoch():
        for n_id in batches:
            rows[n_id]

    return epoch


def build_kernels(
    store, names: Iterable[str], cleanup: contextlib.ExitStack
) -> dict[str, Callable[[], object]]:
    """The runnable kernels among `names` in this tree (a partitioner it lacks, or one that runs
    in another interpreter, is left out)."""
    from gnnbench.partition.base import PARTITIONERS

    special = {"gnn_ready": gnn_ready_kernel, "sampler": sampler_kernel}
    kernels = {}
    for name in names:
        if name in special:
            kernels[name] = special[name](store)
        elif name == "reader":
            kernels[name] = reader_kernel(store, cleanup)
        elif name.startswith(REFINE_PREFIX):
            kernels[name] = refine_kernel(store, name.removeprefix(REFINE_PREFIX), cleanup)
        elif name in PARTITIONERS.names():
            if not _runs_in_this_process(name):
                # an out-of-process baseline (distdgl_metis): its work runs in the baseline's own
                # interpreter, the same on both sides, and this process's CPU clock cannot see it
                print(
                    f"ab_kernels: {name} not timed: it runs outside this process", file=sys.stderr
                )
                continue
            kernels[name] = partitioner_kernel(store, name)
    return kernels


def _runs_in_this_process(name: str) -> bool:
    """Its trait `warm_up` (an attribute of its function in trees before PartitionerTraits)."""
    from gnnbench.partition import base

    if hasattr(base, "partitioner_traits"):
        return base.partitioner_traits(name).warm_up
    return getattr(base.PARTITIONERS.get(name), "warm_up", True)


def serve(home: Path, names: list[str], num_edges: int = GRAPH_EDGES) -> None:
    """Warm up (compile) every kernel, announce them, then time one call per name on stdin."""
    reply = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # whatever the library prints goes to stderr, never into the protocol
    store = open_graph(home, num_edges)
    with contextlib.ExitStack() as cleanup:  # what the kernels built (a refine kernel's CSR)
        _serve(reply, store.num_edges, build_kernels(store, names, cleanup))


def _serve(reply, num_edges: int, kernels: dict[str, Callable[[], object]]) -> None:
    warm = {}
    for name, kernel in kernels.items():
        kernel()  # compiles
        warm[name] = timed(kernel, 1)[0]
    reply.write(json.dumps({"edges": num_edges, "warm": warm}) + "\n")
    for line in sys.stdin:
        name, calls = line.split()
        cpu, wall = timed(kernels[name], int(calls))
        reply.write(f"{cpu!r} {wall!r}\n")


def timed(kernel: Callable[[], object], calls: int) -> tuple[float, float]:
    """(CPU, wall) seconds of `calls` calls. CPU time counts the child processes a kernel waited
    for: pyg_metis partitions in one, and its own CPU read 2.0 s of a call's 10.7 (wall 11.1)."""
    cpu, wall = _cpu_seconds(), time.perf_counter()
    for _ in range(calls):
        kernel()
    return _cpu_seconds() - cpu, time.perf_counter() - wall


def _cpu_seconds() -> float:
    """User + system seconds of this process (all threads) and of its waited-for children."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


if __name__ == "__main__":
    serve(Path(sys.argv[1]), sys.argv[2].split(","), *map(int, sys.argv[3:4]))
