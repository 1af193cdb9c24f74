"""``rob-twin view``: the interactive MuJoCo viewer, paced in real time.

``mujoco.viewer.launch_passive`` kills the process when there is no display, so the
display is checked first and a missing one is reported as NoDisplayError.
"""

from __future__ import annotations

import os
import time

from controllers.names import Arm


class NoDisplayError(RuntimeError):
    """No X11/Wayland display: the interactive viewer cannot open."""


def require_display() -> None:
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        raise NoDisplayError(
            "no display (DISPLAY and WAYLAND_DISPLAY are unset); use `rob-twin demo` or "
            "`rob-twin run SCENARIO` for headless runs with video"
        )


def view(scenario_path: str | None = None) -> int:
    require_display()
    import mujoco.viewer

    from .scenario import Scenario, blended_target, demo_scenario
    from .twin import Twin, TwinConfig

    sc = Scenario.load(scenario_path) if scenario_path else demo_scenario()
    twin = Twin(TwinConfig(seed=sc.seed))
    start = {arm: twin.arm_positions(arm) for arm in Arm}
    frames = {arm: [k for k in sc.keyframes if k.arm is arm] for arm in Arm}
    with mujoco.viewer.launch_passive(twin.model, twin.data) as handle:
        t_wall0 = time.perf_counter()
        while handle.is_running():
            for arm in Arm:
                if frames[arm]:
                    twin.set_arm_targets(arm, blended_target(frames[arm], twin.time % sc.duration, start[arm]))
            twin.step(10)
            handle.sync()
            lag = twin.time - (time.perf_counter() - t_wall0)
            if lag > 0:
                time.sleep(lag)
    return 0
