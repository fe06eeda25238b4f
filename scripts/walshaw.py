"""Every partitioner's 2-way edge cut on the Walshaw archive, over the best-known cut.

    python scripts/walshaw.py      # GNNBENCH_RAW_DIR must hold walshaw/graphs and walshaw/partitions
    python scripts/walshaw.py --configs quotient_multilevel   # these labels only, merged into the CSV
    python scripts/walshaw.py --table-only                    # docs/walshaw.md from the CSV alone

Writes docs/walshaw.md: for every graph of the archive and every configuration below, the cut
edges at p = 2 (seed 0) divided by the cut of the archive's best-known partition (which allows 5%
imbalance), and each configuration's worst vertex balance. Partitions are computed in process
(the same partitioner and refinement code as the stage's, so the same owners; time and memory
are the stage's business and are not reported here). Edge partitioners are reduced to owners the
way the stage does (gnnbench/partition/streaming/edge_partition.py), so their cut is the owners' cut.
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from gnnbench.experiments.walshaw import CONFIGS, CSV, DOC, document, measure


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--table-only", action="store_true", help="regenerate the doc from the CSV")
    parser.add_argument(
        "--configs", help="comma-separated labels of CONFIGS to measure (default all)"
    )
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    labels = args.configs.split(",") if args.configs else None
    unknown = sorted(set(labels or ()) - set(CONFIGS))
    if unknown:
        parser.error(f"--configs: unknown {unknown}; expected labels of {list(CONFIGS)}")
    frame = pd.read_csv(CSV) if args.table_only else measure(labels)
    DOC.write_text(document(frame))
    return 0


if __name__ == "__main__":
    sys.exit(main())
