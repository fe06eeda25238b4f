"""The claims' runs: their sweeps run, read from a store, exported to (and read back from) the
committed CSVs the doc is made from, and counted against the jobs their configs plan."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from gnnbench.composition import sweep_grid
from gnnbench.config_values import KEYS_ADDED_LATER, as_text
from gnnbench.errors import DataError, GnnbenchError
from gnnbench.experiments.claims.claim import Claim, all_claims
from gnnbench.experiments.claims.tables import has_columns
from gnnbench.identity import text_identity
from gnnbench.paths import CONF_DIR, REPO_ROOT
from gnnbench.process.atomic import atomic_write_bytes
from gnnbench.track.report.query import (
    experiment_runs,
    newest_per_job,
    wall_clock_epochs,
)
from gnnbench.track.tags import JOB, role_filter

RUNS = REPO_ROOT / "docs" / "claims" / "runs"  # what the doc is made from (committed CSVs)
PARAM, METRIC = "params.", "metrics."
# a column the export adds: each run's wall clock from MLflow's start and end times, so a claim's
# section says how long its runs took on the machine (runs exported before it lack it)
RUN_WALL = "run_wall_s"
NUMERIC_PARAMS = (
    "p", "seed", "sync_interval", "partitioner.hops", "partitioner.chunk_fraction",
    "train.batches_per_epoch", "train.sampler_workers", "train.epochs", "train.lr",
    "graph.num_nodes", "graph.num_edges", "graph.feature_dim", "model.layers",
)  # fmt: skip
GROUP_COLUMNS = {"dataset": "dataset.name", "partitioner": "partitioner.name",
                 "model": "model.name", "train": "train.mode"}  # fmt: skip


def run_claims(claims: Sequence[Claim], tracking_uri: str) -> None:
    """Each claim's sweeps, one after another; a sweep with failed jobs is reported, not fatal."""
    from gnnbench.experiments.experiment_docs import sweep

    for claim in claims:
        sweep(*claim.all_configs, tracking_uri=tracking_uri, may_fail=True)


def store_runs(tracking_uri: str, experiment: str) -> pd.DataFrame:
    """Every FINISHED job of an experiment (its newest run) as `params.*` and `metrics.*` columns,
    params as MLflow holds them (text); empty if none."""
    where = f"attributes.status = 'FINISHED' and {role_filter(JOB)}"
    try:
        runs = newest_per_job(experiment_runs(tracking_uri, experiment, where))
    except GnnbenchError:
        return pd.DataFrame()
    return pd.DataFrame(
        [
            {
                **{f"{PARAM}{key}": value for key, value in run.data.params.items()},
                **{f"{METRIC}{key}": value for key, value in run.data.metrics.items()},
                f"{METRIC}{RUN_WALL}": _wall_seconds(run),
            }
            for run in runs
        ]
    )


def _wall_seconds(run) -> float | None:
    """The run's wall clock on the machine that ran it, start to end (MLflow's run times)."""
    start, end = run.info.start_time, run.info.end_time
    return (end - start) / 1000 if start and end else None


