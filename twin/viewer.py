"""``rob-twin view``: the interactive MuJoCo viewer, paced in real time.

``mujoco.viewer.launch_passive`` kills the process when there is no display, so the
display is checked first and a missing one is reported as NoDisplayError.
"""

from __future__ import annotations

import os

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


def view(scenario_path: str | None = None) -> int:
    """The scenario runs as headless (initial state, faults, keyframe targets streamed to
    the owners over simulated CAN, plans), paced against the wall clock
    (``ClosedLoop.run_realtime``); keyframes loop, plans run once."""
    require_display()
    import mujoco.viewer

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
        with mujoco.viewer.launch_passive(loop.twin.model, loop.twin.data) as handle:

            def frame() -> bool:
                handle.sync()
                return handle.is_running()

            loop.run_realtime(float("inf"), frame)
        if planner is not None:
            planner.close()
    return 0
