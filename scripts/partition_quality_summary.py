"""Append SPRING-vs-others replication factor ratios to docs/partition_quality.md (from its CSV).

python scripts/partition_quality_summary.py     # after python -m gnnbench report ... --out docs/partition_quality.md
"""

from __future__ import annotations

from gnnbench.experiments.partition_quality_summary import write_summary

if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()  # --help, nothing run
    write_summary()
