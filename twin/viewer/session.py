"""``rob-twin view``: the interactive MuJoCo viewer, paced in real time.

First view: the scenario's first camera (the one its video records; ``overview`` when it
lists none), range-finder rays and contacts off (``End`` or MuJoCo's ``Y`` brings them
back). On screen: the live status (``rob_twin.twin.viewer.status``) and the key list
(``rob_twin.twin.viewer.keys``: Stop, reset, next plan step, re-plan, traces, planned path), each
key acting through the owners and the executor.

``mujoco.viewer.launch_passive`` kills the process when there is no display, so the
display is checked first and a missing one is reported as NoDisplayError.

Teardown: ``launch_passive`` runs the viewer's render loop in a daemon thread, and closing
the handle only *asks* that loop to stop. ``view`` keeps the viewer's threads and joins them
before it returns, so the ``glfw.terminate`` the viewer registers with atexit runs only
after the window and its GL context are gone (an exit that raced that teardown could
crash or hang the interpreter).
"""

from __future__ import annotations

import json
import math
import os
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rob_twin.models.errors import RobTwinError
from rob_twin.models.names import Arm


class NoDisplayError(RobTwinError, RuntimeError):
    """No X11/Wayland display: the interactive viewer cannot open."""


def require_display() -> None:
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        raise NoDisplayError(
            "no display (DISPLAY and WAYLAND_DISPLAY are unset); use `rob-twin demo` or "
            "`rob-twin run SCENARIO` for headless runs with video"
        )


VIEWER_JOIN_TIMEOUT_S = 10.0
SYNC_HZ = 30.0  # window refreshes per wall second, at most
TEXT_HZ = 2.0  # status text updates per wall second (each waits for a rendered frame)


def launch_joinable(model, data, **kwargs):
    """``mujoco.viewer.launch_passive`` plus the threads it started (to join after closing);
    ``kwargs`` go to ``launch_passive`` (``key_callback``)."""
    import mujoco.viewer

    before = set(threading.enumerate())
    handle = mujoco.viewer.launch_passive(model, data, **kwargs)
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
        print(
            f"rob-twin view: viewer thread(s) {alive} still running after {timeout_s} s",
            file=sys.stderr,
        )
    return not alive


def first_view_camera(cameras: list[str]) -> str:
    """The camera a session starts from: the scenario's first named camera (the one its
    video records), else the scene's ``overview`` (``auto`` is a video's free camera)."""
    return next((c for c in cameras if c != "auto"), "overview")


@dataclass
class ViewOutcome:
    """What a viewer session did (for ``--report``): owner modes at the end, bus frames
    sent when both owners first reported STOPPED and at the end (a stopped owner keeps
    publishing its held position), how far the commanded and the simulated joints moved
    after that [rad], the key actions."""

    owner_modes: dict[str, str] = field(default_factory=dict)
    frames_when_stopped: dict[str, int] | None = None
    frames_at_end: dict[str, int] = field(default_factory=dict)
    actions: list[str] = field(default_factory=list)
    commanded_change_after_stop_rad: float | None = None
    joint_motion_after_stop_rad: float | None = None
    screenshot: str | None = None
    simulated_s: float = 0.0


def _frames_sent(loop) -> dict[str, int]:
    return {a.value: d.transport.counters.frames_sent for a, d in loop.drivers.items()}


def _draw_markers(scn, controls) -> None:
    """TCP traces (small spheres, arm colours) and the planned path (larger, pale) into
    the viewer's user scene."""
    import mujoco
    import numpy as np

    scn.ngeom = 0
    eye = np.eye(3).flatten()

    def sphere(pos, radius_m: float, rgba) -> None:
        if scn.ngeom < scn.maxgeom:
            mujoco.mjv_initGeom(
                scn.geoms[scn.ngeom],
                mujoco.mjtGeom.mjGEOM_SPHERE,
                np.array([radius_m, 0, 0]),
                np.asarray(pos, float),
                eye,
                np.array(rgba, np.float32),
            )
            scn.ngeom += 1

    colours = {Arm.RIGHT: (0.9, 0.25, 0.2), Arm.LEFT: (0.2, 0.45, 0.95)}
    if controls.show_ghost:
        for arm, path in controls.ghost.items():
            for p in path:
                sphere(p, 0.012, (*colours[arm], 0.35))
    if controls.show_traces:
        for arm, trace in controls.traces.items():
            for p in trace[::3]:
                sphere(p, 0.005, (*colours[arm], 0.9))


def _grab_screenshot(path: Path) -> str:
    """The X display as a PNG at ``path`` (PIL's X11 grab)."""
    from PIL import ImageGrab

    path.parent.mkdir(parents=True, exist_ok=True)
    ImageGrab.grab(xdisplay=os.environ.get("DISPLAY")).save(path)
    return str(path)


