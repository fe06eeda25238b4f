"""Run every fault test and write docs/reliability.md: each bad input or fault, expected, observed.

    python scripts/fault_matrix.py                 # every test marked @pytest.mark.fault
    python scripts/fault_matrix.py -k signals      # a subset (the doc then lists only those)

A fault test carries `@pytest.mark.fault("<category>: <case>")`; its docstring says what must
happen. The table's "observed" column is the test's outcome on this machine (passed, or the first
line of the failure, or why it was skipped), so the document cannot claim more than the tests show.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gnnbench.experiments.fault_matrix import DOC, write_matrix


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default=None, help="pytest -k expression (a subset)")
    parser.add_argument("--out", type=Path, default=DOC)
    args = parser.parse_args(argv)
    return write_matrix(args.k, args.out)


if __name__ == "__main__":
    sys.exit(main())
