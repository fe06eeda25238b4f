"""What a claim is (Claim, Study, Verdict), the registry of claims, and verdicts of two halves.

A claim is one module of gnnbench/experiments/claims/papers/ that calls `register(Claim(...))`; the
registry imports every module there, so a new claim is one new module and its experiment configs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from gnnbench.errors import ConfigError
from gnnbench.experiments.claims.tables import share
from gnnbench.registry import Registry

# The machines and tolerances more than one claim states.
CPU = "CPU, 2 cores; training: 2 gloo worker processes"
SMALL = "graphs of 2.7 k-18 k nodes, <= 0.25 M edges (the papers' are larger)"
F1_TOLERANCE = 0.02  # "reaches centralized accuracy": within 0.02 micro-F1


@dataclass(frozen=True)
class Verdict:
    """Our figure, the verdict and why, for one claim."""

    ours: str
    verdict: str  # holds | holds partly | refuted | not testable here | open (not run)
    why: str


@dataclass(frozen=True)
class Study:
    """A follow-up experiment under a claim (its own MLflow experiment and configs): a table and
    the statement its figures support, shown in the claim's section."""

    experiment: str
    configs: tuple[str, ...]
    lines: Callable[[pd.DataFrame], list[str]]
    summary: Callable[[pd.DataFrame], str | None]  # one line for the claim's row; None: no runs


@dataclass(frozen=True)
class Claim:
    """One paper claim: where it comes from, the configs that test it, how it is judged."""

    number: int
    source: str
    text: str
    paper: str
    configs: tuple[str, ...]
    machine: str
    judge: Callable[[pd.DataFrame], Verdict | None]  # None: the runs it needs are absent
    detail: Callable[[pd.DataFrame], list[str]]
    plot: Callable[[pd.DataFrame], object | None] | None = None  # a matplotlib Figure or None
    untested: str = ""  # the part of the claim gnnbench cannot test, and why
    study: Study | None = None
    # A claim judged on another document's committed runs (the training baselines'): the MLflow
    # experiment its configs run into and how its runs are read, as the judges read them. Such a
    # claim exports nothing of its own (docs/claims/runs/ holds no copy of those runs).
    shared_experiment: str = ""
    runs_from: Callable[[], pd.DataFrame] | None = None
    # A claim on the partition documents' committed measurements (docs/scale.csv, ...): the
    # commands that remeasure them, shown instead of experiment configs and a job count.
    produced_by: tuple[str, ...] = ()
    # Committed measurements at scale appended to the claim's own runs (rows of 10 M edges and
    # more from docs/scale.csv, ...: partition_docs.scale_claim_rows), so that a partition
    # claim judged on small graphs is judged at scale too.
    scale_rows: Callable[[], pd.DataFrame] | None = None

    @property
    def experiment(self) -> str:
        return self.shared_experiment or f"claim_{self.number}"

    @property
    def all_configs(self) -> tuple[str, ...]:
        """The claim's configs and its study's: what --run runs."""
        return self.configs + (self.study.configs if self.study else ())


CLAIMS: Registry[Claim] = Registry("claim", "gnnbench.experiments.claims.papers", "--only")


def register(claim: Claim) -> Claim:
    """Enter a claim in the registry under its number (two modules with one number fail)."""
    return CLAIMS.register(str(claim.number))(claim)


def all_claims() -> tuple[Claim, ...]:
    """Every registered claim, in the order of their numbers."""
    return tuple(sorted((CLAIMS.get(name) for name in CLAIMS.names()), key=lambda c: c.number))


def selected(only: str | None) -> list[Claim]:
    """The claims --only names (comma-separated numbers); all of them without it."""
    if not only:
        return list(all_claims())
    known = {claim.number: claim for claim in all_claims()}
    try:
        numbers = [int(part) for part in only.split(",") if part.strip()]
    except ValueError:
        raise ConfigError(f"--only {only}: expected numbers like 1,2,7") from None
    unknown = [n for n in numbers if n not in known]
    if unknown:
        raise ConfigError(f"--only: no claim {unknown[0]} (expected {min(known)}-{max(known)})")
    return [known[n] for n in numbers]


@dataclass(frozen=True)
class Half:
    """One half of a two-part claim: what the runs show, the share of its cases (graphs, cells)
    where it held, and why not where it did not everywhere."""

    ours: str
    share: float
    why_not: str = ""


def share_half(ours: str, held: pd.Series, why: str) -> Half | None:
    """A Half from whether it held in each case (None without cases); `why` names the count as
    {share}, e.g. 'hops=0 loses more than 0.01 on {share} graphs' -> '... on 1/2 graphs'."""
    if held.empty:
        return None
    count, total = share(held)
    return Half(ours, count / total, why.format(share=f"{count}/{total}"))


def two_halves(halves: dict[str, Half | None]) -> Verdict | None:
    """The verdict of a claim of two halves (None: not run): holds when both hold in every case,
    refuted when neither holds in any, partly otherwise; why names what failed or was not run."""
    tested = {name: half for name, half in halves.items() if half is not None}
    if not tested:
        return None
    ours = "; ".join(half.ours for half in tested.values())
    reasons = [half.why_not for half in tested.values() if half.share < 1]
    reasons += [f"{name} not run" for name in halves if name not in tested]
    everywhere = [name for name, half in tested.items() if half.share == 1]
    if len(everywhere) == len(halves):
        return Verdict(ours, "holds", "both halves hold")
    if not any(half.share > 0 for half in tested.values()):
        return Verdict(ours, "refuted", "; ".join(reasons))
    only = f"only {everywhere[0]} holds everywhere; " if everywhere else ""
    return Verdict(ours, "holds partly", only + "; ".join(reasons))
