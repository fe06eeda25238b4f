"""Plugins through entry points (gnnbench/plugins.py): a partitioner from another package swept
beside a built-in, a broken plugin and a plugin taking a built-in's name each one line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.cli import gnnbench
from helpers.datasets import CORA, requires_dataset
from helpers.plugin_package import MEMORY_BLOWUP, WORSE_CUT, pip_install, plant, write_plugin

pytestmark = requires_dataset(CORA)
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def plugin_path(tmp_path, monkeypatch):
    """The plugin package (with a broken module and a clashing one) pip-installed into a folder
    on PYTHONPATH, as a user's `pip install` puts it on sys.path."""
    site = pip_install(write_plugin(tmp_path / "plugin", broken=True), tmp_path / "site")
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    )
    return site


def test_a_plugin_partitioner_sweeps_beside_a_built_in(tmp_path, gnnbench_home, plugin_path):
    import mlflow

    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    done = gnnbench(tmp_path, "-m", "dataset=cora", "partitioner=myplugin,hash", "p=2,4",
                    "train=none", f"tracking.uri={store}")  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    warnings = [line for line in done.stderr.splitlines() if line.startswith("gnnbench: warning:")]
    broken = [line for line in warnings if "'myplugin_broken'" in line]
    clash = [line for line in warnings if "myplugin.clash" in line]
    assert len(broken) == 1 and "ModuleNotFoundError" in broken[0], warnings
    assert len(clash) == 1 and "partitioner 'hash' is already" in clash[0], warnings
    client = mlflow.MlflowClient(tracking_uri=store)
    runs = client.search_runs([client.get_experiment_by_name("gnnbench").experiment_id])
    jobs = [r for r in runs if r.data.tags.get("gnnbench.role") == "job"]
    assert sorted((r.data.params["partitioner.name"], r.data.params["p"]) for r in jobs) == [
        ("hash", "2"),
        ("hash", "4"),
        ("myplugin", "2"),
        ("myplugin", "4"),
    ]
    assert all(r.info.status == "FINISHED" for r in jobs)
    mine = [r for r in jobs if r.data.params["partitioner.name"] == "myplugin"]
    assert all(r.data.params["partitioner.scatter"] == "0.0" for r in mine)  # its config file
    cut = {(r.data.params["partitioner.name"], r.data.params["p"]): r.data.metrics["edge_cut"]
           for r in jobs}  # fmt: skip
    assert all(cut["myplugin", p] != cut["hash", p] for p in ("2", "4"))  # its own owners


def test_an_unknown_plugin_name_still_lists_the_loaded_ones(tmp_path, gnnbench_home, plugin_path):
    done = gnnbench(tmp_path, "dataset=cora", "partitioner=nosuch", "train=none")
    assert done.returncode == 2
    error = done.stderr.strip().splitlines()[-1]
    assert error.startswith("gnnbench: error: partitioner=nosuch") and "myplugin" in error


# --- a user's CI: baseline save, then check ----------------------------------------------------
SWEEP = ("-m", "dataset=cora", "partitioner=myplugin,hash", "p=2,4", "train=none")


