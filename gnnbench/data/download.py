"""Public datasets fetched on first use: a dataset config's `download` list, checked and atomic.

    download:                     # in gnnbench/conf/dataset/<name>.yaml
      - url: https://raw.githubusercontent.com/<owner>/<repo>/<commit>/data/ind.cora.x
        checksum: sha256:<hex>    # or git-sha1:<hex>, GitHub's blob id of the file
        to: planetoid/ind.cora.x  # under the raw directory (gnnbench.paths.raw_dir)

Only missing files are fetched, and only those that fill `dataset.path` (a path pointed at the
user's own copy elsewhere fetches nothing). Each file is written to a temporary sibling
(`.<name>.tmp-<host>-<pid>`, gnnbench/process/atomic.py), verified, then renamed: a killed download
leaves that temporary (removed by the next attempt once its process is gone), never a file
under the name a later run reads. `GNNBENCH_DOWNLOAD_BASE=http://host:port` fetches
`<base>/<origin host>/<origin path>` instead of the origin: a mirror, or a test's loopback server.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import os
import shutil
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from gnnbench.errors import ConfigError, DataError
from gnnbench.paths import raw_dir
from gnnbench.process.atomic import remove_stale_in, temporary_name

BASE_VARIABLE = "GNNBENCH_DOWNLOAD_BASE"
CHECKSUMS = {"sha256": 64, "git-sha1": 40}  # algorithm -> hex digits
HEX = set("0123456789abcdef")
TIMEOUT_S = 60.0  # per socket operation: a stalled server is a one-line failure, not a hang
CHUNK = 1 << 20


@dataclass(frozen=True)
class RemoteFile:
    """One entry of `dataset.download`: where it comes from, its checksum, where it goes."""

    url: str
    checksum: str
    to: str

    @classmethod
    def from_config(cls, entry: Any, index: int) -> RemoteFile:
        key = f"dataset.download[{index}]"
        if not isinstance(entry, Mapping) or set(entry) != {"url", "checksum", "to"}:
            raise ConfigError(
                f"{key}: expected exactly the keys url, checksum and to, got {entry!r}"
            )
        url, checksum, to = (str(entry[k]) for k in ("url", "checksum", "to"))
        if urlsplit(url).scheme not in ("http", "https"):
            raise ConfigError(f"{key}.url: expected an http(s) URL, got {url!r}")
        algorithm, _, digest = checksum.lower().partition(":")
        if CHECKSUMS.get(algorithm) != len(digest) or not all(c in HEX for c in digest):
            raise ConfigError(
                f"{key}.checksum: expected sha256:<64 hex digits> or git-sha1:<40 hex digits>, "
                f"got {checksum!r}"
            )
        if Path(to).is_absolute() or ".." in Path(to).parts or Path(to).name in ("", "."):
            raise ConfigError(
                f"{key}.to: expected a file path inside the raw directory, got {to!r}"
            )
        return cls(url, f"{algorithm}:{digest}", to)

    def source_url(self) -> str:
        """The origin, or its copy under GNNBENCH_DOWNLOAD_BASE."""
        base = os.environ.get(BASE_VARIABLE, "").rstrip("/")
        if not base:
            return self.url
        origin = urlsplit(self.url)
        return f"{base}/{origin.netloc}{origin.path}"


def remote_files(dataset: Mapping[str, Any]) -> list[RemoteFile]:
    entries = dataset.get("download") or []
    if not isinstance(entries, Sequence) or isinstance(entries, str):
        raise ConfigError(f"dataset.download: expected a list of files, got {entries!r}")
    return [RemoteFile.from_config(entry, i) for i, entry in enumerate(entries)]


def fetch_missing(dataset: Mapping[str, Any]) -> list[Path]:
    """Download the dataset's missing files that fill its `dataset.path` (a path pointed
    elsewhere, at the user's own copy, fetches nothing); the files written."""
    files = remote_files(dataset)
    path = dataset.get("path")
    if not files or not path or str(path) == "???":
        return []
    path = Path(str(path)).expanduser()
    path = path if path.is_absolute() else raw_dir() / path
    wanted = [f for f in files if (raw_dir() / f.to).is_relative_to(path)]
    return [fetch(file) for file in wanted if not (raw_dir() / file.to).exists()]


