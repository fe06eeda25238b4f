"""Stage 2: run a partitioner in a fresh process under memray and write its PartitionBook.

The parent (`run_partition_stage`) reuses a complete book when one exists for the same dataset
content, algorithm, parameters, p and seed; otherwise it starts `python -m gnnbench.partition.stage.runner`,
which warms the JIT cache on a tiny graph (so compilation stays out of the measurement), then tracks
the algorithm and the GNN-ready step with two memray trackers, and renames the book into place.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from gnnbench.data.store import GraphStore
from gnnbench.errors import GnnbenchError, OutOfMemory, error_record, from_record
from gnnbench.partition.base import algorithm_version, partitioner_traits
from gnnbench.partition.refine import warm_up as warm_up_refine
from gnnbench.partition.spec import PartitionSpec
from gnnbench.partition.stage.book import (
    FORMAT_VERSION,
    PartitionBook,
    manifest,
    open_verified,
)
from gnnbench.partition.stage.book_identity import book_identity, book_path
from gnnbench.partition.stage.gnn_ready import build_partitions
from gnnbench.process import lifecycle
from gnnbench.process.atomic import atomic_directory, remove_stale_in, scratch_directory
from gnnbench.process.memory_limit import (
    apply_memory_limit,
    is_out_of_memory,
    memory_limit_bytes,
    out_of_memory,
    peak_of,
    uncapped,
)
from gnnbench.process.peak_rss import PeakRss
from gnnbench.spec_keys import num_parts


def run_partition_stage(
    store: GraphStore, *, partitioner: PartitionSpec, p: int, seed: int, node_data: bool = True
) -> tuple[PartitionBook, bool]:
    """Return the book for this configuration and whether it came from the cache.

    `node_data=False` (partition-only runs) skips copying features and labels into the partitions,
    which for feature-rich graphs is most of the book's size on disk; a full book serves it too.
    """
    num_parts(p, num_nodes=store.num_nodes, dataset=store.name)
    full_book = book_path(store.name, store.fingerprint, partitioner, p, seed)
    dest = (
        full_book
        if node_data
        else book_path(store.name, store.fingerprint, partitioner, p, seed, False)
    )
    capped = partitioner.memory_limit_gb is not None
    if capped:  # the question is whether it runs within the cap: always run, into a book of its own
        dest = dest.with_name(dest.name + "-capped")
        shutil.rmtree(dest, ignore_errors=True)
    for candidate in () if capped else (full_book, dest):
        book = open_verified(candidate)  # a book failing its check is removed and recomputed
        if book is not None:
            return book, True
    with scratch_directory("partition") as scratch:
        error_file = Path(scratch) / "error.txt"
        spec_file = Path(scratch) / "partitioner.pickle"  # the parsed spec, not a dict to parse
        spec_file.write_bytes(pickle.dumps(partitioner))
        command = [
            sys.executable, "-m", "gnnbench.partition.stage.runner",
            "--store", str(store.path), "--partitioner", str(spec_file),
            "--p", str(p), "--seed", str(seed), "--dest", str(dest), "--error-file", str(error_file),
            *([] if node_data else ["--structure-only"]),
        ]  # fmt: skip
        # glibc reads MALLOC_ARENA_MAX at start-up: fewer arenas hold less memory against a cap
        env = {**os.environ, "MALLOC_ARENA_MAX": "2"} if capped else None
        oom_kills = lifecycle.oom_kill_count()  # evidence for _raise_for_crash
        try:
            completed = subprocess.run(
                command,
                capture_output=True,
                text=True,
                env=env,
                preexec_fn=lifecycle.tied_to_parent(),  # no orphan when this process is SIGKILLed
            )
        finally:  # a child killed by a signal (or by run() when this one is interrupted) left
            # its CSR scratch beside the store and its unfinished book: gone with it, not later
            remove_stale_in(store.path.parent, dest.parent)
        if completed.returncode != 0:
            if error_file.is_file():
                raise from_record(json.loads(error_file.read_text()))
            _raise_for_crash(completed, partitioner, oom_kills)
    return PartitionBook(dest), False


def _raise_for_crash(
    completed: subprocess.CompletedProcess,
    partitioner: PartitionSpec,
    oom_kills_before: int | None = None,
) -> None:
    """A partition process that left no error record: Killed or OutOfMemory (only with evidence,
    see lifecycle.signal_death) when a signal ended it, else its stderr's tail."""
    died = lifecycle.signal_death(
        f"the partition process for {partitioner.name}",
        completed.returncode,
        capped=partitioner.memory_limit_gb is not None,
        oom_kills_before=oom_kills_before,
    )
    if died is not None:
        raise died
    tail = "\n".join(completed.stderr.strip().splitlines()[-15:])
    raise RuntimeError(f"partition process exited with {completed.returncode}:\n{tail}")


