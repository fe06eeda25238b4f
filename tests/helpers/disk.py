"""A disk that looks full to the import's checks, and what a refused import must leave."""

from __future__ import annotations

from pathlib import Path

import pytest

from gnnbench.data import import_checks
from gnnbench.data.datasets import prepare_dataset
from gnnbench.errors import DataError


def pretend_free(monkeypatch, free: int) -> None:
    monkeypatch.setattr(import_checks, "free_disk_bytes", lambda directory: free)


def assert_refused_for_disk(config: dict, home: Path, what: str, figure: str) -> None:
    """Importing `config` is one DataError line naming the graphs directory, `what` it could not
    write and `figure` (bytes needed or free), with nothing left under the graphs directory."""
    with pytest.raises(DataError) as raised:
        prepare_dataset(config)
    message = str(raised.value)
    assert "\n" not in message and f"not enough disk space for {what}" in message
    assert f"{home / 'graphs'}: " in message and figure in message
    assert not any((home / "graphs").iterdir())
