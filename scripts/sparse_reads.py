"""Sparse gathers of feature rows each way, in three states of the page cache (docs/training_speed.md
section 8): through a MADV_RANDOM map of the window, by a pread a row, and as FeatureRows chooses.

    python scripts/sparse_reads.py [--rows 2000000] [--share 0.004] [--gathers 100] [--dir DIR]

Writes a rows x 128 float16 file (512 MB at the default) into DIR (default: the temporary
directory; removed after), then for each state (the file dropped from the page cache and read
back whole sequentially, or whole by random preads, or left dropped) times `gathers` sorted random
gathers of `share` of its rows. Run it alone on the machine: it times reads from the disk.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gnnbench.experiments.sparse_reads import measure, table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--share", type=float, default=0.004)
    parser.add_argument("--gathers", type=int, default=100)
    parser.add_argument("--dir", type=Path)
    args = parser.parse_args()
    print(table(measure(args.rows, args.share, args.gathers, args.dir), args.rows, args.share,
                args.gathers))  # fmt: skip


if __name__ == "__main__":
    main()
