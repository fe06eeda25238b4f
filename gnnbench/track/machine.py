"""Where a run ran: the machine's hardware and the versions of what it ran, as run tags.

Runs from different machines are only comparable when each says where it ran: the CPU, cores,
memory and GPUs, and the versions of torch, CUDA, NCCL, numba, MLflow and gnnbench with the git
commit of the checkout (`unknown` outside one). The host is the `gnnbench.host` tag (store.py).

Nothing here imports torch: a partition-only run never loads it (tests/test_startup.py). Package
versions come from their metadata, GPUs from torch where the job loaded it, else from nvidia-smi;
CUDA's and NCCL's versions only from a loaded torch (`not loaded` otherwise).
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
import subprocess
import sys
from importlib import metadata

from gnnbench.paths import REPO_ROOT

GIT_COMMIT_TAG = "mlflow.source.git.commit"  # where MLflow's own UI looks for it
UNKNOWN = "unknown"


@functools.cache
def machine_tags() -> dict[str, str]:
    """Hardware (`machine.*`), versions (`version.*`) and the git commit of this process."""
    head, dirty = git_state()
    return {**_hardware(), **_versions(), GIT_COMMIT_TAG: head, "version.git_dirty": dirty}


NOT_LOADED = "not loaded"


def _hardware() -> dict[str, str]:
    names = gpu_names()
    pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return {
        "machine.cpu": cpu_model(),
        "machine.cores": str(os.cpu_count() or 0),
        "machine.ram_gb": f"{pages / 2**30:.1f}",
        "machine.gpu": ", ".join(sorted(set(names))) or "none",
        "machine.gpu_count": str(len(names)),
    }


def gpu_names() -> list[str]:
    """One name per visible GPU: torch's view where loaded, else nvidia-smi's (none without)."""
    torch = sys.modules.get("torch")
    if torch is not None:
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        return [torch.cuda.get_device_name(i) for i in range(count)]
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=10, check=True,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (Linux), else what platform reports."""
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or UNKNOWN


def _versions() -> dict[str, str]:
    packages = ("torch", "torch_geometric", "numba", "mlflow", "gnnbench")
    return {
        "version.python": platform.python_version(),
        **{f"version.{name}": _package_version(name) for name in packages},
        **_cuda_versions(),
    }


def _cuda_versions() -> dict[str, str]:
    torch = sys.modules.get("torch")
    if torch is None:
        return {"version.cuda": NOT_LOADED, "version.nccl": NOT_LOADED}
    nccl = "none"
    if torch.cuda.is_available():
        try:
            found = torch.cuda.nccl.version()
            nccl = ".".join(map(str, found)) if isinstance(found, tuple) else str(found)
        except (RuntimeError, AttributeError):  # a CUDA build without NCCL
            pass
    return {"version.cuda": torch.version.cuda or "none", "version.nccl": nccl}


def _package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return UNKNOWN


def git_state() -> tuple[str, str]:
    """(HEAD of the checkout gnnbench runs from, whether tracked files differ from it: true or
    false), or (unknown, unknown) outside a git checkout."""
    if not (REPO_ROOT / ".git").exists():
        return UNKNOWN, UNKNOWN
    try:
        head = _git("rev-parse", "HEAD")
        dirty = _git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return UNKNOWN, UNKNOWN
    return head, str(bool(dirty)).lower()


def _git(*args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(REPO_ROOT), *args], capture_output=True, text=True, timeout=10, check=True
    )
    return done.stdout.strip()
