"""The GraphSAGE settings the framework comparison shares (kept in
gnnbench/experiments/framework_parity.py), and the call of the DGL driver.

bench/test_framework_epoch.py (speed) and scripts/framework_parity.py (accuracy) train the same
pipeline in gnnbench, PyG and DGL; DGL runs in its own environment (its own torch) through
bench/framework_epoch_dgl.py, which prints one JSON line of results.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gnnbench.experiments.framework_parity import BATCH_SIZE, DROPOUT, FANOUTS, HIDDEN, LR

DGL_DRIVER = Path(__file__).resolve().parent / "framework_epoch_dgl.py"


def run_dgl_driver(
    env_dir: Path, store_path: Path, *, epochs: int, threads: int, seed: int,
    extra: Sequence[str] = (),
) -> dict[str, Any]:  # fmt: skip
    """The driver's result (epoch_s, epoch_cpu_s, and test_f1_micro with --evaluate) for the
    shared settings, run by the DGL environment under `env_dir`."""
    command = [str(Path(env_dir) / "bin" / "python"), str(DGL_DRIVER), "--store", str(store_path),
               "--epochs", str(epochs), "--fanouts", *map(str, FANOUTS),
               "--batch-size", str(BATCH_SIZE), "--hidden", str(HIDDEN),
               "--dropout", str(DROPOUT), "--lr", str(LR), "--threads", str(threads),
               "--seed", str(seed), *extra]  # fmt: skip
    env = dict(os.environ, DGLBACKEND="pytorch", PYTHONNOUSERSITE="1")
    env.pop("PYTHONPATH", None)  # gnnbench's environment must not leak into DGL's
    completed = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if completed.returncode != 0:
        raise RuntimeError(f"DGL driver exited with {completed.returncode}:\n{completed.stderr}")
    return json.loads(completed.stdout.strip().splitlines()[-1])
