"""The mirror in 3-D: the twin's prediction drawn solid, the real arm beside it as a ghost.

``MirrorView(mirror)`` opens MuJoCo's passive viewer on the mirror's twin (its model and
data: the prediction, as the twin computes it). The real arm is drawn into the viewer's
user scene as a ghost: translucent capsules from joint anchor to joint anchor and on to the
TCP, placed by forward kinematics of the latest real joint angles the feedback reported
(``MirrorTwin.compare[arm].real_rad``) in a separate ``MjData``; a joint in alarm is drawn
red. ``update()`` is called from the thread that steps the mirror (it owns the data) at up
to ``VIEW_HZ``; ``close()`` closes the window and joins the viewer's threads. Needs a
display (``NoDisplayError`` otherwise).
"""

from __future__ import annotations

import time
from pathlib import Path

import mujoco
import numpy as np
from rob_twin.models.names import Arm, arm_joints, tcp_site
from rob_twin.twin.render.framing import auto_camera
from rob_twin.twin.viewer.session import (
    TEXT_HZ,
    _grab_screenshot,
    close_and_join,
    launch_joinable,
    require_display,
)

GHOST_RGBA = {Arm.RIGHT: (0.95, 0.55, 0.2, 0.45), Arm.LEFT: (0.2, 0.75, 0.95, 0.45)}
ALARM_RGBA = (1.0, 0.1, 0.1, 0.8)
GHOST_RADIUS_M = 0.03
VIEW_HZ = 15.0  # redraws per wall second, at most: the mirror's own thread pays for each


class MirrorView:
    """A passive viewer on ``mirror``'s twin with the real arm as a ghost (see the module
    docstring)."""

    def __init__(self, mirror, screenshot: str | Path | None = None):
        require_display()
        self.mirror = mirror
        model = mirror.twin.model
        self.model = model
        self._real = mujoco.MjData(model)
        # each arm's joints as the mirror compares them (its robot's count: seven on ROB and
        # OpenArm)
        names = {arm: arm_joints(arm)[: len(mirror.compare[arm].real_rad)] for arm in mirror.arms}
        self._qadr = {
            arm: [int(model.joint(n).qposadr[0]) for n in names[arm]] for arm in mirror.arms
        }
        self._jid = {arm: [int(model.joint(n).id) for n in names[arm]] for arm in mirror.arms}
        self._tcp = {arm: int(model.site(tcp_site(arm)).id) for arm in mirror.arms}
        self.screenshot = screenshot
        self.frames = 0
        self.ghost_geoms = 0
        self._last = self._last_text = 0.0
        self.handle, self._threads = launch_joinable(
            model, mirror.twin.data, show_left_ui=False, show_right_ui=False
        )
        with self.handle.lock():  # both arms in view (the scenarios' auto framing), no rays
            framed = auto_camera(model, mirror.twin.data)
            cam = self.handle.cam
            cam.type = framed.type
            cam.lookat[:] = framed.lookat
            cam.azimuth, cam.elevation, cam.distance = (
                framed.azimuth,
                framed.elevation,
                framed.distance,
            )
            self.handle.opt.flags[mujoco.mjtVisFlag.mjVIS_RANGEFINDER] = False

    def running(self) -> bool:
        return self.handle.is_running()

    def _ghost_points(self) -> dict[Arm, np.ndarray]:
        """Each arm's joint anchors and TCP [m, world] at the real joint angles (the twin's
        angles where a joint has not reported yet)."""
        real = self._real
        real.qpos[:] = self.mirror.twin.data.qpos
        for arm in self.mirror.arms:
            angles = self.mirror.compare[arm].real_rad
            for k, adr in enumerate(self._qadr[arm]):
                if np.isfinite(angles[k]):
                    real.qpos[adr] = angles[k]
        mujoco.mj_kinematics(self.model, real)
        return {
            arm: np.vstack([real.xanchor[self._jid[arm]], real.site_xpos[self._tcp[arm]]])
            for arm in self.mirror.arms
        }

    def _draw(self, scn) -> None:
        scn.ngeom = 0
        alarmed = {(a.arm, a.joint) for a in self.mirror.alarms}
        for arm, points in self._ghost_points().items():
            for k in range(len(points) - 1):
                if scn.ngeom >= scn.maxgeom:
                    return
                rgba = ALARM_RGBA if (arm.value, k + 1) in alarmed else GHOST_RGBA[arm]
                geom = scn.geoms[scn.ngeom]
                mujoco.mjv_initGeom(
                    geom,
                    mujoco.mjtGeom.mjGEOM_CAPSULE,
                    np.zeros(3),
                    np.zeros(3),
                    np.eye(3).flatten(),
                    np.array(rgba, np.float32),
                )
                mujoco.mjv_connector(
                    geom, mujoco.mjtGeom.mjGEOM_CAPSULE, GHOST_RADIUS_M, points[k], points[k + 1]
                )
                scn.ngeom += 1
        self.ghost_geoms = scn.ngeom

    def update(self) -> None:
        """Redraw (at most ``VIEW_HZ`` times a wall second, the text ``TEXT_HZ`` times: setting
        it waits for a rendered frame, which a software renderer makes slowly, and the mirror
        must keep up with the bus): the twin as stepped, the ghost at the latest real
        angles, the worst joint per arm as text."""
        now = time.monotonic()
        if now - self._last < 1.0 / VIEW_HZ or not self.handle.is_running():
            return
        self._last = now
        with self.handle.lock():
            self._draw(self.handle.user_scn)
        self.handle.sync()
        self.frames += 1
        if now - self._last_text < 1.0 / TEXT_HZ:
            return
        self._last_text = now
        lines = []
        for arm, c in self.mirror.compare.items():
            diff = np.abs(c.real_rad - c.twin_rad)
            if np.any(np.isfinite(diff)):
                k = int(np.nanargmax(diff))
                lines.append(f"{arm.value}: worst J{k + 1} {1000 * diff[k]:.1f} mrad (real - twin)")
        lines.append("solid: twin prediction; ghost: real arm (red: alarm)")
        self.handle.set_texts(
            [
                (
                    mujoco.mjtFontScale.mjFONTSCALE_100,
                    mujoco.mjtGridPos.mjGRID_TOPLEFT,
                    "\n".join(lines),
                    None,
                )
            ]
        )

    def close(self) -> str | None:
        """Close the window (a screenshot first when asked); the screenshot's path."""
        shot = None
        if self.screenshot is not None and self.frames:
            shot = _grab_screenshot(Path(self.screenshot))
        close_and_join(self.handle, self._threads)
        return shot
