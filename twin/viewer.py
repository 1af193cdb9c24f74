"""``rob-twin view``: the interactive MuJoCo viewer, paced in real time.

``mujoco.viewer.launch_passive`` kills the process when there is no display, so the
display is checked first and a missing one is reported as NoDisplayError.

Teardown: ``launch_passive`` runs the viewer's render loop in a daemon thread, and closing
the handle only *asks* that loop to stop. Returning at once let the interpreter exit while
that thread was still destroying its window and GL context, racing the ``glfw.terminate``
the viewer registers with atexit: ``rob-twin view`` segfaulted (or hung) at exit about
every other run under Xvfb. ``view`` now keeps the viewer's threads and joins them before
it returns, so GLFW is terminated only after the window is gone.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time

from controllers.errors import RobTwinError
from controllers.names import Arm


class NoDisplayError(RobTwinError, RuntimeError):
    """No X11/Wayland display: the interactive viewer cannot open."""


def require_display() -> None:
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        raise NoDisplayError(
            "no display (DISPLAY and WAYLAND_DISPLAY are unset); use `rob-twin demo` or "
            "`rob-twin run SCENARIO` for headless runs with video"
        )


VIEWER_JOIN_TIMEOUT_S = 10.0


def launch_joinable(model, data):
    """``mujoco.viewer.launch_passive`` plus the threads it started (to join after closing)."""
    import mujoco.viewer

    before = set(threading.enumerate())
    handle = mujoco.viewer.launch_passive(model, data)
    return handle, [t for t in threading.enumerate() if t not in before]


def close_and_join(handle, threads, timeout_s: float = VIEWER_JOIN_TIMEOUT_S) -> bool:
    """Ask the viewer to close and wait until its threads have torn down the window and GL
    context; False (and a warning on stderr) when one is still alive after ``timeout_s``."""
    handle.close()
    deadline = time.monotonic() + timeout_s
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    alive = [t.name for t in threads if t.is_alive()]
    if alive:
        print(f"rob-twin view: viewer thread(s) {alive} still running after {timeout_s} s",
              file=sys.stderr)
    return not alive


def view(scenario_path: str | None = None, max_wall_s: float | None = None) -> int:
    """The scenario runs as headless (initial state, faults, keyframe targets streamed to
    the owners over simulated CAN, plans), paced against the wall clock
    (``ClosedLoop.run_realtime``); keyframes loop, plans run once. max_wall_s: close the
    viewer after this many wall seconds [s] (default: when its window is closed)."""
    require_display()
    from .scenario import Scenario, blended_target, demo_scenario, scenario_loop
    from .scenario_plans import PlanRunner

    sc = Scenario.load(scenario_path) if scenario_path else demo_scenario()
    with scenario_loop(sc) as loop:
        planner = PlanRunner(loop, sc.plans) if sc.plans else None  # plans run once
        start = {arm: loop.measured(arm) for arm in Arm}
        for arm in Arm:
            frames = [k for k in sc.keyframes if k.arm is arm]
            if frames:
                loop.stream_targets(
                    arm, lambda t, f=frames, a=arm: blended_target(f, t % sc.duration, start[a]),
                    sc.target_rate_hz)
        handle, threads = launch_joinable(loop.twin.model, loop.twin.data)
        deadline = math.inf if max_wall_s is None else time.monotonic() + max_wall_s
        try:

            def frame() -> bool:
                handle.sync()
                return handle.is_running() and time.monotonic() < deadline

            loop.run_realtime(float("inf"), frame)
        finally:
            close_and_join(handle, threads)
        if planner is not None:
            planner.close()
    return 0
