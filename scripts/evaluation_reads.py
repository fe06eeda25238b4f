"""Time one layer-wise evaluation of a book cold and warm, with what it read (issue 46, item 4).

    python scripts/evaluation_reads.py STORE BOOK                  # GraphSAGE, fanouts 15 10
    PYTHONPATH=<other checkout> python scripts/evaluation_reads.py STORE BOOK   # that revision

STORE is a GraphStore folder ($GNNBENCH_HOME/graphs/...), BOOK a partition book of it
($GNNBENCH_HOME/partitions/...). Run it alone on the machine: it times reads from the disk.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from pathlib import Path

from gnnbench.experiments.evaluation_reads import measure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("book", type=Path)
    parser.add_argument("--fanouts", type=int, nargs="+", default=[15, 10])
    parser.add_argument("--eval-batch-size", type=int, default=2048)
    args = parser.parse_args()
    figures = measure(args.store, args.book, args.fanouts, args.eval_batch_size)
    print(json.dumps({**dataclasses.asdict(figures), "load_average": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()
