"""Progress of long loops: a tqdm bar on a terminal, plain log lines in CI and log files."""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")
log = logging.getLogger("gnnbench.progress")
LINE_EVERY_S = 5.0  # without a terminal, at most one line this often: short loops stay quiet


def progress(items: Iterable[T], total: int, desc: str, enabled: bool = True) -> Iterator[T]:
    """Yield `items`, showing how far the loop has got."""
    if not enabled:
        yield from items
        return
    if sys.stderr.isatty() and not os.environ.get("CI"):
        from tqdm import tqdm

        yield from tqdm(items, total=total, desc=desc, leave=False)
        return
    last_line = time.monotonic()
    for done, item in enumerate(items, start=1):
        yield item
        if time.monotonic() - last_line >= LINE_EVERY_S:
            log.info("%s: %d/%d", desc, done, total)
            last_line = time.monotonic()
