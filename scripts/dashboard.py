"""The MLflow UI as a sweep's printed URL opens it -> docs/dashboard.png.

    python scripts/dashboard.py

Runs the browser test on its SQLite store (tests/test_dashboard.py: a 4-job cora sweep, the URL
it printed opened in headless Chromium, every job's edge cut and test F1 checked against the
store) and copies the screenshot it saved into docs/. Needs chromium and chromium-driver.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

from gnnbench.commands import without_arguments
from gnnbench.paths import REPO_ROOT

TEST = "tests/test_dashboard.py::test_the_printed_url_opens_on_the_sweeps_jobs_and_figures[sqlite]"
SCREENSHOT = REPO_ROOT / "test-artifacts" / "dashboard.png"
DOC = REPO_ROOT / "docs" / "dashboard.png"


def main() -> int:
    SCREENSHOT.unlink(missing_ok=True)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", TEST],
                          cwd=REPO_ROOT)  # fmt: skip
    if done.returncode != 0:
        print(f"dashboard: the test failed; {DOC} not updated", file=sys.stderr)
        return done.returncode
    if not SCREENSHOT.is_file():  # skipped: no browser, or no cora
        print(f"dashboard: the test was skipped (pytest -rs says why); {DOC} not updated",
              file=sys.stderr)  # fmt: skip
        return 1
    shutil.copyfile(SCREENSHOT, DOC)
    print(f"dashboard: wrote {DOC}")
    return 0


if __name__ == "__main__":
    without_arguments(__doc__)  # --help prints the usage and runs nothing
    sys.exit(main())
