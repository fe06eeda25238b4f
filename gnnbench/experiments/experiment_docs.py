"""What the experiment table docs share (scripts/baseline_memory.py, computation_cost.py,
training_modes.py): their command line, the sweeps they run, and writing a doc with its CSV."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from gnnbench.paths import REPO_ROOT
from gnnbench.process.atomic import atomic_write_bytes


def table_arguments(description: str | None) -> argparse.Namespace:
    """--no-sweep (only rebuild the tables) and --tracking-uri (the repo's mlflow.db)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--no-sweep", action="store_true", help="only rebuild the tables")
    parser.add_argument("--tracking-uri", default=f"sqlite:///{REPO_ROOT / 'mlflow.db'}")
    return parser.parse_args()


def sweep(
    *experiments: str, tracking_uri: str, may_fail: bool = False, overrides: Sequence[str] = ()
) -> None:
    """`python -m gnnbench -m experiment=<name> [overrides]` for each, logged to `tracking_uri`
    (the store the doc is then read from; a resumed sweep skips finished jobs).

    `may_fail`: a sweep with failed jobs (a memory cap) is reported and the next one runs;
    otherwise it raises.
    """
    for experiment in experiments:
        command = [sys.executable, "-m", "gnnbench", "-m", f"experiment={experiment}", *overrides]
        command.append(f"tracking.uri={tracking_uri}")
        print("$", " ".join(command[1:]), flush=True)
        status = subprocess.run(command, cwd=REPO_ROOT, check=not may_fail).returncode
        if status:
            print(f"experiment={experiment} exited {status}", file=sys.stderr, flush=True)


def write_table_doc(doc: Path, lines: list[str], frame: pd.DataFrame) -> None:
    """The markdown doc and, beside it, the runs it was built from as CSV (each written whole)."""
    atomic_write_bytes(doc, "\n".join(lines).encode())
    atomic_write_bytes(doc.with_suffix(".csv"), frame.to_csv(index=False).encode())
    print(f"wrote {doc}")
