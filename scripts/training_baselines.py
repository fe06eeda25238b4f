"""Training systems side by side -> docs/training_baselines.md (+ .csv, + the curves' PNG).

    python scripts/training_baselines.py --run            # the sweep, export its runs, the doc
    python scripts/training_baselines.py --tracking-uri URI   # export a store's runs, the doc
    python scripts/training_baselines.py                  # the doc from the committed CSV alone

`experiment=training_baselines_{gnnbench,distdgl,pyg}` (gnnbench/conf/experiment/), three sweeps
into one MLflow experiment: gnnbench's model_avg and grad_avg on SPRING and quotient_multilevel,
DistDGL on its METIS and on SPRING, PyG's two recipes; p = num_gpus = 2. It needs
`make setup-baselines` (DistDGL's environment and torch-sparse). `--run` resumes: finished jobs are
skipped, so a partial sweep can be continued; extra overrides after `--` narrow it
(`-- dataset=cora,amazon_cs seed=0`).
"""

from __future__ import annotations

import argparse

from gnnbench.experiments import training_baselines
from gnnbench.experiments.experiment_docs import sweep
from gnnbench.paths import REPO_ROOT


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", action="store_true", help="run the sweep first")
    parser.add_argument(
        "--tracking-uri", help="the store to export (default with --run: the repo's mlflow.db)"
    )
    parser.add_argument("overrides", nargs="*", help="overrides narrowing the sweep (after --)")
    args = parser.parse_args()
    if args.run:
        args.tracking_uri = args.tracking_uri or f"sqlite:///{REPO_ROOT / 'mlflow.db'}"
        sweep(*training_baselines.CONFIGS, tracking_uri=args.tracking_uri, may_fail=True,
              overrides=args.overrides)  # fmt: skip
    if args.tracking_uri:
        frame = training_baselines.export(args.tracking_uri)
    else:
        frame = training_baselines.read()
    training_baselines.write_doc(frame)


if __name__ == "__main__":
    main()
