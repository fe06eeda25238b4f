"""Write a directory under a temporary name and rename it into place only when complete; private
scratch directories that a killed process does not leave behind for long.

Temporary names carry the writer's host and pid (`.<name>.tmp-<host>-<pid>`), so a later run can
tell the leftovers of a killed writer (its pid no longer alive on this host) from work in progress
and remove them (`remove_stale_temporaries`, and `scratch_directory` in the temporary folder).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)

# .<name>.tmp-<host>-<pid>, .<name>.tmp-<pid> (older layout) and .<name>.bad-<pid> (a bad book
# moved aside); the host may contain dashes, the pid is the last field.
_TEMPORARY = re.compile(r"^\..+\.(?:tmp|bad)-(?:(?P<host>.+)-)?(?P<pid>\d+)$")


def _host() -> str:
    return socket.gethostname().replace("/", "_")


def temporary_name(dest: Path) -> Path:
    """The sibling of `dest` this process writes before renaming it into place."""
    dest = Path(dest)
    return dest.parent / f".{dest.name}.tmp-{_host()}-{os.getpid()}"


@contextmanager
def atomic_directory(dest: Path) -> Iterator[Path]:
    """Yield a temporary sibling of `dest`; on success it becomes `dest`, on failure it is removed.

    A concurrent writer that finished first wins: its directory is kept and ours is dropped, so
    readers only ever see complete directories.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_name(dest)
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    try:
        os.rename(tmp, dest)
    except OSError:
        if not dest.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        shutil.rmtree(tmp, ignore_errors=True)


SCRATCH_PREFIX = ".gnnbench-"


@contextmanager
def scratch_directory(purpose: str) -> Iterator[Path]:
    """A private directory in the temporary folder, removed on exit. A SIGKILL skips that exit,
    so the name carries this host and pid (`.gnnbench-<purpose>-<random>.tmp-<host>-<pid>`) and
    every call first removes the scratch directories of processes that are gone."""
    root = Path(tempfile.gettempdir())
    remove_stale_scratch(root)
    path = Path(
        tempfile.mkdtemp(
            prefix=f"{SCRATCH_PREFIX}{purpose}-", suffix=f".tmp-{_host()}-{os.getpid()}", dir=root
        )
    )
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def remove_stale_scratch(root: Path) -> None:
    """Remove the scratch directories killed processes of this host left in `root` (only
    gnnbench's own names: a temporary folder is shared with everything else)."""
    _remove_stale(Path(root).glob(f"{SCRATCH_PREFIX}*.tmp-*"))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write a file via a temporary name and rename."""
    path = Path(path)
    tmp = temporary_name(path)
    tmp.write_bytes(data)
    os.replace(tmp, path)


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this host (another user's counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_stale(path: Path) -> bool:
    """A temporary of this host whose writer is gone (other hosts' are left to them)."""
    match = _TEMPORARY.match(path.name)
    if match is None or int(match["pid"]) == os.getpid():
        return False
    host = match["host"]
    return (host is None or host == _host()) and not pid_alive(int(match["pid"]))


def remove_stale_temporaries(root: Path) -> int:
    """Remove the temporaries killed writers left under a cache root (two levels: the stores and
    books, and the files inside each store); returns the bytes freed."""
    return remove_stale_in(Path(root) / "graphs", Path(root) / "partitions")


def remove_stale_in(*folders: Path) -> int:
    """Remove the temporaries killed writers left in these folders and inside their entries;
    returns the bytes freed."""
    candidates = []
    for folder in map(Path, folders):
        entries = _entries(folder)
        candidates.extend(entries)
        for entry in entries:
            if not entry.name.startswith("."):
                candidates.extend(_entries(entry))  # e.g. a store's half-built adjacency files
    return _remove_stale(candidates)


def _remove_stale(candidates: Iterable[Path]) -> int:
    """Remove the stale ones among `candidates` (`is_stale`); returns the bytes freed."""
    freed = 0
    for path in filter(is_stale, candidates):
        try:  # another run starting now may be removing the same leftover
            freed += disk_bytes(path)
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
        except OSError:  # gone already, or not ours to remove: never fail a run over it
            continue
        log.warning("removed %s, left by a killed process", path)
    return freed


def _entries(folder: Path) -> list[Path]:
    """A directory's entries; none for a file, or for a folder another run removes meanwhile."""
    try:
        return list(folder.iterdir()) if folder.is_dir() else []
    except OSError:
        return []


def disk_bytes(path: Path) -> int:
    """The bytes of a file, or of every file under a directory (a store, a book, a temporary)."""
    path = Path(path)
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