def sweep_into(root, name: str, plugin_site, sweep=SWEEP) -> str:
    """The sweep on a fresh store and a fresh cache (a CI runner's), its store URI."""
    store = f"sqlite:///{root / f'{name}.db'}"
    env = {"GNNBENCH_HOME": str(root / f"home-{name}"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(plugin_site), os.environ.get("PYTHONPATH")]))}  # fmt: skip
    done = gnnbench(root, *sweep, f"tracking.uri={store}", env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return store


def baseline(root, action: str, file, store: str, *extra: str):
    return gnnbench(root, "baseline", action, str(file), f"--tracking-uri={store}", *extra)


@pytest.fixture
def clean_plugin(tmp_path):
    return pip_install(write_plugin(tmp_path / "plugin"), tmp_path / "site")


def test_baseline_check_names_a_planted_worse_cut_and_memory_blowup(
    tmp_path, gnnbench_home, clean_plugin
):
    import mlflow

    file = tmp_path / "gnnbench-baseline.json"
    saved = baseline(tmp_path, "save", file, sweep_into(tmp_path, "base", clean_plugin))
    assert saved.returncode == 0, saved.stderr
    assert len(json.loads(file.read_text())["jobs"]) == 4

    plant(clean_plugin, WORSE_CUT)
    store = sweep_into(tmp_path, "worse", clean_plugin)
    checked = baseline(tmp_path, "check", file, store)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    regressed = [line for line in checked.stderr.splitlines() if line.startswith("REGRESSED: ")]
    for p in (2, 4):  # each myplugin job named, with the metric
        assert any(f"partitioner.name=myplugin p={p} " in line for line in regressed), regressed
    assert all("myplugin" in line for line in regressed)
    assert any(" edge_cut " in line for line in regressed)
    client = mlflow.MlflowClient(tracking_uri=store)
    (parent,) = client.search_runs(
        [client.get_experiment_by_name("gnnbench").experiment_id], "tags.`gnnbench.role` = 'parent'"
    )
    assert parent.data.tags["baseline_check"].startswith("FAILED: ")
    assert "baseline_check.md" in {a.path for a in client.list_artifacts(parent.info.run_id)}

    plant(clean_plugin, MEMORY_BLOWUP)
    checked = baseline(tmp_path, "check", file, sweep_into(tmp_path, "memory", clean_plugin))
    assert checked.returncode == 1, checked.stdout + checked.stderr
    regressed = [line for line in checked.stderr.splitlines() if line.startswith("REGRESSED: ")]
    assert any(" partition_peak_mb " in line for line in regressed), regressed
    assert all("myplugin" in line for line in regressed)  # hash unchanged (RSS may follow the heap)


@pytest.mark.slow
def test_an_unchanged_plugin_passes_its_baseline_10_times_of_10(
    tmp_path, gnnbench_home, clean_plugin
):
    """The sweep at p=2 only: ten fresh sweeps (store and cache), the jobs' noise is what counts."""
    small = (*SWEEP[:3], "p=2", *SWEEP[4:])
    file = tmp_path / "gnnbench-baseline.json"
    saved = baseline(tmp_path, "save", file, sweep_into(tmp_path, "base", clean_plugin, small))
    assert saved.returncode == 0, saved.stderr
    for attempt in range(10):
        store = sweep_into(tmp_path, f"again{attempt}", clean_plugin, small)
        checked = baseline(tmp_path, "check", file, store)
        assert checked.returncode == 0, (attempt, checked.stdout + checked.stderr)


def readme_ci_block() -> list[str]:
    """The commands of README's CI job (the bash block of "Benchmark your own partitioner in CI")."""
    text = (REPO / "README.md").read_text()
    section = text.split("## Benchmark your own partitioner in CI", 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def test_the_readmes_ci_job_runs_as_written(tmp_path, gnnbench_home):
    """Two fresh checkouts of a user's repository (my-partitioner/ and ci/): the first makes the
    baseline, the second runs README's block line by line and passes. pip installs into a folder
    of the test's (PIP_TARGET, on PYTHONPATH), as it would into the runner's environment."""
    commands = readme_ci_block()
    assert commands[0] == "python -m pip install ./my-partitioner"

    def runner(name: str):
        checkout = tmp_path / name
        write_plugin(checkout, source=checkout / "my-partitioner")
        site = tmp_path / f"site-{name}"
        env = {
            **os.environ,
            "PIP_TARGET": str(site),
            "GNNBENCH_HOME": str(tmp_path / f"home-{name}"),
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])),
            "PIP_NO_BUILD_ISOLATION": "false",
        }  # fmt: skip  (pip reads "false" as: no isolation)
        return checkout, env

    def run(line: str, checkout, env) -> subprocess.CompletedProcess:
        done = subprocess.run(["bash", "-c", line], cwd=checkout, env=env, capture_output=True,
                              text=True, timeout=600)  # fmt: skip
        assert done.returncode == 0, (line, done.stdout[-2000:], done.stderr[-3000:])
        return done

    first, env = runner("first")
    for line in commands[:2]:  # install and sweep, then save the baseline the README asks for
        run(line, first, env)
    run("python -m gnnbench baseline save ci/gnnbench-baseline.json", first, env)
    second, env = runner("second")
    shutil.copytree(first / "ci", second / "ci")  # committed in the user's repository
    for line in commands:
        done = run(line, second, env)
    assert "baseline check against ci/gnnbench-baseline.json: passed" in done.stderr
