"""Training modes on the same partitions -> docs/training_modes.md (+ .csv).

    python scripts/training_modes.py            # the three sweeps, then the tables
    python scripts/training_modes.py --no-sweep # only rebuild the tables from the MLflow store

`experiment=training_modes`: cora, amazon_cs, coauthor_cs with SPRING books (p=4), 2 workers,
centralized / model_avg / grad_avg, seeds 0-2: mean test micro-F1 per mode and its gap to
centralized (target: within 0.02), 20 epochs; `experiment=training_modes_long`: the same on
amazon_cs for 60 epochs. `experiment=sync_interval`: model_avg on amazon_cs (60 epochs) averaging
every 1, 2, 5, 10, 20 epochs: F1 and total synchronisation time.
"""

from __future__ import annotations

from gnnbench.experiments import training_modes
from gnnbench.experiments.experiment_docs import sweep, table_arguments


def main() -> None:
    args = table_arguments(__doc__)
    if not args.no_sweep:
        sweep(
            "training_modes", "training_modes_long", "sync_interval", tracking_uri=args.tracking_uri
        )
    training_modes.write_doc(args.tracking_uri)


if __name__ == "__main__":
    main()
