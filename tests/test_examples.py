"""Every script in examples/ runs as a user would run it (a fresh interpreter, from the
repository root) and prints what its docstring promises."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))

# What each example must print (a regular expression per line); a new example needs a row.
PROMISES = {
    "plan_and_execute.py": [
        r"plan: \d+\.\d\d s, \d+ samples, clearance \d+\.\d mm",
        r"executed: COMPLETED, 0 colliding states",
    ],
    "run_scenario.py": [
        r"wave: completed, 1\.50 s simulated",
        r"right: largest tracking error 0\.0\d+ rad, 0 targets refused",
    ],
    "bank_with_python_can.py": [
        r"joint 4 target 1\.776 rad; feedback frames [1-9]\d*",
        r"joint 4 measured: first 1\.5\d+ rad, last 1\.7[5-9]\d rad",
    ],
}


def test_every_example_has_a_promise():
    assert sorted(p.name for p in EXAMPLES) == sorted(PROMISES)


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs_and_prints_what_it_promises(script):
    run = subprocess.run(
        [sys.executable, str(script)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    for pattern in PROMISES[script.name]:
        assert re.search(pattern, run.stdout), (pattern, run.stdout)
