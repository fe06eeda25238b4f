"""This machine's cold storage read rates where the stores live -> docs/disk_limits.md.

    python scripts/disk_limits.py                       # a 2 GiB probe under $GNNBENCH_HOME/graphs
    python scripts/disk_limits.py --folder /mnt/nvme --probe-mb 8192 --reads 50000

Run it alone on the machine: another job's reads share the disk.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from gnnbench.errors import GnnbenchError
from gnnbench.experiments import disk_limits
from gnnbench.paths import gnnbench_home
from gnnbench.process.disk_rates import measure


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, default=gnnbench_home() / "graphs")
    parser.add_argument("--probe-mb", type=int, default=2048)
    parser.add_argument("--reads", type=int, default=20000)
    parser.add_argument("--no-doc", action="store_true", help="print the rates only")
    args = parser.parse_args()
    try:
        rates = measure(args.folder, args.probe_mb, args.reads)
    except GnnbenchError as exc:
        print(f"disk_limits: {exc}", file=sys.stderr)
        return 2
    print(rates)
    if not args.no_doc:
        shown = ["python", "scripts/disk_limits.py", *sys.argv[1:]]
        disk_limits.write_doc(rates, " ".join(map(shlex.quote, shown)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
