"""Peak memory of SPRING against the in-memory METIS baselines -> docs/baseline_memory.md (+ .csv).

    python -m gnnbench setup all           # once: torch-sparse with 64-bit METIS, DistDGL's env
    python scripts/baseline_memory.py      # both sweeps below, then the table
    python scripts/baseline_memory.py --no-sweep   # only rebuild the table from the MLflow store

Sweeps `experiment=baseline_memory` (every shared feature graph + a generated 10 M-edge graph,
spring / metis / pyg_metis / distdgl_metis, p=4) and `experiment=baseline_memory_cap` (the same
partitioners on the generated graph under `partitioner.memory_limit_gb`), then tabulates each
job's memray heap peak and the ratio SPRING / baseline, read back from the MLflow store: the
structure-only peak every partitioner reports, and for pyg_metis and distdgl_metis also the peak
with node features (docs/design.md, "Metrics").
"""

from __future__ import annotations

from gnnbench.experiments import baseline_memory
from gnnbench.experiments.experiment_docs import sweep, table_arguments


def main() -> None:
    args = table_arguments(__doc__)
    if not args.no_sweep:
        sweep("baseline_memory", tracking_uri=args.tracking_uri)
        sweep("baseline_memory_cap", tracking_uri=args.tracking_uri, may_fail=True)
    baseline_memory.write_doc(args.tracking_uri)


if __name__ == "__main__":
    main()
