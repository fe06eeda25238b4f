"""The GPU check (scripts/gpu_check.py): its page regenerates from the committed results file, its
budget is kept whatever a job does, and a machine without CUDA keeps a measured page."""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path

import pytest

from gnnbench.experiments import gpu_check, gpu_doc
from gnnbench.paths import REPO_ROOT

DOCS = REPO_ROOT / "docs"


def load_script():
    spec = importlib.util.spec_from_file_location(
        "gpu_check_script", REPO_ROOT / "scripts" / "gpu_check.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_regenerates_from_the_committed_results(tmp_path: Path):
    load_script().main(["--render", str(DOCS / "gpu_check.json"), "--out", str(tmp_path)])
    assert (tmp_path / "gpu.md").read_text() == (DOCS / "gpu.md").read_text()


def test_a_job_over_its_share_is_stopped_and_recorded_timed_out(tmp_path: Path):
    log = (tmp_path / "log").open("w")
    start = time.monotonic()
    status, wall, last = gpu_check.run_job(
        [sys.executable, "-c", "import time; print('started', flush=True); time.sleep(60)"],
        5.0, {}, tmp_path, log,
    )  # fmt: skip
    assert status == "timed out" and last == "started"
    assert time.monotonic() - start < 5.0 + gpu_check.STOP_GRACE_S
    assert gpu_check.run_job(["true"], 4.0, {}, tmp_path, log)[0] == "not run"  # no time left


def test_a_share_may_overrun_its_weight_but_keeps_the_rest_their_minimum():
    budget = gpu_check.Budget(200.0)
    by_weight = budget.share(1.0, 4.0, groups_after=3, reserve=0.0)
    assert 49 < by_weight <= 200 - 3 * gpu_check.MIN_SHARE_S  # up to OVERRUN x 50 = 150, less 60
    assert budget.share(1.0, 1.0, groups_after=0, reserve=50.0) == pytest.approx(150, abs=1)


def test_jobs_of_a_stopped_sweep_take_their_status_from_the_store():
    group = gpu_check.GROUPS[0]
    outcome = gpu_check.GroupOutcome(
        group.name, "cuda", "timed out", 40.0, 39.0, "x", "gnnbench -m"
    )
    first = group.job_names()[0]
    figures = {("cuda", first): {"run_status": "FINISHED", "metrics": {"epoch_time_s": 1.0}}}
    jobs = gpu_check.job_outcomes([outcome], figures)
    assert [job["status"] for job in jobs] == ["finished"] + ["timed out"] * (len(jobs) - 1)
    assert jobs[0]["metrics"] == {"epoch_time_s": 1.0}


def test_without_cuda_a_measured_page_is_kept(tmp_path: Path, monkeypatch, capsys):
    script = load_script()
    monkeypatch.setattr(script, "has_cuda", lambda: False)
    page = tmp_path / "gpu.md"
    page.write_text(f"# GPU check\n\n{gpu_doc.MEASURED}\n")
    assert script.main(["--out", str(tmp_path)]) == 0
    assert "no CUDA device: not run" in capsys.readouterr().out
    assert gpu_doc.MEASURED in page.read_text()
    page.unlink()
    script.main(["--out", str(tmp_path)])
    assert "No CUDA device: not run" in page.read_text()


def test_a_check_stopped_by_sigterm_leaves_no_job_running(tmp_path: Path):
    """The check's SIGTERM unwinds through run_job, which stops the job's process group."""
    import os
    import signal
    import subprocess

    pid_file = tmp_path / "job.pid"
    job = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(120)"
    driver = (
        "import signal, sys\n"
        "from gnnbench.experiments.gpu_check import run_job\n"
        "signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))\n"
        f"run_job([sys.executable, '-c', {job!r}], 100.0, None, {str(tmp_path)!r}, open(sys.argv[1], 'w'))\n"
    )  # fmt: skip
    check = subprocess.Popen([sys.executable, "-c", driver, str(tmp_path / "log")], cwd=REPO_ROOT)
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    job_pid = int(pid_file.read_text())
    check.send_signal(signal.SIGTERM)
    assert check.wait(30) == 143
    with pytest.raises(ProcessLookupError):
        os.kill(job_pid, 0)


def test_a_rerun_replaces_only_its_own_jobs_and_is_named_on_the_page():
    earlier = json.loads((DOCS / "gpu_check.json").read_text())
    redone = next(o for o in earlier["outcomes"] if o["device"] == "cuda" and "metrics" in o)
    rerun = {**earlier, "started": "later", "budget_s": 99.0,
             "outcomes": [{**redone, "metrics": {**redone["metrics"], "epoch_time_s": 123.0}}]}  # fmt: skip
    results = gpu_check.merged(earlier, rerun)
    assert len(results["outcomes"]) == len(earlier["outcomes"])
    mine = [o for o in results["outcomes"] if (o["device"], gpu_doc.job_of(o))
            == (redone["device"], gpu_doc.job_of(redone))]  # fmt: skip
    assert [o["metrics"]["epoch_time_s"] for o in mine] == [123.0]
    assert results["reruns"][-1]["jobs"] == [gpu_doc.job_of(redone)]
    assert "Rerun later" in gpu_doc.measured_doc(results)


def test_only_names_a_dataset_of_the_check():
    assert {g.dataset for g in gpu_check.groups_of(["cora"])} == {"cora"}
    with pytest.raises(SystemExit, match="--only nope"):
        gpu_check.groups_of(["nope"])
