"""The MLflow UI shows a sweep as a person sees it: the URL gnnbench prints opens on the sweep's
jobs with their figures as columns, with no clicks.

A small training sweep is logged to a fresh SQLite store that `gnnbench server` then serves on
127.0.0.1, or straight to a running `gnnbench server` (the tracking-server path). Headless
Chromium (driven by selenium through chromedriver) opens the URL the sweep printed at its end
(for SQLite, with the printed `mlflow ui` port replaced by the test server's): every job's row
must be on the first screen with its edge cut and test F1 equal to the store's. The screenshot
goes to `test-artifacts/dashboard.png` (`dashboard-server.png`); `python scripts/dashboard.py`
runs the SQLite case and copies it to docs/dashboard.png.

Needs the Debian packages `chromium` and `chromium-driver` (CI installs them in `.ci/run`);
skipped without them.
"""

from __future__ import annotations

import os
import re
import shutil
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers.cli import gnnbench
from helpers.datasets import CORA, requires_dataset
from helpers.tracking_server import TrackingServer

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[1]
SCREENSHOTS = REPO / "test-artifacts"  # dashboard.png (SQLite store), dashboard-server.png
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--window-size=1600,900",
)
UI_WAIT_S = 30  # bound on each wait for the React app
COLUMNS = ("edge_cut", "test_f1_micro")  # what the first screen must show for every job


def _require_browser() -> None:
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    if missing:
        pytest.skip(
            f"headless browser not installed ({', '.join(missing)} missing): "
            "apt-get install chromium chromium-driver"
        )
    pytest.importorskip("selenium", reason="selenium not installed (pip install -e '.[test]')")


def _make_sweep(cwd: Path, uri: str) -> tuple[str, dict, str]:
    """Run the sweep into `uri`; return the experiment id, its job runs by id, and the URL it
    printed."""
    import mlflow

    completed = gnnbench(
        cwd, "-m", "dataset=cora", "partitioner=spring,hash", "p=2,4", "train.epochs=1",
        f"tracking.uri={uri}", timeout=600,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    (url,) = re.findall(r"(?:then )?open (http\S+)$", completed.stderr, flags=re.M)
    client = mlflow.MlflowClient(tracking_uri=uri)
    experiment_id = client.get_experiment_by_name("gnnbench").experiment_id
    runs = client.search_runs([experiment_id])
    jobs = {r.info.run_id: r for r in runs if r.data.tags.get("gnnbench.role") == "job"}
    assert len(jobs) == 4, [r.info.run_name for r in runs]
    return experiment_id, jobs, url


@contextmanager
def logged_sweep(tmp_path: Path, store: str):
    """(server, experiment id, jobs, printed URL): the sweep logged to SQLite and served after
    (the URL's `mlflow ui` address replaced by the server's), or logged to the server itself."""
    if store == "sqlite":
        experiment_id, jobs, url = _make_sweep(
            tmp_path, f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
        )
        with TrackingServer(tmp_path / "store") as server:
            yield server, experiment_id, jobs, re.sub(r"^http://[^/]+", server.url, url)
    else:
        with TrackingServer(tmp_path / "store") as server:
            experiment_id, jobs, url = _make_sweep(tmp_path, server.url)
            assert url.startswith(server.url)
            yield server, experiment_id, jobs, url


def _chrome(user_data_dir: Path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (*CHROMIUM_ARGS, f"--user-data-dir={user_data_dir}"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(UI_WAIT_S)
    return driver


@requires_dataset(CORA)
@pytest.mark.parametrize("store", ["sqlite", "server"])
def test_the_printed_url_opens_on_the_sweeps_jobs_and_figures(tmp_path, gnnbench_home, store):
    _require_browser()
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    (tmp_path / "store").mkdir()
    screenshot = SCREENSHOTS / ("dashboard.png" if store == "sqlite" else f"dashboard-{store}.png")
    with logged_sweep(tmp_path, store) as (server, experiment_id, jobs, url):
        assert "viewStateShareKey=" in url and "workflowType=machine_learning" in url
        driver = _chrome(tmp_path / "chromium-profile")
        wait = WebDriverWait(driver, UI_WAIT_S)

        def visible(css: str, what: str):
            return wait.until(
                ec.visibility_of_element_located((By.CSS_SELECTOR, css)), f"no {what}"
            )

        try:
            driver.get(url)  # and nothing else: no click, no key
            for run_id, run in jobs.items():
                row = f"div[role='row'][row-id='{run_id}']"
                link = visible(f"{row} a[href*='/runs/{run_id}']", f"row of {run.info.run_name}")
                assert link.text == run.info.run_name
                for metric in COLUMNS:
                    cell = visible(f"{row} div[col-id='metrics.`{metric}`']", f"{metric} cell")
                    wait.until(lambda _, c=cell: c.text.strip() not in ("", "-"), f"no {metric}")
                    assert float(cell.text) == pytest.approx(run.data.metrics[metric], abs=1e-3)
                assert driver.execute_script(  # on the first screen: inside the window
                    "const r = arguments[0].getBoundingClientRect();"
                    "return r.top >= 0 && r.bottom <= window.innerHeight",
                    link,
                )
            parent = driver.find_elements(By.XPATH, "//a[starts-with(normalize-space(), 'sweep ')]")
            assert not parent, "the parent row is filtered out: the jobs are not folded under it"
        except TimeoutException as exc:
            pytest.fail(f"MLflow UI, after {UI_WAIT_S} s: {exc.msg} (see {screenshot})")
        finally:
            try:
                screenshot.parent.mkdir(exist_ok=True)
                driver.save_screenshot(str(screenshot))
            finally:
                driver.quit()
