"""What the in-memory baselines installed from PyPI (KaMinPar, KaHIP) share.

They are an optional extra of the project (`pip install 'gnnbench[partitioners]'`, which `make
install` includes): a missing package is one line naming that command. Both take an imbalance ε
as METIS does (METIS runs at 3%; their configs default to the same so results compare) and bound
every block by (1 + ε) times the perfectly balanced ceil(|V| / p) nodes.
"""

from __future__ import annotations

import importlib
import math
from types import ModuleType

from gnnbench.errors import BaselineUnavailable, ConfigError

EXTRA_INSTALL = "pip install 'gnnbench[partitioners]'"


def require_package(partitioner: str, module: str) -> ModuleType:
    """`import module`, or a one-line BaselineUnavailable naming the install command."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise BaselineUnavailable(
            f"partitioner={partitioner}: the {module} package is not installed; "
            f"install it with: {EXTRA_INSTALL}"
        ) from exc


def check_imbalance(partitioner: str, imbalance: object) -> float:
    """partitioner.imbalance: a fraction in (0, 1)."""
    if isinstance(imbalance, bool) or not isinstance(imbalance, int | float):
        raise ConfigError(f"partitioner.imbalance: expected a number, got {imbalance!r}")
    if not 0 < imbalance < 1:
        raise ConfigError(
            f"partitioner.imbalance: expected a fraction in (0, 1) for {partitioner}, "
            f"got {imbalance!r}"
        )
    return float(imbalance)


def imbalance_bound(p: int, n: int, imbalance: float) -> float:
    """vertex_balance bound of a block cap of (1 + ε) ceil(n / p) nodes, rounded up (whether a
    package rounds that cap down or up, no block passes it)."""
    if n == 0:
        return 1.0
    return math.ceil((1 + imbalance) * math.ceil(n / p)) / (n / p)
