"""Compare SPRING's two volume caps on the shared graphs and write docs/spring_volume_cap.md.

    python scripts/spring_volume_cap.py            # GNNBENCH_RAW_DIR must hold the shared datasets

SDT-GNN's code caps clusters at 0.1 |E_directed| / p; 2PS-L caps them at 2|E| / p. "Better" is the
lower replication factor among results that keep SPRING's own balance promise (vertex balance within
BALANCE_LIMIT); the partitioner config defaults to the cap that is better on most cases.
"""

from __future__ import annotations

import sys

import numpy as np

from gnnbench.commands import without_arguments
from gnnbench.experiments.spring_volume_cap import write_doc

if __name__ == "__main__":
    without_arguments(__doc__)  # --help prints the usage and runs nothing
    np.seterr(all="ignore")
    sys.exit(write_doc())
