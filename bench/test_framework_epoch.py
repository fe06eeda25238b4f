"""GraphSAGE epoch time of gnnbench against PyG's NeighborLoader and DGL's NeighborSampler.

The same store, model (2 mean SAGEConv layers of 256, ReLU, dropout 0.5), fanouts 25/10, batch
512, Adam 0.01 and thread count, in interleaved rounds (gnnbench, PyG, DGL, then again), so the
load of a shared machine falls on all three alike. Each round trains a fresh model; a
framework's figure is the median over rounds of its mean epoch time. Prints
`epoch ratio gnnbench/dgl=<x> gnnbench/pyg=<y>` (wall clock), the same ratios of CPU time per
epoch (what a loaded machine disturbs least: one thread's CPU time is its work, whoever else
runs), and a table; records, does not gate.

PyG needs torch-sparse (`python -m gnnbench setup pyg_metis`), DGL its own environment
(`python -m gnnbench setup distdgl_metis`); a framework that is not set up is left out, and the
test skips when neither is. amazon_cs by default; cora under CI=true.

GNNBENCH_BENCH_DATASET=<gnnbench/conf/dataset/NAME.yaml's NAME> picks another graph;
GNNBENCH_BENCH_TRAIN_NODES=<n> trains every framework on the same n training nodes of it (a
seeded sample of its split, in a store that hard-links every other file): on synthetic_large
(700 k training nodes, ~1,370 batches an epoch) a round of the three frameworks would take hours on this machine, while the
per-batch cost a sample measures (sampling and gathering over the whole 1 M-node graph) is the
same.

    GNNBENCH_BENCH_DATASET=synthetic_large GNNBENCH_BENCH_TRAIN_NODES=51200 \
        python -m pytest bench/test_framework_epoch.py -m slow -s
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

import numpy as np
import pytest
import torch

from gnnbench.data.datasets import prepare_dataset
from gnnbench.data.store import GraphStore
from gnnbench.process.atomic import atomic_directory
from gnnbench.setup.baseline_envs import distdgl_env, torch_sparse_with_metis
from gnnbench.train.runner import run_training
from gnnbench.train.spec import spec_from_conf

from .conftest import dataset_config
from .dgl_driver import BATCH_SIZE, DROPOUT, FANOUTS, HIDDEN, LR, run_dgl_driver

pytestmark = pytest.mark.slow

DATASET = os.environ.get("GNNBENCH_BENCH_DATASET") or (
    "cora" if os.environ.get("CI") == "true" else "amazon_cs"
)
TRAIN_NODES = int(os.environ.get("GNNBENCH_BENCH_TRAIN_NODES") or 0)  # 0: the whole split
EPOCHS = 3
ROUNDS = 2 if os.environ.get("CI") == "true" else 3
# Torch threads of every framework: all cores by default; GNNBENCH_BENCH_THREADS=1 compares them
# per core (on a shared machine, one thread each is what the load leaves alike to all three).
THREADS = int(os.environ.get("GNNBENCH_BENCH_THREADS") or os.cpu_count() or 1)
# Resolved at import, before bench/conftest.py points GNNBENCH_HOME at the bench cache: the DGL
# environment is the user's (`setup distdgl_metis` under their GNNBENCH_HOME), not rebuilt there.
DGL_ENV = distdgl_env()


def gnnbench_run(store: GraphStore, epochs: int, seed: int) -> tuple[float, float]:
    """One centralized run: its epoch_time_s (compute, not evaluation) and the run's CPU seconds."""
    model = {"name": "sage", "layers": 2, "hidden": HIDDEN, "dropout": DROPOUT}
    train = {"mode": "centralized", "epochs": epochs, "fanouts": FANOUTS, "batch_size": BATCH_SIZE,
             "lr": LR, "eval_every": epochs, "timeout_s": 600}  # fmt: skip
    spec = spec_from_conf(train, model, num_gpus=1, sync_interval=1, seed=seed)
    cpu = time.process_time()
    wall = run_training(store_path=store.path, book_path=None, spec=spec).epoch_time_s
    return wall, time.process_time() - cpu


def gnnbench_epoch_s(store: GraphStore, threads: int, seed: int) -> tuple[float, float]:
    """gnnbench's mean epoch time and CPU seconds per epoch: a run of EPOCHS epochs less a run of
    one, so loading and the one evaluation each run ends with cancel out (after a warm-up run:
    the first run in a process also pays one-time imports and kernel loading)."""
    torch.set_num_threads(threads)
    wall, cpu = gnnbench_run(store, EPOCHS, seed)
    return wall, (cpu - gnnbench_run(store, 1, seed)[1]) / (EPOCHS - 1)


def pyg_epoch_s(store: GraphStore, threads: int, seed: int) -> tuple[float, float]:
    """PyG's documented mini-batch recipe: NeighborLoader subgraphs through SAGEConv layers,
    the loss on the first batch_size (seed) rows; mean wall and CPU seconds of EPOCHS epochs."""
    import torch.nn.functional as F
    from torch_geometric.data import Data
    from torch_geometric.loader import NeighborLoader
    from torch_geometric.nn import SAGEConv

    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    edges = torch.from_numpy(store.edges().astype(np.int64)).t()
    data = Data(
        x=torch.from_numpy(np.ascontiguousarray(store.features(), dtype=np.float32)),
        y=torch.from_numpy(store.labels().astype(np.int64)),
        edge_index=torch.cat([edges, edges.flip(0)], dim=1),
        num_nodes=store.num_nodes,
    )
    train_ids = torch.from_numpy(store.split()["train"].astype(np.int64))
    loader = NeighborLoader(
        data, num_neighbors=FANOUTS, batch_size=BATCH_SIZE, input_nodes=train_ids, shuffle=True
    )
    convs = torch.nn.ModuleList(
        [SAGEConv(store.feature_dim, HIDDEN), SAGEConv(HIDDEN, store.num_classes)]
    )
    optimiser = torch.optim.Adam(convs.parameters(), lr=LR)
    seconds, cpu_seconds = [], []
    for _ in range(EPOCHS):
        start, cpu = time.perf_counter(), time.process_time()
        for batch in loader:
            h = F.dropout(convs[0](batch.x, batch.edge_index).relu(), DROPOUT, training=True)
            out = convs[1](h, batch.edge_index)[: batch.batch_size]
            loss = F.cross_entropy(out, batch.y[: batch.batch_size])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        seconds.append(time.perf_counter() - start)
        cpu_seconds.append(time.process_time() - cpu)
    return statistics.fmean(seconds), statistics.fmean(cpu_seconds)


