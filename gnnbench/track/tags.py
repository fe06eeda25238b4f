"""The tags gnnbench writes on its MLflow runs and reads back: one name each, for writers and
readers alike."""

from __future__ import annotations

ROLE_TAG = "gnnbench.role"  # what a run is:
JOB = "job"  # one job of a run or a sweep: the runs that measure
PARENT = "parent"  # a sweep's bookkeeping run
REUSED = "reused"  # a later sweep's link to a job it reused (track/sweep.py link_reused_run)
BOOKKEEPING_ROLES = (PARENT, REUSED)  # runs that measure nothing themselves


def role_filter(role: str, equal: bool = True) -> str:
    """An MLflow search filter on a run's role: `tags.`gnnbench.role` = 'job'`."""
    return f"tags.`{ROLE_TAG}` {'=' if equal else '!='} '{role}'"
