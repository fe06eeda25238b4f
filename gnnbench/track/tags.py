"""The tags gnnbench writes on its MLflow runs and reads back: one name each, for writers and
readers alike."""

from __future__ import annotations

from collections.abc import Mapping

ROLE_TAG = "gnnbench.role"  # what a run is:
JOB = "job"  # one job of a run or a sweep: the runs that measure
PARENT = "parent"  # a sweep's bookkeeping run
REUSED = "reused"  # a later sweep's link to a job it reused (track/sweep.py link_reused_run)
BOOKKEEPING_ROLES = (PARENT, REUSED)  # runs that measure nothing themselves


def role_filter(role: str, equal: bool = True) -> str:
    """An MLflow search filter on a run's role: `tags.`gnnbench.role` = 'job'`."""
    return f"tags.`{ROLE_TAG}` {'=' if equal else '!='} '{role}'"


# On the parent, one tag per job resume skipped: skipped.<run_key> = the FINISHED run it repeats
# (often outside the sweep), so the summary and the report still count the job.
SKIPPED_TAG = "skipped."
# ... and skipped_aliases.<run_key> = the older keys of that job, comma-separated (its aliases,
# gnnbench.identity.run_keys), so an older child of it (FAILED before an upgrade) is the same job
SKIPPED_ALIASES_TAG = "skipped_aliases."


def skipped_aliases(parent_tags: Mapping[str, str]) -> dict[str, str]:
    """{older run key: run key} of the jobs resume skipped, from the parent's tags."""
    return {
        alias: tag.removeprefix(SKIPPED_ALIASES_TAG)
        for tag, aliases in parent_tags.items()
        if tag.startswith(SKIPPED_ALIASES_TAG)
        for alias in aliases.split(",")
        if alias
    }
