"""Progress of long loops: a tqdm bar on a terminal, plain log lines in CI and log files."""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")
log = logging.getLogger("gnnbench.progress")
LINE_EVERY_S = 5.0  # without a terminal, at most one line this often: short loops stay quiet
# Loops inside an epoch or an evaluation (batches, inference chunks): silent on small graphs, but
# at 1 B edges an epoch took 12 min and an evaluation 37 min with no line at all.
INNER_LINE_EVERY_S = 30.0


def progress(
    items: Iterable[T],
    total: int,
    desc: str,
    enabled: bool = True,
    status: Callable[[T], str] | None = None,
    line_every_s: float | None = None,
) -> Iterator[T]:
    """Yield `items`, showing how far the loop has got. With `status` (what the item just done
    achieved, e.g. an epoch's loss), the bar shows it, and without a terminal every item logs it;
    without either, a line at most every `line_every_s` seconds (default LINE_EVERY_S)."""
    if not enabled:
        yield from items
        return
    if sys.stderr.isatty() and not os.environ.get("CI"):
        from tqdm import tqdm

        with tqdm(total=total, desc=desc, leave=False) as bar:
            for item in items:
                yield item
                bar.update(1)
                if status is not None:
                    bar.set_postfix_str(status(item))
        return
    every_s = LINE_EVERY_S if line_every_s is None else line_every_s
    last_line = time.monotonic()
    for done, item in enumerate(items, start=1):
        yield item
        if status is not None:
            log.info("%s %d/%d: %s", desc, done, total, status(item))
        elif time.monotonic() - last_line >= every_s:
            log.info("%s: %d/%d", desc, done, total)
            last_line = time.monotonic()
