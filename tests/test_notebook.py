"""notebooks/compare_partitioners.ipynb runs top to bottom against a small sweep store."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")
pytest.importorskip("ipykernel")

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "compare_partitioners.ipynb"
KERNEL = "gnnbench-test-python"


@pytest.fixture
def this_python_kernel(tmp_path, monkeypatch) -> str:
    """A kernelspec that runs ipykernel in this interpreter, found first through JUPYTER_PATH, so
    neither a user's own `python3` kernelspec nor an installed one (argv "python") is picked up;
    Jupyter's runtime and IPython's profile go to tmp_path too."""
    jupyter = tmp_path / "jupyter"
    spec = jupyter / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": KERNEL, "language": "python"})
    )
    monkeypatch.setenv("JUPYTER_PATH", str(jupyter))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    return KERNEL


def test_notebook_runs_on_a_sweep(small_sweep_store, this_python_kernel, tmp_path, monkeypatch):
    store = small_sweep_store
    monkeypatch.setenv("GNNBENCH_TRACKING_URI", store.tracking_uri)
    monkeypatch.setenv("GNNBENCH_SWEEP_ID", store.sweep_id)
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        kernel_name=this_python_kernel,
        timeout=180,
        resources={"metadata": {"path": str(tmp_path)}},  # the kernel's working directory
    )
    client.execute()  # raises CellExecutionError naming the cell if any cell fails

    outputs = [out for cell in notebook.cells if cell.cell_type == "code" for out in cell.outputs]
    assert not [out for out in outputs if out.output_type == "error"]
    text = "\n".join(
        out.get("data", {}).get("text/markdown", "") + out.get("data", {}).get("text/plain", "")
        for out in outputs
    )
    assert f"Sweep `{store.sweep_id}`" in text
    assert "FAILED" in text  # the table shows the failed job
    images = [out for out in outputs if "image/png" in out.get("data", {})]
    assert len(images) == 4
