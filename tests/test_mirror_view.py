"""``rob-twin mirror --view`` under a virtual X server: the window opens on the mirror's twin,
the real arm is drawn as a ghost (14 capsules: seven per arm), a screenshot is written and
the mirror still ends 0 with no alarm. Needs Debian's xvfb (``make test`` installs it when
run as root); skipped otherwise."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from bank_support import running_bank

BIN = Path(sys.executable).parent
pytestmark = pytest.mark.skipif(
    shutil.which("xvfb-run") is None, reason="xvfb-run not installed (Debian package xvfb)"
)


def test_mirror_view_draws_the_real_arm_as_a_ghost(tmp_path):
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    with running_bank(tmp_path) as bank:
        port = str(bank.socketcand_port)
        shot = tmp_path / "mirror.png"
        mirror = subprocess.Popen(
            ["xvfb-run", "-a", str(BIN / "rob-twin"), "mirror", "--view", "--port", port]
            + ["--seconds", "5", "--screenshot", str(shot), "--json", "--max-lag", "30"],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        first = mirror.stderr.readline()
        assert "listening (never transmitting)" in first, first + mirror.stderr.read()
        host = subprocess.run(
            [str(BIN / "rob-twin"), "host", "--port", port, "--seconds", "2"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert host.returncode == 0, host.stderr[-2000:]
        out, err = mirror.communicate(timeout=90)
    assert mirror.returncode == 0, f"{out}\n{err[-2000:]}"
    summary = json.loads(out)
    assert summary["view"]["frames"] > 0 and summary["view"]["ghost_geoms"] == 14, summary["view"]
    assert not summary["alarms"] and summary["send_attempts"] == 0
    assert shot.stat().st_size > 10_000


def test_mirror_view_without_a_display_exits_3():
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    done = subprocess.run(
        [str(BIN / "rob-twin"), "mirror", "--view", "--seconds", "1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 3 and "no display" in done.stderr
