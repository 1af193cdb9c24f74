"""Headless Chromium drives the desktop page: engage the right hand, move it, and the arm
moves through its owner; a second page shows the telemetry. Writes a screenshot under out/.

Needs the Playwright Python package and Debian's chromium (``make test`` installs both
when it can); skips with the reason otherwise. Only 127.0.0.1 traffic."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from teleop_support import start_app

from controllers.names import Arm

CHROMIUM = os.environ.get("ROB_TWIN_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
OUT = Path("out/teleop")

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
    pytest.skip(f"no chromium at {CHROMIUM} (apt-get install -y chromium, as root)", allow_module_level=True)


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield b
        b.close()


def test_desktop_page_moves_right_arm_and_watcher_sees_it(browser):
    with start_app(camera_hz=2.0) as app:
        owner = app.controller.owners[Arm.RIGHT]
        q0 = owner.commanded_state()[0]
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(app.server.url)
        page.wait_for_function("window.teleopPage && window.teleopPage.role === 'operator'", timeout=10000)
        page.click("#hand-right")
        page.keyboard.down(" ")  # grip: engage the right hand
        page.wait_for_function("window.teleopPage.telemetry && window.teleopPage.telemetry.teleop.hands.right.engaged",
                               timeout=20000)
        page.keyboard.down("w")  # forward at 0.1 m/s, then up, until the arm has clearly moved
        deadline = time.monotonic() + 8.0
        while time.monotonic() < deadline and float(np.max(np.abs(owner.commanded_state()[0] - q0))) < 0.03:
            time.sleep(0.1)
        page.keyboard.up("w")
        page.keyboard.down("r")
        time.sleep(0.3)
        page.keyboard.up("r")
        q1 = owner.commanded_state()[0]
        counts = dict(app.controller.counts)
        assert counts.get("targets_submitted", 0) > 20, counts
        assert float(np.max(np.abs(q1 - q0))) > 0.03, (q0, q1, counts)
        assert counts.get("engagements") == 1, counts  # one grip press, held throughout
        page.wait_for_selector("#right-engaged.on", timeout=10000)

        watcher = browser.new_page(viewport={"width": 1400, "height": 900})
        watcher.goto(app.server.url + "watch")
        watcher.wait_for_function("window.watchPage && window.watchPage.frames >= 10", timeout=20000)
        shown = watcher.evaluate("window.watchPage.last.arms.right.commanded_rad")
        assert np.allclose(shown, owner.commanded_state()[0], atol=0.02)  # 30 Hz snapshot of a moving arm
        assert float(np.max(np.abs(np.array(shown) - q0))) > 0.02  # the watcher sees the motion
        assert "ENGAGED" in watcher.inner_text("#right-state")
        OUT.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(OUT / "desktop_page.png"))
        watcher.wait_for_timeout(700)
        watcher.screenshot(path=str(OUT / "watcher_page.png"))
        page.keyboard.up(" ")  # release: the arm holds
        page.wait_for_function("!window.teleopPage.telemetry.teleop.hands.right.engaged", timeout=10000)
        assert (OUT / "desktop_page.png").stat().st_size > 10_000
