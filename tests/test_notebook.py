"""The narrative notebook executes end to end."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def test_headless_run_notebook_executes(tmp_path):
    nb = nbformat.read(NOTEBOOKS / "headless_run.ipynb", as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "simulated 1.00 s" in text and "max tracking error" in text


def test_dual_arm_crossing_notebook_executes(tmp_path):
    nb = nbformat.read(NOTEBOOKS / "dual_arm_crossing.ipynb", as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "ArmGroup plan: 0 of" in text and "synchronized: 0 of" in text
    assert any(o.get("output_type") == "display_data" for c in nb.cells for o in c.get("outputs", []))