def _tiny_store(directory: Path) -> GraphStore:
    """A 256-node random graph with features and labels, for compiling every kernel once."""
    from gnnbench.data.builder import GraphStoreBuilder

    rng = np.random.default_rng(0)
    with GraphStoreBuilder(directory / "tiny", "warmup", "warmup") as builder:
        builder.set_num_nodes(256)
        builder.add_edges(rng.integers(0, 256, size=(2048, 2)), origin="warmup")
        builder.set_features(rng.random((256, 4), dtype=np.float32))
        builder.set_labels(rng.integers(0, 3, size=256))
        builder.finish()
    return GraphStore(directory / "tiny")


def _warm_up(partitioner: PartitionSpec, p: int, seed: int) -> None:
    """The partitioner and its refinement on the tiny graph, with the keys it asks for there
    (`warm_up_keys`: quotient's multilevel would skip its coarsening on 256 nodes)."""
    keys = partitioner_traits(partitioner.name).warm_up_keys
    if keys:
        partitioner = PartitionSpec.from_config({**partitioner.to_config(), **keys})
    with scratch_directory("warm-up") as scratch:
        store = _tiny_store(Path(scratch))
        tiny_p = min(p, 256)  # the real p (up to the tiny graph's size): its bitset word width
        result = partitioner.run_refined(store, tiny_p, seed)  # the CSR build of a refinement
        out = Path(scratch) / "book"
        out.mkdir()
        build_partitions(store, result.owner, tiny_p, out, partitioner.hops)


def tracked(tracker_file: Path, work, name: str = "", limit_bytes: int | None = None):
    """Run `work()` under a memray tracker; return its result, heap peak (MB), resident peak
    (MB, since the step's start: gnnbench.process.peak_rss, docs/design.md "Metrics") and seconds.

    A failed allocation becomes `OutOfMemory` carrying the peaks the work reached.
    """
    import memray

    started = time.perf_counter()
    rss = PeakRss()
    try:
        with rss, memray.Tracker(tracker_file):
            result = work()
    except OutOfMemory:
        raise
    except BaseException as exc:
        if is_out_of_memory(exc, capped=limit_bytes is not None):
            raise out_of_memory(name, limit_bytes, peak_of(tracker_file), rss.peak_mb) from exc
        raise
    seconds = time.perf_counter() - started
    return result, peak_of(tracker_file), rss.peak_mb, seconds


def _flamegraph(tracker_file: Path, html: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "memray", "flamegraph", "-f", "-o", str(html), str(tracker_file)],
        check=True,
        capture_output=True,
        preexec_fn=uncapped,  # rendering is not the partitioner's memory
    )
    tracker_file.unlink()


def _check_owner(owner: np.ndarray, num_nodes: int, p: int, name: str) -> np.ndarray:
    owner = np.asarray(owner)
    if owner.shape != (num_nodes,) or (num_nodes and (owner.min() < 0 or owner.max() >= p)):
        raise RuntimeError(f"partitioner {name} returned an invalid owner array")
    return owner.astype(np.int32, copy=False)


