"""DistDGL's METIS partitioning (`dgl.distributed.partition_graph`), run in DGL's own environment.

DGL 2.1.0 cannot share gnnbench's torch, so `distdgl_driver.py` runs under the interpreter of
`$GNNBENCH_HOME/envs/distdgl` (made by `python -m gnnbench setup distdgl_metis`) and measures
itself with memray; its peak, RSS and time replace the stage's measurement of this idle caller.
The driver runs twice (docs/design.md, "Metrics"): on the structure and the training mask DGL
balances, the work every partitioner does (`partition_*`, and the owners), then with the node
features, labels and masks a DistDGL user loads (`partition_with_features_*`). DGL's node
assignment is read back into an owner per node, and from there the partition goes through the
same GNN-ready step and metrics as every other partitioner.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np

from gnnbench.data.store import GraphStore
from gnnbench.partition.base import PartitionResult, register_partitioner
from gnnbench.partition.baselines import distdgl_driver
from gnnbench.process import lifecycle
from gnnbench.process.atomic import scratch_directory
from gnnbench.process.memory_limit import (
    current_memory_limit,
    is_out_of_memory,
    out_of_memory,
)
from gnnbench.setup.baseline_envs import distdgl_environment, distdgl_python

# Bump when this module's output changes: part of every partition book's cache key.
VERSION = "2"  # 2: structure-only partition_* and partition_with_features_* (one meter)

NAME = "distdgl_metis"


def _result(
    completed: subprocess.CompletedProcess, out: Path, oom_kills_before: int | None = None
) -> dict:
    """The driver's result.json; a crash without one is out of memory only with evidence (a cap,
    or the cgroup's OOM-kill counter: lifecycle.signal_death), else Killed by its signal."""
    result_file = out / "result.json"
    if result_file.is_file():
        result = json.loads(result_file.read_text())
        if "error" not in result:
            return result
        if is_out_of_memory(
            RuntimeError(result["error"]), capped=current_memory_limit() is not None
        ):
            raise out_of_memory(NAME, current_memory_limit(), result["peak_mb"], result["rss_mb"])
        raise RuntimeError(f"{NAME}: DGL failed: {result['error']}")
    died = lifecycle.signal_death(
        f"{NAME}: the DGL driver", completed.returncode, current_memory_limit() is not None,
        oom_kills_before,
    )  # fmt: skip
    if died is not None:
        raise died
    tail = "\n".join(completed.stderr.strip().splitlines()[-15:])
    raise RuntimeError(f"{NAME}: driver exited with {completed.returncode}:\n{tail}")


# warm_up: nothing to compile in this process, the driver imports DGL itself;
# partition_with_features_*: docs/design.md
@register_partitioner(NAME, warm_up=False, in_memory_baseline=True, with_features_figures=True)
def distdgl_metis(store: GraphStore, p: int, seed: int) -> PartitionResult:
    """Owner per node from DistDGL's METIS partition_graph on the structure, measured in its own
    process, and the same with node features measured beside it."""
    python = distdgl_python()
    result, owner = _drive(python, store, p, seed, features=False)
    with_features, owner_with_features = _drive(python, store, p, seed, features=True)
    measured = {
        "partition_peak_mb": result["peak_mb"],
        "partition_rss_mb": result["rss_mb"],
        "partition_time_s": result["seconds"],
        "partition_with_features_peak_mb": with_features["peak_mb"],
        "partition_with_features_rss_mb": with_features["rss_mb"],
        "partition_with_features_time_s": with_features["seconds"],
    }
    same = int(np.array_equal(owner, owner_with_features))  # node data should not move METIS
    return PartitionResult(owner, {"passes": 1, "with_features_same_owner": same}, measured)


def _drive(python: Path, store: GraphStore, p: int, seed: int, features: bool):
    """One driver run: its result.json and the owners it wrote."""
    with scratch_directory("distdgl-metis") as scratch:
        command = [str(python), distdgl_driver.__file__, "--store", str(store.path),
                   "--parts", str(p), "--seed", str(seed), "--out", scratch,
                   *(["--features"] if features else [])]  # fmt: skip
        env = distdgl_environment()
        oom_kills = lifecycle.oom_kill_count()
        completed = subprocess.run(
            command, capture_output=True, text=True, env=env,
            preexec_fn=lifecycle.tied_to_parent(),  # dies with the partition process
        )  # fmt: skip
        result = _result(completed, Path(scratch), oom_kills)
        return result, np.load(Path(scratch) / "owner.npy")
