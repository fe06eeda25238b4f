"""TrackingSpec: the `tracking` config (where a job's MLflow runs go), checked once.

Light on purpose: the sweep callback reads it before any job module is loaded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gnnbench.errors import ConfigError
from gnnbench.spec_keys import check_keys, plain

TRACKING_KEYS = ("uri", "experiment")


@dataclass(frozen=True)
class TrackingSpec:
    """The MLflow store's URI and the experiment a job's runs (and a sweep's parent) go to."""

    uri: str
    experiment: str

    @classmethod
    def from_config(cls, tracking: Mapping[str, Any]) -> TrackingSpec:
        """The composed `tracking` group (or Hydra's DictConfig of it): both keys, no other."""
        tracking = plain(tracking)
        if not isinstance(tracking, Mapping):
            raise ConfigError(f"tracking: expected a config group, got {tracking!r}")
        check_keys("tracking", tracking, TRACKING_KEYS, "tracking", required=TRACKING_KEYS)
        return cls(uri=str(tracking["uri"]), experiment=str(tracking["experiment"]))