def partition_into(
    store: GraphStore,
    *,
    partitioner: PartitionSpec,
    p: int,
    seed: int,
    dest: Path,
    node_data: bool = True,
) -> None:
    """The child's work: measured algorithm, measured GNN-ready step, atomic book."""
    name, hops = partitioner.name, partitioner.hops
    limit_bytes = memory_limit_bytes(partitioner.memory_limit_gb)
    _compile_unmeasured(partitioner, p, seed)
    import memray  # noqa: F401  (the meter loads before the cap: a tiny cap must fail the partitioner, not the import)

    apply_memory_limit(limit_bytes)
    with atomic_directory(dest) as tmp:
        load = os.getloadavg()[0]  # what else the machine ran around the measured step
        result, peak_mb, rss_mb, seconds = tracked(
            tmp / "partition.memray",
            lambda: partitioner.run_refined(store, p, seed),
            name,
            limit_bytes,
        )
        owner = _check_owner(result.owner, store.num_nodes, p, name)
        np.save(tmp / "owner.npy", owner)
        metrics, ready_peak_mb, ready_rss_mb, ready_seconds = tracked(
            tmp / "gnn_ready.memray",
            lambda: build_partitions(
                store,
                owner,
                p,
                tmp,
                hops,
                partitioner.chunk_edges,
                node_data,
                partitioner.feature_rows,
            ),
            f"{name} (GNN-ready step)",
            limit_bytes,
        )
        metrics.update(
            partition_time_s=seconds,
            partition_peak_mb=peak_mb,
            partition_rss_mb=rss_mb,
            partition_load_1m=max(load, os.getloadavg()[0]),
            gnn_ready_time_s=ready_seconds,
            gnn_ready_peak_mb=ready_peak_mb,
            gnn_ready_rss_mb=ready_rss_mb,
            passes=int(result.stats.pop("passes", 0)),
        )
        metrics.update(result.measured)  # a baseline measured in its own process reports its own
        meta = _book_meta(store, partitioner, p, seed, node_data)
        _seal(tmp, {**meta, "metrics": metrics, "stats": result.stats})


def _book_meta(
    store: GraphStore, partitioner: PartitionSpec, p: int, seed: int, node_data: bool
) -> dict:
    """What a book records of how it was made (its metrics and stats are added by the caller)."""
    return {
        "format_version": FORMAT_VERSION,
        "algorithm": partitioner.name,
        "code_version": algorithm_version(partitioner.name),
        "parameters": book_identity(partitioner),
        "p": p,
        "seed": seed,
        "hops": partitioner.hops,
        "node_data": node_data,
        "feature_rows": partitioner.feature_rows if node_data else None,
        "dataset": store.name,
        "dataset_fingerprint": store.fingerprint,
        "store": str(store.path),
    }


def _compile_unmeasured(partitioner: PartitionSpec, p: int, seed: int) -> None:
    """The only work outside the measurement: JIT compilation, on a tiny graph, never on the
    store (docs/design.md, "Metrics"). Out-of-process baselines have no JIT to warm."""
    if partitioner_traits(partitioner.name).warm_up:
        _warm_up(partitioner, p, seed)
    if partitioner.refine_passes:
        warm_up_refine()


def _seal(book_dir: Path, meta: dict) -> None:
    """The flamegraphs rendered, then meta.json last, with the manifest (sizes and checksums of
    every other file) that is checked before the book is reused."""
    _flamegraph(book_dir / "partition.memray", book_dir / "partition_flamegraph.html")
    _flamegraph(book_dir / "gnn_ready.memray", book_dir / "gnn_ready_flamegraph.html")
    meta = {**meta, "files": manifest(book_dir)}
    (book_dir / "meta.json").write_text(json.dumps(meta, indent=2))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--store", required=True)
    parser.add_argument("--partitioner", required=True, help="a pickled PartitionSpec's file")
    parser.add_argument("--p", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dest", required=True)
    parser.add_argument("--error-file", required=True)
    parser.add_argument(
        "--structure-only", action="store_true", help="no features/labels per partition"
    )
    args = parser.parse_args(argv)
    try:
        store = GraphStore(Path(args.store))
        num_parts(args.p, num_nodes=store.num_nodes, dataset=store.name)
        partition_into(
            store,
            partitioner=_spec(Path(args.partitioner)),
            p=args.p,
            seed=args.seed,
            dest=Path(args.dest),
            node_data=not args.structure_only,
        )
    except GnnbenchError as exc:
        Path(args.error_file).write_text(json.dumps(error_record(exc)))
        return 2
    return 0


def _spec(path: Path) -> PartitionSpec:
    """The PartitionSpec the parent parsed and checked (a file in its scratch directory)."""
    spec = pickle.loads(path.read_bytes())
    if not isinstance(spec, PartitionSpec):
        raise TypeError(f"{path}: expected a pickled PartitionSpec, got {type(spec).__name__}")
    return spec


if __name__ == "__main__":
    sys.exit(main())
