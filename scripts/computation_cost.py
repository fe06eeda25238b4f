"""CM-GCN's computation cost, cohesive vs random mini-batches -> docs/computation_cost.md (+ .csv).

    python scripts/computation_cost.py            # the sweep (experiment=computation_cost), table
    python scripts/computation_cost.py --no-sweep # only rebuild the table from the MLflow store

`computation_cost` is the number of (node, layer) pairs in the K-hop computational graphs of one
epoch's batches (inputs included), as the trainer logs it; CM-GCN Fig. 6 reports cohesive batches
cutting it by 46-56%.
"""

from __future__ import annotations

from gnnbench.experiments import computation_cost
from gnnbench.experiments.experiment_docs import sweep, table_arguments


def main() -> None:
    args = table_arguments(__doc__)
    if not args.no_sweep:
        sweep("computation_cost", tracking_uri=args.tracking_uri)
    computation_cost.write_doc(args.tracking_uri)


if __name__ == "__main__":
    main()
