"""Set up, and check for, the environments the in-memory METIS baselines need.

    python -m gnnbench setup pyg_metis       # 64-bit METIS, torch-scatter, torch-sparse; wheels cached
    python -m gnnbench setup distdgl_metis   # DGL 2.1.0 + torch 2.2.1 in $GNNBENCH_HOME/envs/distdgl

PyG's `ClusterData` calls METIS through torch-sparse (which imports torch-scatter), whose METIS
glue passes int64 arrays and so needs METIS built with 64-bit `idx_t` (Debian's is 32-bit). The METIS 5 sources shipped in
pymetis's sdist are configured that way, so they are compiled into a static, position-independent
`libmetis.a` and torch-sparse is built against it; both wheels are kept under
`$GNNBENCH_HOME/wheels/<torch version>/` so a second setup only installs it.

DGL 2.1.0 works only with torch <= 2.2.1, so DistDGL lives in its own virtual environment; gnnbench
runs its driver script there as a subprocess. An environment counts as set up only when its
`.complete` marker exists, written last: an interrupted setup is redone from scratch.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import urllib.request
from collections.abc import Callable
from pathlib import Path

from gnnbench.errors import BaselineUnavailable, GnnbenchError
from gnnbench.paths import gnnbench_home
from gnnbench.process.atomic import scratch_directory
from gnnbench.process.memory_limit import is_out_of_memory

TORCH_SPARSE = "torch-sparse==0.6.18"
TORCH_SCATTER = "torch-scatter==2.1.2"
METIS_SDIST = ("pymetis", "2025.2.2")  # its sdist carries METIS 5 with IDXTYPEWIDTH 64
DISTDGL_REQUIREMENTS = [
    "torch==2.2.1",
    "dgl==2.1.0",
    "numpy<2",
    "setuptools<70",
    "torchdata==0.7.1",
    "pandas",
    "pyyaml",
    "pydantic",
    "psutil",
    "scipy",
    "memray",
]
ENVIRONMENTS = ("pyg_metis", "distdgl_metis")


def setup_command(name: str) -> str:
    return f"python -m gnnbench setup {name}"


def _say(message: str) -> None:
    print(f"gnnbench setup: {message}", file=sys.stderr, flush=True)


def _run(command: list[str], **kwargs) -> None:
    completed = subprocess.run(command, text=True, capture_output=True, **kwargs)
    if completed.returncode != 0:
        tail = "\n".join((completed.stdout + completed.stderr).strip().splitlines()[-20:])
        raise GnnbenchError(f"{' '.join(command[:4])} ... failed:\n{tail}")


# --- PyG: torch-sparse with 64-bit METIS -----------------------------------------------------


def torch_sparse_with_metis() -> bool:
    """True when torch-sparse imports and its METIS partition runs on a 4-node path."""
    try:
        import torch
        import torch_sparse  # noqa: F401
    except (ImportError, OSError) as exc:
        if is_out_of_memory(exc):  # installed, but no room under partitioner.memory_limit_gb
            raise
        return False
    rowptr = torch.tensor([0, 1, 3, 5, 6])
    col = torch.tensor([1, 0, 2, 1, 3, 2])
    try:
        parts = torch.ops.torch_sparse.partition(rowptr, col, None, 2, False)
    except (AttributeError, RuntimeError):
        return False
    return sorted(parts.tolist()) == [0, 0, 1, 1]


def require_pyg_metis() -> None:
    if not torch_sparse_with_metis():
        raise BaselineUnavailable(
            "partitioner=pyg_metis: torch-sparse with METIS is not installed in this environment; "
            f"set it up with: {setup_command('pyg_metis')}"
        )


def _fetch_sdist(package: str, version: str, dest: Path) -> Path:
    """Download one sdist from PyPI by name and version, checking the sha256 PyPI lists."""
    with urllib.request.urlopen(f"https://pypi.org/pypi/{package}/json") as reply:
        files = json.load(reply)["releases"][version]
    sdist = next(f for f in files if f["packagetype"] == "sdist")
    path = dest / sdist["filename"]
    with urllib.request.urlopen(sdist["url"]) as reply:
        path.write_bytes(reply.read())
    if hashlib.sha256(path.read_bytes()).hexdigest() != sdist["digests"]["sha256"]:
        raise GnnbenchError(f"{path}: sha256 differs from the one PyPI lists")
    return path


def build_metis64(prefix: Path) -> Path:
    """Compile METIS 5 (64-bit idx_t) into `prefix/lib/libmetis.a` with `prefix/include/metis.h`."""
    if (prefix / "lib" / "libmetis.a").is_file():
        return prefix
    with scratch_directory("metis-sdist") as scratch:
        archive = _fetch_sdist(*METIS_SDIST, Path(scratch))
        with tarfile.open(archive) as tar:
            tar.extractall(scratch, filter="data")
        metis = next(Path(scratch).glob("pymetis-*/src/metis"))
        header = (metis / "include" / "metis.h").read_text()
        if "#define IDXTYPEWIDTH 64" not in header:
            raise GnnbenchError(f"{archive.name}: METIS is not configured with 64-bit indices")
        sources = sorted((metis / "GKlib").glob("*.c")) + sorted((metis / "libmetis").glob("*.c"))
        includes = [f"-I{metis / d}" for d in ("GKlib", "include", "libmetis")]
        objects = []
        for source in sources:
            obj = Path(scratch) / f"{source.parent.name}_{source.stem}.o"
            _run(["cc", "-O3", "-fPIC", "-D_GNU_SOURCE", "-DNDEBUG", *includes, "-c", str(source),
                  "-o", str(obj)])  # fmt: skip
            objects.append(str(obj))
        staging = prefix.with_name(prefix.name + ".tmp")
        shutil.rmtree(staging, ignore_errors=True)
        (staging / "lib").mkdir(parents=True)
        (staging / "include").mkdir()
        _run(["ar", "rcs", str(staging / "lib" / "libmetis.a"), *objects])
        shutil.copy(metis / "include" / "metis.h", staging / "include" / "metis.h")
        shutil.rmtree(prefix, ignore_errors=True)
        staging.rename(prefix)
    return prefix


def _wheel_dir() -> Path:
    import torch

    return gnnbench_home() / "wheels" / f"torch-{torch.__version__}"


def _metis64_build_env() -> dict[str, str]:
    """Build variables that make torch-sparse compile its METIS glue against a 64-bit METIS."""
    _say("pyg_metis: building METIS with 64-bit indices")
    metis = build_metis64(gnnbench_home() / "build" / "metis64")
    return dict(
        os.environ,
        WITH_METIS="1",
        CPATH=str(metis / "include"),
        LIBRARY_PATH=str(metis / "lib"),
    )


def _wheel(requirement: str, build_env: Callable[[], dict[str, str]] | None = None) -> Path:
    """The cached wheel of `requirement` for this torch, built from its sdist first if missing."""
    wheels = _wheel_dir()
    prefix = requirement.split("==")[0].replace("-", "_")
    cached = sorted(wheels.glob(f"{prefix}-*.whl"))
    if cached:
        return cached[-1]
    _say(f"pyg_metis: building {requirement} (several minutes on 2 cores)")
    env = build_env() if build_env else dict(os.environ)
    env.update(FORCE_ONLY_CPU="1", MAX_JOBS=str(os.cpu_count() or 1))  # CPU torch: no CUDA kernels
    with scratch_directory("wheel") as scratch:
        _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
              "--no-binary", requirement.split("==")[0], "-w", scratch, requirement],
             env=env)  # fmt: skip
        built = next(Path(scratch).glob(f"{prefix}-*.whl"))
        wheels.mkdir(parents=True, exist_ok=True)
        shutil.copy(built, wheels / f".{built.name}.tmp")
        os.replace(wheels / f".{built.name}.tmp", wheels / built.name)
    return wheels / built.name


def setup_pyg_metis() -> None:
    if torch_sparse_with_metis():
        _say("pyg_metis: torch-sparse with METIS is already installed")
        return
    scatter = _wheel(TORCH_SCATTER)  # torch_sparse imports torch_scatter
    sparse = _wheel(TORCH_SPARSE, _metis64_build_env)
    _say(f"pyg_metis: installing {scatter.name} and {sparse.name}")
    _run([sys.executable, "-m", "pip", "install", "--no-deps", "--force-reinstall", str(scatter),
          str(sparse)])  # fmt: skip
    check = "from gnnbench.setup.baseline_envs import torch_sparse_with_metis as ok; exit(not ok())"
    if subprocess.run([sys.executable, "-c", check]).returncode != 0:  # a fresh import of the wheel
        raise GnnbenchError(f"{sparse}: installed, but its METIS partition does not run")
    _say("pyg_metis: ready")


# --- DistDGL: its own virtual environment ----------------------------------------------------


def distdgl_env() -> Path:
    return gnnbench_home() / "envs" / "distdgl"


def distdgl_python(user: str = "partitioner=distdgl_metis") -> Path:
    """The DistDGL environment's interpreter; a one-line error naming `user` (what needs it) and
    the setup command if absent."""
    env = distdgl_env()
    if not (env / ".complete").is_file():
        raise BaselineUnavailable(
            f"{user}: the DistDGL environment {env} is not set up; "
            f"set it up with: {setup_command('distdgl_metis')}"
        )
    return env / "bin" / "python"


def distdgl_environment() -> dict[str, str]:
    """The environment DGL's interpreter runs in: this one, less what would leak gnnbench's own
    packages into it."""
    env = dict(os.environ, DGLBACKEND="pytorch", PYTHONNOUSERSITE="1")
    env.pop("PYTHONPATH", None)
    return env


def setup_distdgl() -> None:
    env = distdgl_env()
    if (env / ".complete").is_file():
        _say(f"distdgl_metis: {env} is already set up")
        return
    shutil.rmtree(env, ignore_errors=True)  # an interrupted setup starts again
    _say(f"distdgl_metis: creating {env} (about 5 GB, a few minutes)")
    _run([sys.executable, "-m", "venv", str(env)])
    python = str(env / "bin" / "python")
    _run([python, "-m", "pip", "install", "--quiet", "--upgrade", "pip"])
    _run([python, "-m", "pip", "install", "--quiet", *DISTDGL_REQUIREMENTS])
    check = "import dgl, dgl.distributed, memray, torch; print(dgl.__version__, torch.__version__)"
    _run([python, "-c", check], env=dict(os.environ, DGLBACKEND="pytorch"))
    (env / ".complete").write_text("\n".join(DISTDGL_REQUIREMENTS) + "\n")
    _say("distdgl_metis: ready")


SETUPS = {"pyg_metis": setup_pyg_metis, "distdgl_metis": setup_distdgl}


def main(argv: list[str]) -> int:
    """`python -m gnnbench setup NAME [NAME ...]` (NAME: pyg_metis, distdgl_metis, all)."""
    from gnnbench.commands import chosen_names

    names = chosen_names("setup", argv, list(ENVIRONMENTS))
    if names is None:
        return 2
    try:
        for name in names:
            SETUPS[name]()
    except GnnbenchError as exc:
        print(f"gnnbench: error: {exc}", file=sys.stderr)
        return 1
    return 0
