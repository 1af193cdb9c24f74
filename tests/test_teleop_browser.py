"""Headless Chromium drives the desktop page of a running ``rob-twin teleop``: engage the
right hand, move it, and the right arm's owner reports moved commanded joints (the
telemetry is built from ``ArmOwner.commanded_state``); a second page shows the telemetry.
Writes screenshots under out/teleop/.

Needs the Playwright Python package and Debian's chromium (``make test`` installs both
when it can); skips with the reason otherwise. Only 127.0.0.1 traffic."""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

CHROMIUM = os.environ.get("ROB_TWIN_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
OUT = Path("out/teleop")

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')"
)
if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
    pytest.skip(
        f"no chromium at {CHROMIUM} (apt-get install -y chromium, as root)", allow_module_level=True
    )


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def teleop_server():
    """``rob-twin teleop`` in its own process (as a user runs it), headless, on a free
    127.0.0.1 port; yields the page address. Its own interpreter: threads that other
    tests leave behind in this one cannot starve it."""
    env = dict(os.environ, MUJOCO_GL=os.environ.get("MUJOCO_GL", "egl"))
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    # the page's input stream must survive a loaded 2-core machine (a stalled renderer or
    # server thread): the staleness brake, tested on its own in test_teleop_ws.py, gets 1 s
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rob_twin.cli.main",
            "teleop",
            "--no-viewer",
            "--port",
            "0",
            "--input-timeout",
            "1.0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=Path(__file__).resolve().parent.parent,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout], daemon=True).start()
    url, seen, deadline = None, [], time.monotonic() + 90.0
    while url is None and time.monotonic() < deadline and proc.poll() is None:
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            continue
        seen.append(line)
        m = re.search(r"operator page (http://127\.0\.0\.1:\d+/)", line)
        url = m.group(1) if m else None
    assert url, f"rob-twin teleop did not print its address: {''.join(seen)[-2000:]}"
    yield url
    proc.send_signal(signal.SIGINT)  # Ctrl-C: the closed loop and the server shut down
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def _commanded(page, arm: str) -> np.ndarray:
    return np.array(page.evaluate(f"window.teleopPage.telemetry.arms.{arm}.commanded_rad"))


def test_desktop_page_moves_right_arm_and_watcher_sees_it(browser, teleop_server):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(teleop_server)
    page.wait_for_function(
        "window.teleopPage && window.teleopPage.role === 'operator' && window.teleopPage.telemetry",
        timeout=20000,
    )
    q0, left0 = _commanded(page, "right"), _commanded(page, "left")
    page.click("#hand-right")
    page.keyboard.down(" ")  # grip: engage the right hand
    page.wait_for_function("window.teleopPage.telemetry.teleop.hands.right.engaged", timeout=20000)
    page.keyboard.down(
        "w"
    )  # forward at 0.1 m/s until the owner's commanded joints have clearly moved
    deadline = time.monotonic() + 15.0
    while (
        time.monotonic() < deadline and float(np.max(np.abs(_commanded(page, "right") - q0))) < 0.03
    ):
        page.wait_for_timeout(100)
    page.keyboard.up("w")
    page.keyboard.down("r")  # and up a little
    page.wait_for_timeout(300)
    page.keyboard.up("r")
    q1 = _commanded(page, "right")
    tele = page.evaluate("window.teleopPage.telemetry")
    counts = tele["teleop"]["counts"]
    assert float(np.max(np.abs(q1 - q0))) > 0.03, (q0, q1, counts)  # the right arm moved ...
    assert counts.get("targets_submitted", 0) > 10 and counts.get("engagements") == 1, counts
    assert np.array_equal(_commanded(page, "left"), left0)  # ... and only the right one
    assert tele["arms"]["right"]["mode"] == "tracking" and tele["hardware_io"] is False
    page.wait_for_selector("#right-engaged.on", timeout=10000)

    watcher = browser.new_page(viewport={"width": 1400, "height": 900})
    watcher.goto(teleop_server + "watch")
    watcher.wait_for_function("window.watchPage && window.watchPage.frames >= 10", timeout=30000)
    shown = np.array(watcher.evaluate("window.watchPage.last.arms.right.commanded_rad"))
    assert float(np.max(np.abs(shown - q0))) > 0.03  # the watcher sees the motion
    assert "ENGAGED" in watcher.inner_text("#right-state")
    OUT.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(OUT / "desktop_page.png"))
    watcher.wait_for_timeout(700)
    watcher.screenshot(path=str(OUT / "watcher_page.png"))
    page.keyboard.up(" ")  # release: the hand disengages, the arm holds
    page.wait_for_function("!window.teleopPage.telemetry.teleop.hands.right.engaged", timeout=10000)
    assert (OUT / "desktop_page.png").stat().st_size > 10_000
