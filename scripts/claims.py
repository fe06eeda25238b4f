"""What the papers claim against what gnnbench measures -> docs/claims.md (+ docs/claims/*.png).

    python scripts/claims.py --run                 # every claim's sweep, then the table
    python scripts/claims.py --run --only 1,2,7    # some claims' sweeps and exports, then the whole table
    python scripts/claims.py --tracking-uri URI    # export the store's runs, then the table
    python scripts/claims.py                       # the table from the exported runs alone

Each claim has its experiment configs (gnnbench/conf/experiment/claim_<n>_*.yaml, MLflow
experiment `claim_<n>`); --run runs them as `python -m gnnbench -m experiment=<config>` (resume
skips the jobs the store already holds). The table reads every FINISHED job of `claim_<n>` (the
newest run per job, exported to docs/claims/runs/claim_<n>.csv, which is committed) and judges it
against the paper's figure with the thresholds stated beside each claim (one module per claim in
gnnbench/experiments/claims/papers/): holds, holds partly, refuted, or not testable here; a claim
without runs is `open`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from gnnbench.errors import GnnbenchError
from gnnbench.experiments.claims import (
    DOC,
    export_runs,
    read_runs,
    run_claims,
    selected,
    write_claims,
)
from gnnbench.paths import REPO_ROOT


def arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", action="store_true", help="run the claims' sweeps first")
    parser.add_argument("--only", help="claim numbers to run, e.g. 1,2,7 (the table has all)")
    parser.add_argument(
        "--tracking-uri",
        help="read the runs from this store and export them to docs/claims/runs/ (default: read "
        f"the exported runs; with --run: sqlite:///{REPO_ROOT / 'mlflow.db'})",
    )
    parser.add_argument(
        "--merge", action="store_true",
        help="with --tracking-uri: keep the committed runs of jobs the store has none of (a claim "
        "run over several sittings, each on a fresh store)",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, default=DOC, help="the Markdown file to write")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    try:
        claims = selected(args.only)
        if args.run:
            args.tracking_uri = args.tracking_uri or f"sqlite:///{REPO_ROOT / 'mlflow.db'}"
            run_claims(claims, args.tracking_uri)
        folder = args.out.parent / "claims" / "runs"
        only = claims if args.only else None  # the other claims' exported runs are kept
        runs = (
            export_runs(args.tracking_uri, folder, only, args.merge)
            if args.tracking_uri
            else read_runs(folder)
        )
    except GnnbenchError as exc:
        print(f"claims.py: error: {exc}", file=sys.stderr)
        return 2
    for claim, verdict in write_claims(runs, args.out):
        print(f"claim {claim.number}: {verdict.verdict}: {verdict.ours}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
