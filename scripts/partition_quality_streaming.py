"""Streaming partition quality against METIS (issue 16): restreaming, refinement, HeiStream.

    GNNBENCH_HOME=/tmp/q python scripts/partition_quality_streaming.py            # run + write
    python scripts/partition_quality_streaming.py --table-only                     # from the CSV

Every configuration below on every dataset at p = 4, 8, 16 (seed 0) through the real partition
stage (fresh process, memray, structure-only books), one job at a time. Rows go to
docs/partition_quality_streaming.csv (rows already there are not re-run); the section
"Streaming against METIS" of docs/partition_quality.md is rewritten from it: the table, and per
cell the best streaming configuration with vertex_balance <= 1.10 as ratios to METIS.
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from gnnbench.experiments import streaming_side_studies as side
from gnnbench.experiments.streaming_configs import default_labels
from gnnbench.experiments.streaming_quality import CSV, run_missing
from gnnbench.paths import REPO_ROOT


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--table-only", action="store_true", help="only rewrite the doc section")
    parser.add_argument("--peak-edges", type=int, default=0, help="also run the memory runs")
    parser.add_argument("--walshaw", action="store_true", help="also re-run the Walshaw repair")
    parser.add_argument("--configs", nargs="*", default=None, help="labels to run (default all)")
    args = parser.parse_args(argv)
    runs = pd.read_csv(CSV) if args.table_only else run_missing(args.configs or default_labels())
    if args.walshaw:
        side.walshaw_repair()
    if args.peak_edges:
        sys.path.insert(0, str(REPO_ROOT))  # bench/ builds the generated graph
        from bench.conftest import make_power_law_store

        side.peak_runs(make_power_law_store(args.peak_edges))
    side.write_doc(runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
