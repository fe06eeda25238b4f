"""Copy vs shared feature rows on a generated graph: the disk and the time each costs.

    python scripts/feature_rows.py [--nodes 1000000] [--features 128] [--p 8] [--dtype float32]

Prepares the contextual DC-SBM (mean degree 10) with and without features (the import's heap
peak shows whether the features streamed), builds an LDG book that copies the feature rows and
one that shares the store's, and prints for each: the GNN-ready step's time, the book's bytes on
disk, and the time to gather the features of random batches of rows (--batch-rows, about what a
2-layer GraphSAGE batch of 512 seeds with fanouts 25, 10 reads) through
`PartitionBook.load(i).features`. Timings depend on the machine's
load: the line printed first says what it was.
"""

from __future__ import annotations

import argparse

from gnnbench.experiments.feature_rows import compare


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=128)
    parser.add_argument("--p", type=int, default=8)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--batch-rows", type=int, default=100_000)
    parser.add_argument("--batches", type=int, default=16)
    args = parser.parse_args()
    compare(args.nodes, args.features, args.p, args.dtype, args.batch_rows, args.batches)


if __name__ == "__main__":
    main()
