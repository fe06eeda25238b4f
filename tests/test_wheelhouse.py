"""The offline wheelhouse (gnnbench/setup/wheelhouse.py): what a CUDA machine without a package
index needs, complete for the device image's package list and under the size budget."""

from __future__ import annotations

import ast
import json
import os
import socket
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

from gnnbench.errors import DataError
from gnnbench.paths import REPO_ROOT
from gnnbench.setup import wheelhouse

DEVICE_IMAGE = REPO_ROOT / "docs" / "gpu_check_image.txt"  # the device's pip list --format=freeze
# imported by gnnbench but not needed to run it: each has its own setup or is a developer's tool
OPTIONAL_MODULES = {
    "dgl": "DistDGL's own venv (gnnbench setup distdgl_metis)",
    "torch_sparse": "gnnbench setup pyg_metis",
    "pytest": "the fault matrix (scripts/fault_matrix.py), a developer's tool",
}


def test_present_file_refuses_what_pip_freeze_writes_for_local_installs(tmp_path: Path):
    listing = tmp_path / "freeze.txt"
    listing.write_text(
        "numpy==2.5.2\n# a comment\n\ntorch==2.11.0+cu130\nmypkg @ file:///src/mypkg\n"
    )
    with pytest.raises(DataError, match=r"freeze.txt:5: expected name==version.*--format=freeze"):
        wheelhouse.read_present(listing)
    listing.write_text("NumPy==2.5.2\ntorch==2.11.0+cu130\n")
    assert wheelhouse.read_present(listing) == {"numpy": "2.5.2", "torch": "2.11.0+cu130"}


def test_placeholders_keep_the_present_version_under_a_label_no_index_serves():
    assert wheelhouse.placeholder_version("2.5.2") == "2.5.2+gnnbenchpresent"
    assert wheelhouse.placeholder_version("2.11.0+cu130") == "2.11.0+cu130.gnnbenchpresent"


def test_platform_names_every_older_glibc_and_the_legacy_aliases():
    tags = wheelhouse.platform_tags("manylinux_2_28_x86_64")
    assert tags[0] == "manylinux_2_28_x86_64" and "manylinux_2_17_x86_64" in tags
    assert {"manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"} <= set(tags)
    assert "manylinux_2_29_x86_64" not in tags
    assert wheelhouse.platform_tags("macosx_11_0_arm64") == ["macosx_11_0_arm64"]


def test_runtime_requirements_keep_the_targets_torch_and_take_mlflow_without_its_ui():
    requirements = wheelhouse.runtime_requirements()
    names = {wheelhouse.normalized(wheelhouse._REQUIREMENT_NAME.match(r)[1]) for r in requirements}
    assert "torch==2.13.0" not in requirements  # the CPU pin lives in the `cpu` extra only
    assert {"mlflow-skinny", "sqlalchemy", "alembic", "hydra-core", "memray"} <= names
    assert "mlflow" not in names and "pytest" not in names  # no extra's packages


def imported_distributions() -> dict[str, set[str]]:
    """{top-level module gnnbench imports outside the standard library: its distributions here}."""
    found: dict[str, set[str]] = {}
    owners = packages_distributions()
    for source in (REPO_ROOT / "gnnbench").rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top not in sys.stdlib_module_names and top != "gnnbench":
                    found[top] = {wheelhouse.normalized(d) for d in owners.get(top, [])}
    return found


def index_reachable() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=10).close()
        return True
    except OSError:
        return False


def test_the_wheelhouse_for_the_device_image_is_complete_and_under_budget(tmp_path: Path):
    """Built as a user builds it (the package index reachable), it resolves again offline from
    the image's packages and itself alone (build checks that), every module gnnbench imports at
    run time comes from one or the other, and it fits the budget of what travels to a device."""
    if not index_reachable():
        if os.environ.get("CI") == "true":
            pytest.fail("pypi.org:443 unreachable: the wheelhouse cannot be built")
        pytest.skip("pypi.org:443 unreachable: the wheelhouse cannot be built here")
    out = wheelhouse.build(tmp_path / "wheelhouse", "3.12", "manylinux_2_28_x86_64", DEVICE_IMAGE,
                           wheelhouse.BUDGET_MIB)  # fmt: skip
    manifest = json.loads((out / wheelhouse.MANIFEST).read_text())
    assert manifest["mib"] <= wheelhouse.BUDGET_MIB
    assert all(
        "cp312" in w.name or "-none-any" in w.name or "abi3" in w.name for w in out.glob("*.whl")
    )
    held = set(wheelhouse.read_present(DEVICE_IMAGE)) | {w["name"] for w in manifest["wheels"]}
    for module, distributions in imported_distributions().items():
        if module in OPTIONAL_MODULES:
            continue
        assert distributions & held, f"{module} ({distributions}) neither on the image nor in {out}"
    assert "torch" not in {w["name"] for w in manifest["wheels"]}  # the image's CUDA torch stays
    with pytest.raises(wheelhouse.GnnbenchError, match="over the --budget-mib 1 "):
        wheelhouse.build(out, "3.12", "manylinux_2_28_x86_64", DEVICE_IMAGE, 1.0)
    assert json.loads((out / wheelhouse.MANIFEST).read_text()) == manifest  # a failed rebuild
    assert len(list(out.glob("*.whl"))) == len(manifest["wheels"])  # keeps the older one whole
    assert [p.name for p in tmp_path.iterdir()] == ["wheelhouse"]  # and leaves no temporary


def test_an_over_budget_wheelhouse_names_its_largest_wheels(tmp_path: Path):
    wheel = tmp_path / "big-1.0-py3-none-any.whl"
    wheel.write_bytes(b"0" * 2**20)
    with pytest.raises(
        wheelhouse.GnnbenchError, match=r"1.0 MiB is over the --budget-mib 0.5 .*big-1.0"
    ):
        wheelhouse.check_budget([wheel], 0.5)
