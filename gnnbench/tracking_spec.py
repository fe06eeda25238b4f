"""TrackingSpec: the `tracking` config (where a job's MLflow runs go), checked once.

Part of the job (gnnbench/spec.py's JobSpec holds it), read by the tracking stage and the sweep's
driver; light on purpose: the sweep callback reads it before any job module is loaded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gnnbench.errors import ConfigError
from gnnbench.schema import TrackingKeys, keys
from gnnbench.spec_keys import check_keys, plain

SWEEP_KEYS = ("sweep_id", "parent_run_id", "axes")


@dataclass(frozen=True)
class SweepIdentity:
    """The sweep a job belongs to, handed to each job in its config by the sweep's driver (so a
    job launched elsewhere, as submitit launches SLURM jobs, knows it without the driver's
    environment)."""

    sweep_id: str
    parent_run_id: str
    axes: tuple[str, ...] = ()  # the keys the sweep varies: run names show their values

    @classmethod
    def from_config(cls, sweep: Any) -> SweepIdentity | None:
        if sweep is None:
            return None
        if not isinstance(sweep, Mapping):
            raise ConfigError(f"tracking.sweep: expected null or a mapping, got {sweep!r}")
        check_keys("tracking.sweep", sweep, SWEEP_KEYS, "tracking.sweep", required=SWEEP_KEYS[:2])
        return cls(
            sweep_id=str(sweep["sweep_id"]),
            parent_run_id=str(sweep["parent_run_id"]),
            axes=tuple(str(axis) for axis in sweep.get("axes") or ()),
        )

    def as_override(self) -> str:
        """`tracking.sweep={...}` as Hydra's override grammar reads it back (values quoted)."""
        axes = ",".join(f"'{axis}'" for axis in self.axes)
        return (
            f"tracking.sweep={{sweep_id:'{self.sweep_id}',"
            f"parent_run_id:'{self.parent_run_id}',axes:[{axes}]}}"
        )


@dataclass(frozen=True)
class TrackingSpec:
    """The MLflow store's URI and the experiment a job's runs (and a sweep's parent) go to."""

    uri: str
    experiment: str
    sweep: SweepIdentity | None = None  # set for a sweep's jobs only (by the sweep callback)

    @classmethod
    def from_config(cls, tracking: Mapping[str, Any]) -> TrackingSpec:
        """The composed `tracking` group (or Hydra's DictConfig of it): uri and experiment, and
        the sweep a job belongs to."""
        tracking = plain(tracking)
        if not isinstance(tracking, Mapping):
            raise ConfigError(f"tracking: expected a config group, got {tracking!r}")
        valid = keys(TrackingKeys)
        check_keys("tracking", tracking, valid, "tracking", required=("uri", "experiment"))
        return cls(
            uri=str(tracking["uri"]),
            experiment=str(tracking["experiment"]),
            sweep=SweepIdentity.from_config(tracking.get("sweep")),
        )
