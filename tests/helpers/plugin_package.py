"""A throwaway gnnbench plugin package, written and pip-installed into a folder of its own (put
on PYTHONPATH by the tests): partitioner `myplugin` (contiguous blocks of node ids, a `scatter`
share of them dealt out at random: a knob that plants a worse edge cut), its config file, and,
when asked, a module that fails to import and one that registers a built-in's name."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

PARTITIONER = '''
"""Contiguous blocks of node ids; a `scatter` share of the nodes dealt out at random."""

import numpy as np

from gnnbench.partition.base import PartitionResult, register_partitioner

VERSION = "1"


@register_partitioner("myplugin")
def blocks(store, p, seed, *, scatter: float):
    owner = (np.arange(store.num_nodes, dtype=np.int64) * p // store.num_nodes).astype(np.int32)
    rng = np.random.default_rng(seed)
    moved = rng.random(store.num_nodes) < scatter
    owner[moved] = rng.integers(0, p, int(moved.sum()), dtype=np.int32)
    return PartitionResult(owner, {"passes": 0})
'''
CONFIG = """\
# Contiguous blocks of node ids (a gnnbench plugin).
name: myplugin
scatter: {scatter}
"""
BROKEN = "import a_module_nobody_has  # noqa\n"
CLASH = """
from gnnbench.partition.base import PARTITIONERS, PartitionResult


@PARTITIONERS.register("hash")
def not_hash(store, p, seed, *, chunk_edges: int):
    raise AssertionError("the built-in hash must win")
"""


def write_plugin(
    root: Path, scatter: float = 0.0, broken: bool = False, source: Path | None = None
) -> Path:
    """The package's source tree (root/src, or `source`): myplugin/ with its conf/, and its
    pyproject."""
    source = source or root / "src"
    package = source / "myplugin"
    (package / "conf" / "partitioner").mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "partitioner.py").write_text(PARTITIONER)
    (package / "conf" / "partitioner" / "myplugin.yaml").write_text(CONFIG.format(scatter=scatter))
    points = ['myplugin = "myplugin.partitioner"']
    if broken:
        (package / "broken.py").write_text(BROKEN)
        (package / "clash.py").write_text(CLASH)
        points += ['myplugin_broken = "myplugin.broken"', 'myplugin_clash = "myplugin.clash"']
    (source / "pyproject.toml").write_text(
        textwrap.dedent(
            """\
            [build-system]
            requires = ["setuptools>=68"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "myplugin"
            version = "0.1"

            [project.entry-points."gnnbench.plugins"]
            {points}

            [tool.setuptools.packages.find]
            include = ["myplugin*"]

            [tool.setuptools.package-data]
            myplugin = ["conf/**/*.yaml"]
            """
        ).format(points="\n".join(points))
    )
    return source


def pip_install(source: Path, target: Path) -> Path:
    """`pip install --target`: the package and its entry points in `target`, for PYTHONPATH."""
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--upgrade", "--target", str(target), str(source)],
        check=True, timeout=300,
    )  # fmt: skip
    return target


# Planted regressions, each a change to the plugin's code under the same config (and VERSION, as a
# user forgets to bump it: CI's fresh cache still partitions again).
WORSE_CUT = PARTITIONER.replace(
    "moved = rng.random(store.num_nodes) < scatter",
    "moved = rng.random(store.num_nodes) < scatter + 0.3",
)
MEMORY_BLOWUP = PARTITIONER.replace(
    "    return PartitionResult(",
    "    scratch = np.ones(64 * 2**20 // 8)  # 64 MB held for nothing\n"
    "    owner[0] += int(scratch[0]) - 1\n"
    "    return PartitionResult(",
)


def plant(site: Path, source: str) -> None:
    """Replace the installed plugin's partitioner module (what a code change would install)."""
    (site / "myplugin" / "partitioner.py").write_text(source)
