"""``rob-twin view`` under a virtual X server exits cleanly (no crash or hang at interpreter
exit while the viewer's render thread tears down its window). Needs Debian's ``xvfb``
(``make test`` installs it when run as root)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUNS = 2  # the crash hit about one exit in three: two clean runs in a row are required

pytestmark = pytest.mark.skipif(
    shutil.which("xvfb-run") is None, reason="xvfb-run not installed (Debian package xvfb)"
)


def test_viewer_opens_and_exits_with_code_0_under_xvfb():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    code = (
        "from rob_twin.twin.viewer.session import view; "
        "raise SystemExit(view(None, max_wall_s=0.5))"
    )
    for _ in range(RUNS):
        run = subprocess.run(
            ["xvfb-run", "-a", sys.executable, "-c", code],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        err = run.stderr
        assert run.returncode == 0, (run.returncode, err[-2000:])
        assert "Segmentation fault" not in err and "Fatal Python error" not in err, err[-2000:]
        assert "still running" not in err, err[-2000:]


def test_view_json_prints_one_object_with_the_sessions_outcome():
    """``rob-twin view --json``: stdout is exactly one JSON object when the window closes."""
    import json

    rob_twin = Path(sys.executable).parent / "rob-twin"
    run = subprocess.run(
        ["xvfb-run", "-a", str(rob_twin), "view", "--json", "--seconds", "0.5"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])
    obj = json.loads(run.stdout)
    assert obj["exit_code"] == 0 and obj["hardware_io"] is False and obj["outcome"]
