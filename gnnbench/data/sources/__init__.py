"""Dataset sources: one module each, registered in SOURCES under the name `dataset.source` takes.

A source's function fills a GraphStoreBuilder (gnnbench/data/builder.py) from raw files or a
generator; its `config_keys` attribute names the dataset keys it reads (gnnbench/data/spec.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from gnnbench.registry import Registry

if TYPE_CHECKING:
    from gnnbench.data.builder import GraphStoreBuilder

SourceFn = Callable[["GraphStoreBuilder", Mapping[str, Any]], None]
SOURCES: Registry[SourceFn] = Registry("dataset source", "gnnbench.data.sources", "dataset.source")
