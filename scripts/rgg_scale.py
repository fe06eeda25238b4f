"""Partition quality and memory at scale on the random geometric graph -> docs/rgg_scale.md (+ .csv).

    python scripts/rgg_scale.py                        # 1 M and 10 M nodes (about 10 M, 100 M edges)
    python scripts/rgg_scale.py --nodes 100000000      # about 1 B edges (hours, ~40 GB of disk)
    python scripts/rgg_scale.py --no-sweep             # only rebuild the doc (CSV + store)
    python scripts/rgg_scale.py --nodes 10000000 --partitioners metis,kaminpar,ldg   # a subset

Per size, `python -m gnnbench -m experiment=rgg_scale dataset.num_nodes=N` (every partitioner of
its sweep under partitioner.memory_limit_gb=16; one that does not fit ends FAILED out of memory,
so the sweep's exit status is not 0), then KaMinPar's terapart context, a key of its own (when
--partitioners leaves kaminpar out, not). A resumed sweep skips finished jobs. The doc is built
from the committed docs/rgg_scale.csv with the store's runs on top (a run replaces the row of
its size, configuration and p), so a subset rerun keeps the other rows. Sizes in --not-run are
listed in the doc with the reason.
"""

from __future__ import annotations

import argparse

from gnnbench.experiments import rgg_scale
from gnnbench.experiments.experiment_docs import sweep
from gnnbench.paths import REPO_ROOT


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=float, nargs="*", default=[1e6, 1e7])
    parser.add_argument("--no-sweep", action="store_true", help="only rebuild the doc")
    parser.add_argument("--tracking-uri", default=f"sqlite:///{REPO_ROOT / 'mlflow.db'}")
    parser.add_argument("--not-run", nargs="*", default=[], metavar="NODES=REASON")
    parser.add_argument("--partitioners", help="comma-separated (default: the experiment's sweep)")
    args = parser.parse_args()
    for nodes in [] if args.no_sweep else map(int, args.nodes):
        size = [f"dataset.num_nodes={nodes}"]
        chosen = [f"partitioner={args.partitioners}"] if args.partitioners else []
        sweep(
            rgg_scale.EXPERIMENT,
            tracking_uri=args.tracking_uri,
            may_fail=True,
            overrides=[*size, *chosen],
        )
        if args.partitioners and "kaminpar" not in args.partitioners.split(","):
            continue
        terapart = ["partitioner=kaminpar", "partitioner.context=terapart"]
        sweep(
            rgg_scale.EXPERIMENT,
            tracking_uri=args.tracking_uri,
            may_fail=True,
            overrides=[*size, *terapart],
        )
    reasons = dict(value.split("=", 1) for value in args.not_run)
    rgg_scale.write_doc(args.tracking_uri, {int(float(k)): v for k, v in reasons.items()})


if __name__ == "__main__":
    main()