def dgl_epoch_s(store: GraphStore, threads: int, seed: int) -> tuple[float, float]:
    """DGL 2.1's NeighborSampler and SAGEConv in the distdgl environment (bench driver)."""
    result = run_dgl_driver(DGL_ENV, store.path, epochs=EPOCHS, threads=threads, seed=seed)
    return statistics.fmean(result["epoch_s"]), statistics.fmean(result["epoch_cpu_s"])


def with_train_sample(store: GraphStore, train_nodes: int) -> GraphStore:
    """The store with its training split cut to a seeded sample of `train_nodes` (0 or more than
    it has: the store itself); every other file is a hard link to the original."""
    split = store.split()
    if not train_nodes or train_nodes >= len(split["train"]):
        return store
    dest = store.path.parent / f"{store.path.name}-train{train_nodes}"
    if not (dest / "meta.json").is_file():
        with atomic_directory(dest) as tmp:  # a concurrent bench writing it too: one wins
            for source in store.path.iterdir():
                if source.is_file() and source.name not in ("split.npz", "meta.json"):
                    os.link(source, tmp / source.name)
            chosen = np.random.default_rng(0).choice(split["train"], train_nodes, replace=False)
            np.savez(tmp / "split.npz", **{**split, "train": np.sort(chosen)})
            meta = {**store.meta, "name": f"{store.name}-train{train_nodes}"}
            (tmp / "meta.json").write_text(json.dumps(meta, indent=2))
    return GraphStore(dest)


def available_frameworks() -> dict[str, str]:
    """Baseline name -> why it is missing (empty string when it can run)."""
    missing = {"pyg": "", "dgl": ""}
    if not torch_sparse_with_metis():
        missing["pyg"] = "torch-sparse not built (python -m gnnbench setup pyg_metis)"
    if not (DGL_ENV / ".complete").is_file():
        missing["dgl"] = f"no DGL environment at {DGL_ENV} (setup distdgl_metis)"
    return missing


def test_framework_epoch_time(benchmark):
    missing = available_frameworks()
    runners = {"gnnbench": gnnbench_epoch_s, "dgl": dgl_epoch_s, "pyg": pyg_epoch_s}
    runners = {name: run for name, run in runners.items() if not missing.get(name)}
    if len(runners) == 1:
        pytest.skip("; ".join(missing.values()))
    store = with_train_sample(prepare_dataset(dataset_config(DATASET)), TRAIN_NODES)
    threads = THREADS

    def interleaved() -> dict[str, list[tuple[float, float]]]:
        rounds: dict[str, list[tuple[float, float]]] = {name: [] for name in runners}
        for seed in range(ROUNDS):
            for name, run in runners.items():
                rounds[name].append(run(store, threads, seed))
        return rounds

    if "gnnbench" in runners:  # one-time costs, kept out of the CPU difference of the rounds
        torch.set_num_threads(threads)
        gnnbench_run(store, 1, 0)
    loads = [os.getloadavg()[0]]  # the machine's share of others' work, stated with the figures
    rounds = benchmark.pedantic(interleaved, rounds=1, iterations=1)
    loads.append(os.getloadavg()[0])
    sample = f", {len(store.split()['train'])} training nodes" if TRAIN_NODES else ""
    print(f"\n{DATASET}{sample}, {threads} threads, {ROUNDS} rounds of {EPOCHS} epochs, "
          f"load {loads[0]:.1f} -> {loads[1]:.1f}")  # fmt: skip
    for column, label in ((0, "epoch ratio"), (1, "cpu ratio")):
        seconds = {name: [pair[column] for pair in pairs] for name, pairs in rounds.items()}
        ratios = print_table(seconds, label)
        benchmark.extra_info.update(
            {f"{label.split()[0]}_gnnbench_over_{name}": ratio for name, ratio in ratios.items()}
        )
    benchmark.extra_info.update(
        dataset=DATASET, train_nodes=TRAIN_NODES, threads=threads, rounds=rounds, loads=loads
    )
    for name, why in missing.items():
        if why:
            print(f"{name:<10} {'not run':>15}  {why}", file=sys.stdout)
    assert all(s > 0 for pairs in rounds.values() for pair in pairs for s in pair)


def print_table(rounds: dict[str, list[float]], label: str) -> dict[str, float]:
    """Print `<label> gnnbench/<name>=<ratio> ...` of the medians and a table; the ratios."""
    median = {name: statistics.median(seconds) for name, seconds in rounds.items()}
    ratios = {name: median["gnnbench"] / median[name] for name in median if name != "gnnbench"}
    print(f"{label} " + " ".join(f"gnnbench/{name}={r:.2f}" for name, r in ratios.items()))
    print(f"{'framework':<10} {'median s/epoch':>15}  rounds")
    for name, seconds in rounds.items():
        print(f"{name:<10} {median[name]:>15.3f}  " + " ".join(f"{s:.3f}" for s in seconds))
    return ratios
