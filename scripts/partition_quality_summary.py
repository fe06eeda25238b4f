"""Append SPRING-vs-others replication factor ratios to docs/partition_quality.md (from its CSV).

python scripts/partition_quality_summary.py     # after python -m gnnbench report ... --out docs/partition_quality.md
"""

from __future__ import annotations

from gnnbench.commands import without_arguments
from gnnbench.experiments.partition_quality_summary import write_summary

if __name__ == "__main__":
    without_arguments(__doc__)  # --help prints the usage and runs nothing
    write_summary()
