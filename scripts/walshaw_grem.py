"""GREM's 2-way edge cut on the Walshaw archive graphs against the best-known cuts.

    python scripts/walshaw_grem.py      # GNNBENCH_RAW_DIR must hold walshaw/graphs and walshaw/partitions

Writes docs/walshaw_grem.md: for every graph, the number of cut edges of GREM at p=2 (through the
same partition stage as every run: fresh process, memray) for chunk_fraction 0.1 and 0.01, the cut
of the archive's best-known partition (5% imbalance allowed) on the same graph, and their ratio.
"""

from __future__ import annotations

import sys

from gnnbench.commands import without_arguments
from gnnbench.experiments.walshaw import write_grem_doc

if __name__ == "__main__":
    without_arguments(__doc__)  # --help prints the usage and runs nothing
    sys.exit(write_grem_doc())