def claim_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs as the judges read them: one column per param and metric (a metric wins over a
    param of the same name), the numeric params as numbers."""
    frame = runs.rename(columns=lambda column: column.split(".", 1)[1])
    frame = frame.loc[:, ~frame.columns.duplicated(keep="last")]
    for column in NUMERIC_PARAMS:
        if column in frame:
            frame[column] = pd.to_numeric(frame[column], errors="coerce")
    return wall_clock_epochs(frame)


def experiments(claims=None) -> list[str]:
    """The MLflow experiments the claims read (all claims' by default): each one's and its study's;
    a claim judged on another document's runs (`runs_from`) adds none."""
    claims = all_claims() if claims is None else claims
    names = [claim.experiment for claim in claims if claim.runs_from is None]
    return names + [claim.study.experiment for claim in claims if claim.study]


def export_runs(
    tracking_uri: str, folder: Path = RUNS, claims=None, merge: bool = False
) -> dict[str, pd.DataFrame]:
    """The claims' runs from the store, also written to `folder/<experiment>.csv` (an experiment
    without runs: no file) so that the doc regenerates from the repository. With `claims`, only
    theirs are exported; the others' are read from `folder` as they were (`--only 6` on a store
    holding claim 6 alone must not delete the other claims' files). With `merge`, an experiment's
    committed runs are kept beside the store's, a job's run in the store replacing its committed
    one: a claim run over several sittings, each on a fresh store, adds up."""
    committed = read_runs(folder) if folder.is_dir() and (claims is not None or merge) else {}
    frames = dict(committed) if claims is not None else {}
    for name in experiments(claims):
        stored = store_runs(tracking_uri, name)
        old = committed.get(name, pd.DataFrame())
        frames[name] = merged_runs(old, stored, name) if merge and not old.empty else stored
    folder.mkdir(parents=True, exist_ok=True)
    for name in experiments(claims):
        frame, path = frames[name], folder / f"{name}.csv"
        if frame.empty:
            path.unlink(missing_ok=True)
        else:
            text = frame[sorted(frame.columns)].to_csv(index=False)
            atomic_write_bytes(path, text.encode())
    return frames


def read_runs(folder: Path = RUNS) -> dict[str, pd.DataFrame]:
    """The runs export_runs wrote, typed as the store gives them (params text, metrics numbers;
    an absent value, or an empty text, reads as absent)."""
    if not folder.is_dir():
        raise DataError(f"{folder}: no exported runs (run with --tracking-uri)")
    return {name: _read_csv(folder / f"{name}.csv") for name in experiments()}


def _read_csv(path: Path) -> pd.DataFrame:
    if not path.is_file():
        return pd.DataFrame()
    header = pd.read_csv(path, nrows=0).columns
    types = {column: (float if column.startswith(METRIC) else str) for column in header}
    return pd.read_csv(path, dtype=types, keep_default_na=False, na_values=[""])


def _column(key: str) -> str:
    """A sweep override key as the run parameter it sets: dataset -> dataset.name."""
    return GROUP_COLUMNS.get(key, key)


def _sweep_grid(cfg) -> dict[str, list[str]]:
    """{override key: its swept values} of a composed experiment config (Hydra's grammar: a
    bracketed list `[25,10],[-1,-1]` is two values)."""
    return sweep_grid((), dict(cfg.hydra.sweeper.params))


def planned_jobs(configs: Sequence[str]) -> tuple[list[str], set]:
    """(swept columns, the distinct jobs) the configs' sweeps plan. A column one config does not
    sweep takes its composed value (per swept group choice it depends on: claim_7's METIS jobs
    have no chunk_fraction), so jobs two configs share count once."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        base = {name: compose("config", [f"experiment={name}"], return_hydra_config=True)
                for name in configs}  # fmt: skip
        grids = {name: _sweep_grid(cfg) for name, cfg in base.items()}
        # train.mode always: it decides which axes a job ignores (text_identity)
        columns = sorted({"train.mode", *(_column(k) for grid in grids.values() for k in grid)})
        jobs = set()
        for name, grid in grids.items():
            missing = [c for c in columns if c not in map(_column, grid)]
            groups = [k for k in grid if k in GROUP_COLUMNS and any(
                c.startswith(k + ".") for c in missing)]  # fmt: skip
            for choice in itertools.product(*(grid[k] for k in groups)):
                chosen = dict(zip(groups, choice, strict=True))
                cfg = compose("config", [f"experiment={name}", *(f"{k}={v}" for k, v in
                              chosen.items())]) if chosen else base[name]  # fmt: skip
                fixed = {c: as_text(OmegaConf.select(cfg, c)) for c in missing}
                rest = {k: v for k, v in grid.items() if k not in chosen}
                for values in itertools.product(*rest.values()):
                    swept = {**chosen, **dict(zip(rest, values, strict=True))}
                    row = {_column(k): as_text(v) for k, v in swept.items()}
                    jobs.add(text_identity({**fixed, **row}))
    return columns, jobs


def job_identities(frame: pd.DataFrame, columns: Sequence[str]) -> list[str] | None:
    """Each run's job (text_identity over the swept `columns`) in a claim frame; None when the
    runs lack a column (a key added later reads at its neutral value)."""
    added = [column for column in columns if column in KEYS_ADDED_LATER]
    if not frame.empty:  # no run may have logged a key added later yet
        frame = frame.assign(**{column: frame.get(column) for column in added})
    if not has_columns(frame, *columns):
        return None
    return [text_identity({column: as_text(value) for column, value in row.items()})
            for row in frame[list(columns)].astype(object).to_dict("records")]  # fmt: skip


def merged_runs(committed: pd.DataFrame, stored: pd.DataFrame, experiment: str) -> pd.DataFrame:
    """The committed runs of `experiment` whose job the store has no run of, then the store's."""
    configs = next(c for claim in all_claims() for name, c in _experiment_configs(claim)
                   if name == experiment)  # fmt: skip
    columns, _ = planned_jobs(configs)
    old = job_identities(claim_frame(committed), columns)
    new = set(job_identities(claim_frame(stored), columns) or []) if not stored.empty else set()
    if old is None:
        raise DataError(f"{RUNS / experiment}.csv: cannot merge, its runs lack one of the job "
                        f"columns {', '.join(columns)}")  # fmt: skip
    kept = committed[[identity not in new for identity in old]]
    return pd.concat([kept, stored], ignore_index=True) if not stored.empty else kept


def _experiment_configs(claim: Claim) -> list[tuple[str, tuple[str, ...]]]:
    pairs = [(claim.experiment, claim.configs)]
    return pairs + ([(claim.study.experiment, claim.study.configs)] if claim.study else [])


def job_count_line(frame: pd.DataFrame, configs: Sequence[str]) -> str:
    """How many of the jobs the configs plan have a FINISHED run in `frame`."""
    columns, jobs = planned_jobs(configs)
    done = set(job_identities(frame, columns) or [])
    names = ", ".join(f"`{name}`" for name in configs)
    return f"FINISHED: {len(done & jobs)} of the {len(jobs)} jobs {names} plan.{_took(frame)}"


def _took(frame: pd.DataFrame) -> str:
    """The summed wall clock of the runs exported with theirs (runs exported before it was are
    left out, and counted); a sum, not the time elapsed, where runs overlapped."""
    if RUN_WALL not in frame or frame[RUN_WALL].isna().all():
        return ""
    known = pd.to_numeric(frame[RUN_WALL], errors="coerce").dropna()
    minutes = known.sum() / 60
    took = f"{minutes / 60:.1f} h" if minutes >= 90 else f"{minutes:.0f} min"
    return (
        f" Summed wall clock of the {len(known)} of {len(frame)} runs that carry one: {took} here."
    )
