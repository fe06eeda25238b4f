"""Every partitioner against METIS and KaMinPar on every shared feature graph -> docs/partition_quality.md.

    python scripts/partition_quality_kway.py                # run the missing rows, then the section
    python scripts/partition_quality_kway.py --table-only   # the section from the committed CSV

What runs and how it is measured: gnnbench/experiments/kway_quality.py.
"""

from __future__ import annotations

import argparse

from gnnbench.experiments import kway_quality


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--table-only", action="store_true", help="only rewrite the doc section")
    parser.add_argument("--configs", nargs="*", help="labels to run (default: all)")
    args = parser.parse_args(argv)
    if not args.table_only:
        kway_quality.run_missing(labels=args.configs)
    kway_quality.table_only()
    print(f"wrote {kway_quality.DOC}")


if __name__ == "__main__":
    main()
