"""Accuracy parity and epoch time of gnnbench, PyG and DGL -> docs/training_speed.md (section).

    .venv/bin/python scripts/framework_parity.py [--dataset amazon_cs] [--epochs 20]
        [--seeds 0 1 2] [--threads 1]

Trains GraphSAGE 2x256 (mean, ReLU, dropout 0.5), fanouts 25/10, batch 512, Adam 0.01 for
--epochs epochs, per seed in turn: gnnbench (centralized), PyG (NeighborLoader + SAGEConv), DGL
with its own SAGEConv initialisation and DGL with PyG's (bench/framework_epoch_dgl.py in the
distdgl environment). Each scores the last model's test micro-F1 with every neighbour and
records its mean epoch time (sampling, gathering, forward, backward, step), so the times are
interleaved rounds too. Rows are saved as measured (.benchmarks/framework_parity/<dataset>.json,
a rerun resumes; --fresh starts over, --table-only trains nothing); the table replaces the
generated section of the doc.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from gnnbench.errors import ConfigError
from gnnbench.experiments import framework_parity as parity
from gnnbench.paths import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT))  # bench/ runs DGL in its own environment
from bench.dgl_driver import run_dgl_driver  # noqa: E402


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="amazon_cs")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--doc", type=Path, default=REPO_ROOT / "docs" / "training_speed.md")
    parser.add_argument("--fresh", action="store_true", help="ignore rows saved by a former run")
    parser.add_argument("--table-only", action="store_true", help="the doc from saved rows only")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    store = parity.load_store(args.dataset)
    available, missing = parity.runners(args.threads, run_dgl_driver)
    saved = parity.RESULTS / f"{args.dataset}-e{args.epochs}.json"
    rows = parity.measure(store, args, available, saved)
    if not any(row["framework"] == "gnnbench" for row in rows):
        raise ConfigError(
            f"{saved}: no gnnbench rows for seeds {args.seeds} (run without --table-only)"
        )
    lines = parity.section(rows, args, argv, missing)
    parity.write_section(args.doc, lines)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
