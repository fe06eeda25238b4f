"""Whether torchrun started this process, read from its environment alone (no torch import).

Under torchrun every rank runs the whole command: rank 0 keeps the records (the MLflow runs, the
sweep's parent, resume decisions) and prepares the data; the other ranks only train.
"""

from __future__ import annotations

import os

TORCHRUN_VARIABLES = ("RANK", "WORLD_SIZE", "MASTER_ADDR")


def under_torchrun() -> bool:
    return all(name in os.environ for name in TORCHRUN_VARIABLES)


def torchrun_rank() -> int | None:
    """This process's rank when torchrun started it, else None."""
    return int(os.environ["RANK"]) if under_torchrun() else None


def training_ranks(num_gpus: int) -> int:
    """How many ranks train the job: torchrun's WORLD_SIZE when it launched this process (its
    ranks are the workers), else num_gpus (gnnbench spawns that many). The one rule p=auto, the
    launcher and the checks read."""
    return int(os.environ["WORLD_SIZE"]) if under_torchrun() else num_gpus
