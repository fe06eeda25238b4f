"""`python -m gnnbench.report`: the report of a sweep (the latest by default); see gnnbench.track.report."""

from __future__ import annotations

import sys

from gnnbench.track.report.cli import main as _main


def main(argv: list[str] | None = None) -> int:
    """Sweep mode unless `--out` asks for the experiment table."""
    return _main(argv, sweep_by_default=True)


if __name__ == "__main__":
    sys.exit(main())
