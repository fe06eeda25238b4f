"""The MLflow UI shows a sweep as a person sees it: parent run, its children, replication_factor.

A small partition-only sweep is logged to a fresh SQLite store that `gnnbench server` then serves
on 127.0.0.1, or straight to a running `gnnbench server` (the tracking-server path), and headless
Chromium (driven by selenium through chromedriver) opens the experiment's runs table. MLflow 3's table nests the children under a collapsed parent row and shows no metric
column by default: the test expands the parent, adds `replication_factor` from the "Columns" menu,
checks every child's value against the store, and saves `test-artifacts/dashboard.png`.

Needs the Debian packages `chromium` and `chromium-driver` (CI installs them in `.ci/run`);
skipped without them.
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path

import pytest
from cli import gnnbench
from conftest import CORA, requires_dataset
from tracking_server import TrackingServer

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
METRIC = "replication_factor"
METRIC_COL = f"metrics.`{METRIC}`"  # ag-grid col-id of a metric column


def _require_browser() -> None:
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    if missing:
        pytest.skip(
            f"headless browser not installed ({', '.join(missing)} missing): "
            "apt-get install chromium chromium-driver"
        )
    pytest.importorskip("selenium", reason="selenium not installed (pip install -e '.[test]')")


def _make_sweep(cwd: Path, uri: str) -> tuple[str, dict, dict]:
    """Run the sweep into `uri`; return the experiment id, the parent run and the children by id."""
    import mlflow

    completed = gnnbench(
        cwd, "-m", "dataset=cora", "partitioner=spring,hash", "p=2,4", "train=none",
        f"tracking.uri={uri}", timeout=180,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    client = mlflow.MlflowClient(tracking_uri=uri)
    experiment_id = client.get_experiment_by_name("gnnbench").experiment_id
    runs = client.search_runs([experiment_id])
    (parent,) = [r for r in runs if r.data.tags.get("gnnbench.role") == "parent"]
    children = {
        r.info.run_id: r
        for r in runs
        if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id
    }
    assert len(children) == 4, [r.info.run_name for r in runs]
    return experiment_id, parent, children


@contextmanager
def logged_sweep(tmp_path: Path, store: str):
    """(server, experiment id, parent, children): the sweep logged to SQLite and served after,
    or logged to the server while it runs."""
    if store == "sqlite":
        swept = _make_sweep(tmp_path, f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}")
        with TrackingServer(tmp_path / "store") as server:
            yield (server, *swept)
    else:
        with TrackingServer(tmp_path / "store") as server:
            yield (server, *_make_sweep(tmp_path, server.url))


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
def test_sweep_visible_in_mlflow_ui(tmp_path, gnnbench_home, store):
    _require_browser()
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    (tmp_path / "store").mkdir()
    screenshot = SCREENSHOTS / ("dashboard.png" if store == "sqlite" else f"dashboard-{store}.png")
    with logged_sweep(tmp_path, store) as (server, experiment_id, parent, children):
        expected = {run_id: run.data.metrics[METRIC] for run_id, run in children.items()}
        driver = _chrome(tmp_path / "chromium-profile")
        wait = WebDriverWait(driver, UI_WAIT_S)

        def visible(locator: str, what: str, by=By.XPATH):
            return wait.until(ec.visibility_of_element_located((by, locator)), f"no {what}")

        def run_link(run_id: str) -> str:
            return f"//a[contains(@href, '/runs/{run_id}')]"

        try:
            # MLflow 3 opens an experiment on its GenAI overview; the runs table is the
            # "Model training" view, which the UI itself selects with this query parameter.
            driver.get(
                f"{server.url}/#/experiments/{experiment_id}/runs?workflowType=machine_learning"
            )
            parent_link = visible(run_link(parent.info.run_id), "parent run row")
            assert parent_link.text == parent.info.run_name
            assert parent.info.run_name == "sweep partitioner=spring,hash p=2,4"  # what it sweeps

            # The children are nested under the parent row, collapsed: click its expand button.
            first_child = next(iter(children))
            if not driver.find_elements(By.XPATH, run_link(first_child)):
                parent_link.find_element(
                    By.XPATH, "./ancestor::div[@role='gridcell']//button"
                ).click()
            for run_id, run in children.items():
                assert (
                    visible(run_link(run_id), f"child row {run.info.run_name}").text
                    == run.info.run_name
                )

            # No metric column is shown by default: tick replication_factor under "Columns".
            visible("//button[normalize-space()='Columns']", "Columns button").click()
            wait.until(
                ec.element_to_be_clickable((By.CSS_SELECTOR, f"span[title='{METRIC}']")),
                f"no {METRIC} in the Columns menu",
            ).click()
            driver.switch_to.active_element.send_keys(Keys.ESCAPE)
            for close in driver.find_elements(
                By.CSS_SELECTOR, "button[data-component-id='mlflow.assistant.chat_panel.close']"
            ):
                close.click()  # the assistant side panel would hide the metric column
            header = visible(
                f"div[role='columnheader'][col-id='{METRIC_COL}']",
                f"{METRIC} column",
                By.CSS_SELECTOR,
            )
            assert header.text.strip() == METRIC

            shown = {}
            for run_id in children:
                cell = visible(
                    f"div[role='row'][row-id='{run_id}'] div[col-id='{METRIC_COL}']",
                    f"{METRIC} cell of {children[run_id].info.run_name}",
                    By.CSS_SELECTOR,
                )
                wait.until(
                    lambda _, cell=cell: cell.text.strip() not in ("", "-"),
                    f"no {METRIC} value for {children[run_id].info.run_name}",
                )
                shown[run_id] = float(cell.text.strip())
            assert shown == pytest.approx(expected, rel=1e-6)
        except TimeoutException as exc:
            pytest.fail(f"MLflow UI, after {UI_WAIT_S} s: {exc.msg} (see {screenshot})")
        finally:
            try:
                screenshot.parent.mkdir(exist_ok=True)
                driver.save_screenshot(str(screenshot))
            finally:
                driver.quit()
