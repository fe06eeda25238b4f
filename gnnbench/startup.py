"""Start-up of `python -m gnnbench`: the cyclic garbage collector is paused while modules load.

Loading Hydra, MLflow (with SQLAlchemy, alembic, pandas, OpenTelemetry) and the stages creates
half a million long-lived objects and about 3,000 unreachable ones, yet with the collector on,
every 700 new objects start a collection and the older generations' ones re-traverse the growing
heap: about 800 collections, a fifth or more of a cached `train=none` run's CPU time
(docs/design.md, Start-up). The
collector is paused from the command line's start until the job's modules are loaded, then the
loaded objects are frozen (gc.freeze: later collections skip them) and it runs as usual: a job
never runs its stages, workers or training with it paused.
"""

from __future__ import annotations

import gc


def pause_collector() -> None:
    """Stop automatic garbage collection while start-up loads modules (resume_collector ends it)."""
    gc.disable()


def resume_collector() -> None:
    """Collect as usual again; what start-up loaded is moved out of the collector's way.

    A no-op when the collector is on (a sweep's later jobs): freezing then would also keep the
    earlier jobs' uncollected garbage for good."""
    if gc.isenabled():
        return
    gc.freeze()
    gc.enable()
