"""The MLflow runs a test's `python -m gnnbench` left in <cwd>/mlflow.db."""

from __future__ import annotations

from pathlib import Path


def runs(cwd: Path):
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{cwd / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("gnnbench")
    if experiment is None:
        return client, []
    found = client.search_runs([experiment.experiment_id])
    return client, [run for run in found if run.data.tags.get("gnnbench.role") != "parent"]
