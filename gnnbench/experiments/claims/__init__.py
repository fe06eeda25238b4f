"""What the papers claim against what gnnbench measures: docs/claims.md and docs/claims/*.png.

claim (Claim, Study, Verdict, the registry, verdicts of two halves), tables (seed means, mean ±
std tables), figures, runs (the claims' sweeps, reading a store, the committed CSV export), doc
(the table and sections); papers/ holds one module per claim. `scripts/claims.py` is the
command line. The names below are re-exported for callers that import the package.
"""

from gnnbench.experiments.claims.claim import Claim, Study, Verdict, all_claims, register, selected
from gnnbench.experiments.claims.doc import DOC, write_claims
from gnnbench.experiments.claims.runs import RUNS, claim_frame, export_runs, read_runs, run_claims

__all__ = [
    "DOC",
    "RUNS",
    "Claim",
    "Study",
    "Verdict",
    "all_claims",
    "claim_frame",
    "export_runs",
    "read_runs",
    "register",
    "run_claims",
    "selected",
    "write_claims",
]