def view(
    scenario_path: str | None = None,
    max_wall_s: float | None = None,
    presses: list[tuple[float, int]] | None = None,
    screenshot: Path | None = None,
    report: Path | None = None,
    quality: str | None = None,
    max_sim_s: float | None = None,
    calibration=None,
    robot: str | None = None,
) -> int:
    """The scenario runs as headless (initial state, faults, keyframe targets streamed to
    the owners over simulated CAN, plans), paced against the wall clock
    (``ClosedLoop.run_realtime``); keyframes loop, plans run once. max_wall_s: close the
    viewer after this many wall seconds [s] (default: when its window is closed).
    ``presses``: (simulated time [s], GLFW key code) pressed as if typed (a scripted
    session); ``screenshot``: a PNG of the display taken just before closing;
    ``report``: the session's ViewOutcome as JSON; ``max_sim_s``: close once this much
    simulated time [s] has run; ``calibration``: a loaded calibration for the twin's model and
    drives (``rob_twin.twin.calibration``); ``quality``: render quality (default:
    the scenario's, ``auto``: fast on a software GL renderer). The window is refreshed at
    most ``SYNC_HZ`` times per wall second: a sync waits for the render thread, which on a
    software renderer takes longer than a physics step."""
    require_display()
    import mujoco
    import numpy as np
    from rob_twin.twin.render.quality import apply_model_quality, resolve_quality
    from rob_twin.twin.scenario.plan_steps import PlanRunner
    from rob_twin.twin.scenario.run import (
        Scenario,
        blended_target,
        demo_scenario,
        scenario_loop,
    )
    from rob_twin.twin.viewer.keys import ViewerControls
    from rob_twin.twin.viewer.status import StatusBoard

    # robot: overrides the scenario's (None: the scenario's; the demo: ROB)
    sc = Scenario.load(scenario_path, robot) if scenario_path else demo_scenario(robot)
    outcome = ViewOutcome()
    script = sorted(presses or [])
    with scenario_loop(sc, calibration=calibration) as loop:
        planner = PlanRunner(loop, sc.plans) if sc.plans else None  # plans run once
        start = {arm: loop.measured(arm) for arm in Arm}
        for arm in Arm:
            frames = [k for k in sc.keyframes if k.arm is arm]
            if frames:
                loop.stream_targets(
                    arm,
                    lambda t, f=frames, a=arm: blended_target(f, t % sc.duration, start[a]),
                    sc.target_rate_hz,
                )
        apply_model_quality(loop.twin.model, resolve_quality(quality or sc.quality))
        controls = ViewerControls(loop, planner)
        board = StatusBoard(loop, planner)
        # the side panels would cover half the picture: Tab / Shift+Tab bring them back
        handle, threads = launch_joinable(
            loop.twin.model,
            loop.twin.data,
            key_callback=controls.press,
            show_left_ui=False,
            show_right_ui=False,
        )
        camera = first_view_camera(sc.cameras)
        with handle.lock():
            handle.cam.type = mujoco.mjtCamera.mjCAMERA_FIXED
            handle.cam.fixedcamid = mujoco.mj_name2id(
                loop.twin.model, mujoco.mjtObj.mjOBJ_CAMERA, camera
            )
        deadline = math.inf if max_wall_s is None else time.monotonic() + max_wall_s
        count, last_sync, last_text = [0], [0.0], [-math.inf]
        shown: list = [None]  # the messages last put on screen
        held: list = [None]  # commanded positions when both owners reported STOPPED
        try:

            def frame() -> bool:
                while script and loop.time + 1e-9 >= script[0][0]:
                    controls.press(script.pop(0)[1])
                outcome.actions += controls.apply()
                modes = [d.owner.mode.value for d in loop.drivers.values()]
                if outcome.frames_when_stopped is None and all(m == "stopped" for m in modes):
                    outcome.frames_when_stopped = _frames_sent(loop)
                    held[0] = {a: loop.commanded(a) for a in Arm}
                count[0] += 1
                if count[0] % 2 == 0:
                    controls.record_traces()
                wall = time.monotonic()
                if max_sim_s is not None and loop.time >= max_sim_s:
                    return False
                if wall - last_sync[0] < 1.0 / SYNC_HZ:
                    return handle.is_running() and wall < deadline
                last_sync[0] = wall
                controls.update_ghost()
                with handle.lock():
                    flags = handle.opt.flags
                    flags[mujoco.mjtVisFlag.mjVIS_RANGEFINDER] = controls.show_debug
                    flags[mujoco.mjtVisFlag.mjVIS_CONTACTPOINT] = controls.show_debug
                    _draw_markers(handle.user_scn, controls)
                if wall - last_text[0] >= 1.0 / TEXT_HZ or controls.messages is not shown[0]:
                    last_text[0], shown[0] = wall, controls.messages
                    small = mujoco.mjtFontScale.mjFONTSCALE_100
                    texts = [
                        (
                            small,
                            mujoco.mjtGridPos.mjGRID_TOPLEFT,
                            "\n".join(board.lines() + controls.messages[-2:]),
                            None,
                        )
                    ]
                    if controls.show_keys:
                        texts.append(
                            (small, mujoco.mjtGridPos.mjGRID_BOTTOMRIGHT, controls.key_list(), None)
                        )
                    handle.set_texts(texts)
                handle.sync()
                return handle.is_running() and time.monotonic() < deadline

            loop.run_realtime(float("inf"), frame)
            if screenshot is not None:
                outcome.screenshot = _grab_screenshot(Path(screenshot))
        finally:
            close_and_join(handle, threads)
        board.close()
        outcome.owner_modes = {a.value: d.owner.mode.value for a, d in loop.drivers.items()}
        outcome.frames_at_end = _frames_sent(loop)
        if held[0] is not None:
            outcome.commanded_change_after_stop_rad = max(
                float(np.max(np.abs(loop.commanded(a) - q))) for a, q in held[0].items()
            )
            outcome.joint_motion_after_stop_rad = max(
                float(np.max(np.abs(loop.measured(a) - q))) for a, q in held[0].items()
            )
        outcome.simulated_s = round(loop.time, 4)
        if planner is not None:
            planner.close()
    if report is not None:
        Path(report).parent.mkdir(parents=True, exist_ok=True)
        Path(report).write_text(json.dumps(asdict(outcome), indent=1))
    return 0
