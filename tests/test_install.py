"""A non-editable install: `pip install .` into a fresh virtual environment, then `python -m
gnnbench` from a directory that is not the checkout runs the default job (issue 29): the configs
ship inside the package.

Without network: the venv is made without pip, and one .pth line puts this interpreter's
site-packages (torch, Hydra, MLflow, pip, setuptools) after the venv's own, where pip installs the
package alone (--no-deps --no-build-isolation --no-index). The .pth files of that directory are
not run from a .pth line, so an editable install of a checkout there stays out of the venv.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from helpers.runs import runs

REPO = Path(__file__).resolve().parents[1]


def fresh_venv(root: Path) -> Path:
    """A venv whose own site-packages is empty; its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    own = subprocess.run([python, "-c", purelib], capture_output=True, text=True, check=True)
    dependencies = sysconfig.get_paths()["purelib"]  # this interpreter's site-packages
    (Path(own.stdout.strip()) / "dependencies.pth").write_text(f"{dependencies}\n")
    return python


def packaged_folders() -> set[str]:
    """The checkout's top-level packages as setuptools finds them from pyproject.toml (gnnbench,
    and the hydra_plugins namespace that registers its config schema), so that a package added
    there is copied here too. Asked in a child: importing setuptools here trips its distutils
    shim once distutils is loaded."""
    ask = (
        "from setuptools.config.pyprojecttoml import read_configuration as read\n"
        "for name in read('pyproject.toml')['tool']['setuptools']['packages']: print(name)"
    )
    found = subprocess.run(
        [sys.executable, "-c", ask], cwd=REPO, capture_output=True, text=True, check=True
    )
    return {name.split(".")[0] for name in found.stdout.split()}


def source_tree(root: Path) -> Path:
    """What `pip install .` reads of the checkout, copied (its build leaves no files there)."""
    root.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, root / name)
    ignore = shutil.ignore_patterns("__pycache__")
    for folder in sorted(packaged_folders()):
        shutil.copytree(REPO / folder, root / folder, ignore=ignore)
    return root


@pytest.mark.slow
@pytest.mark.distributed
def test_a_non_editable_install_runs_the_default_job_from_any_directory(tmp_path, gnnbench_home):
    for builder in ("pip", "setuptools"):  # the build runs offline, on this interpreter's own
        if importlib.util.find_spec(builder) is None:  # found, not imported (distutils' shim)
            pytest.skip(f"pip install --no-build-isolation needs {builder}")
    python = fresh_venv(tmp_path / "venv")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    install = [python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
    subprocess.run(
        [*install, "--no-index", str(source_tree(tmp_path / "source"))], env=env, check=True
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = [python, "-c", "import gnnbench; print(gnnbench.__file__)"]
    imported = subprocess.run(where, cwd=elsewhere, env=env, capture_output=True, text=True)
    assert Path(imported.stdout.strip()).is_relative_to(tmp_path / "venv"), imported.stdout
    completed = subprocess.run(
        [python, "-m", "gnnbench", "train.epochs=1"],  # the default job, one epoch of it
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    _, found = runs(elsewhere)
    assert [run.info.status for run in found] == ["FINISHED"]
    params = found[0].data.params
    assert params["dataset.name"] == "synthetic" and params["partitioner.name"] == "spring"
