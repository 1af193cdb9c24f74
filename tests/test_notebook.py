"""The narrative notebooks execute end to end, against this checkout's packages."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"


@pytest.fixture(autouse=True)
def _kernel_imports_this_checkout(monkeypatch):
    """The kernel runs in a temporary folder: put this checkout first on its path (not an
    installed copy of the packages)."""
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    )


def _execute(name: str, folder: Path) -> tuple[list[dict], str]:
    """Run notebook ``name`` the usual way, ``jupyter nbconvert --to notebook --execute``
    (the test extras install nbconvert), with ``folder`` as its working folder: (every
    output of its code cells, their printed text)."""
    jupyter = Path(sys.executable).parent / "jupyter"
    source, executed = folder / name, folder / f"executed_{name}"
    shutil.copy(NOTEBOOKS / name, source)  # the kernel runs in the notebook's folder
    done = subprocess.run(
        [str(jupyter), "nbconvert", "--to", "notebook", "--execute", str(source)]
        + ["--output", str(executed), "--ExecutePreprocessor.timeout=300"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"nbconvert --execute {name} failed:\n{done.stderr[-3000:]}"
    nb = nbformat.read(executed, as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    return outputs, "".join(o.get("text", "") for o in outputs)


def test_headless_run_notebook_executes(tmp_path):
    _, text = _execute("headless_run.ipynb", tmp_path)
    assert "simulated 1.00 s" in text and "max tracking error" in text


def test_dual_arm_crossing_notebook_executes(tmp_path):
    outputs, text = _execute("dual_arm_crossing.ipynb", tmp_path)
    assert "ArmGroup plan: 0 of" in text and "synchronized: 0 of" in text
    assert any(o.get("output_type") == "display_data" for o in outputs)


def test_collision_study_notebook_executes(tmp_path):
    outputs, text = _execute("collision_study.ipynb", tmp_path)
    assert "arms.0='middle' is invalid" in text and "12 of 12 tasks" in text
    assert "'error'" not in text  # every margin plans (20 mm once gave only error rows)
    assert "same as stored: True" in text
    images = [o for o in outputs if o.get("output_type") == "display_data"]
    assert len(images) == 3 and all("image/png" in o["data"] for o in images)
