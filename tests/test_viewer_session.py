"""A whole viewer session under a virtual X server: the crossing scenario starts, a
scripted F8 (the same queue the window's key callback feeds) stops both arms through the
owners, a screenshot lands under out/ and shows the scene, the viewer exits with code 0.
Needs Debian's ``xvfb`` (``make test`` installs it when run as root); skipped otherwise."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "out" / "tests" / "viewer"

pytestmark = pytest.mark.skipif(
    shutil.which("xvfb-run") is None, reason="xvfb-run not installed (Debian package xvfb)"
)


def test_scripted_stop_under_xvfb_stops_both_owners_and_writes_a_screenshot():
    shutil.rmtree(OUT, ignore_errors=True)
    shot, report = OUT / "screen.png", OUT / "report.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT), MUJOCO_GL="glfw")
    cmd = [
        "xvfb-run",
        "-a",
        "-s",
        "-screen 0 800x600x24",
        sys.executable,
        "-m",
        "rob_twin.cli.main",
        "view",
        "experiments/scenarios/crossing_plan.json",
        "--press",
        "0.6:F8",
        "--sim-seconds",
        "1.1",
        "--seconds",
        "120",
        "--screenshot",
        str(shot),
        "--report",
        str(report),
    ]
    run = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    err = run.stderr
    assert run.returncode == 0, (run.returncode, err[-2000:])
    assert "Segmentation fault" not in err and "Fatal Python error" not in err, err[-2000:]
    out = json.loads(report.read_text())
    assert out["simulated_s"] >= 1.1  # it ran to its end, not to the wall-clock cap
    assert out["actions"] == ["STOP: both owners braking to a stop; the plan was aborted"]
    assert out["owner_modes"] == {"right": "stopped", "left": "stopped"}
    assert out["frames_when_stopped"] is not None
    # a stopped owner keeps publishing its held position: nothing moves after the stop
    assert out["commanded_change_after_stop_rad"] == 0.0
    assert out["joint_motion_after_stop_rad"] < 0.01
    img = np.asarray(Image.open(shot).convert("RGB"), dtype=float)
    assert img.shape[0] >= 300 and img.std() > 20  # not a blank screen
    assert len(np.unique(img.reshape(-1, 3)[::97], axis=0)) > 50  # a picture, many colours
