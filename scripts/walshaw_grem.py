"""GREM's 2-way edge cut on the Walshaw archive graphs against the best-known cuts.

    python scripts/walshaw_grem.py      # GNNBENCH_RAW_DIR must hold walshaw/graphs and walshaw/partitions

Writes docs/walshaw_grem.md: for every graph, the number of cut edges of GREM at p=2 (through the
same partition stage as every run: fresh process, memray) for chunk_fraction 0.1 and 0.01, the cut
of the archive's best-known partition (5% imbalance allowed) on the same graph, and their ratio.
"""

from __future__ import annotations

import sys

from gnnbench.experiments.walshaw import write_grem_doc

if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()  # --help, nothing run
    sys.exit(write_grem_doc())