def fetch(file: RemoteFile) -> Path:
    """One file downloaded to raw_dir()/file.to, verified, renamed into place."""
    dest = raw_dir() / file.to
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(
            f"{dest.parent}: cannot create the download folder ({exc.strerror})"
        ) from None
    remove_stale_in(dest.parent)  # parts of downloads killed on this host
    part = temporary_name(dest)
    url = file.source_url()
    try:
        digest = _download(url, part, dest, file.checksum.partition(":")[0])
        if digest != file.checksum:
            raise DataError(
                f"{url}: checksum mismatch for {dest.name} (expected {file.checksum}, got {digest}); "
                "nothing was kept"
            )
        os.replace(part, dest)
    except OSError as exc:  # the raw folder read-only, full, or gone
        raise DataError(
            f"{exc.filename or dest}: cannot write the download ({exc.strerror})"
        ) from None
    finally:
        with contextlib.suppress(OSError):
            part.unlink(missing_ok=True)
    return dest


def _download(url: str, part: Path, dest: Path, algorithm: str) -> str:
    """Stream `url` into `part` (on its way to `dest`); its checksum in `algorithm`."""
    try:
        response = urllib.request.urlopen(url, timeout=TIMEOUT_S)  # noqa: S310 (http(s) checked)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise _unreachable(url, dest, exc) from None
    with response:
        size = int(response.headers.get("Content-Length") or 0)
        _check_free_disk(part.parent, size, url)
        with open(part, "wb") as out, _progress(dest.name, size) as bar:
            while chunk := _read(response, url, dest):
                out.write(chunk)  # an OSError here (a full disk) is one line in fetch
                bar.update(len(chunk))
            written = out.tell()
    if size and written != size:
        raise DataError(
            f"{url}: the download ended after {written} of {size} bytes; nothing was kept"
        )
    return checksum_of(part, algorithm)


def checksum_of(path: Path, algorithm: str) -> str:
    """`sha256:<hex>`, or `git-sha1:<hex>`: git's blob id, sha1 over 'blob <size>\0' and the
    bytes (GitHub's name for a file's content: the one checksum this project could take of files
    whose bytes it never held)."""
    if algorithm == "sha256":
        hasher = hashlib.sha256()
    else:
        hasher = hashlib.sha1(usedforsecurity=False)
        hasher.update(f"blob {path.stat().st_size}\0".encode())
    with open(path, "rb") as handle:
        while block := handle.read(CHUNK):
            hasher.update(block)
    return f"{algorithm}:{hasher.hexdigest()}"


def _read(response, url: str, dest: Path) -> bytes:
    try:
        return response.read(CHUNK)
    except (OSError, http.client.HTTPException) as exc:  # reset, timeout, cut short
        raise _unreachable(url, dest, exc) from None


def _unreachable(url: str, dest: Path, exc: BaseException) -> DataError:
    reason = getattr(exc, "reason", None) or exc
    return DataError(
        f"{url}: download failed ({reason}); put {dest.name} in {dest.parent} by hand, or set "
        f"{BASE_VARIABLE} to a mirror"
    )


def _check_free_disk(folder: Path, size: int, url: str) -> None:
    free = shutil.disk_usage(folder).free
    if size > free:
        raise DataError(f"{folder}: {url} needs {size} bytes, only {free} free on that disk")


def _progress(name: str, size: int):
    from tqdm import tqdm

    # a bar on a terminal only (disable=None): logs and CI output get no carriage returns
    return tqdm(
        total=size or None, unit="B", unit_scale=True, desc=name, file=sys.stderr, disable=None
    )


def main(argv: list[str]) -> int:
    """`python -m gnnbench download NAME [NAME ...]`: fetch public datasets ahead of time."""
    import yaml

    from gnnbench.commands import chosen_names
    from gnnbench.errors import GnnbenchError
    from gnnbench.paths import CONF_DIR

    public = sorted(
        path.stem
        for path in (CONF_DIR / "dataset").glob("*.yaml")
        if "download" in (yaml.safe_load(path.read_text()) or {})
    )
    names = chosen_names("download", argv, public)
    if names is None:
        return 2
    try:
        for name in names:
            config = yaml.safe_load((CONF_DIR / "dataset" / f"{name}.yaml").read_text())
            fetched = fetch_missing(config)
            print(f"{name}: {len(fetched)} file(s) downloaded into {raw_dir()}", flush=True)
    except GnnbenchError as exc:
        print(f"gnnbench: error: {exc}", file=sys.stderr)
        return 2
    return 0
