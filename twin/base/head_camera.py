"""The head camera: RGB and depth images from the pan/tilt head, with matching intrinsics.

MuJoCo's camera is an ideal pinhole looking along its -z axis (x right, y up) with a
vertical field of view ``fovy``; for an image ``width`` x ``height`` pixels the matching
intrinsics (pixel ``i`` spans ``[i, i + 1)``, rows down) are::

    fy = fx = (height / 2) / tan(fovy / 2)      cx = width / 2      cy = height / 2

``project`` maps world points to pixel coordinates with those intrinsics and the camera's
pose in ``data``; ``depth`` is the distance along the optical axis [m] (MuJoCo's depth
rendering). ``HeadCamera.attach(twin, rate_hz)`` records frames at a rate that divides the
physics rate. Rendering needs OpenGL (EGL on headless machines): ``RenderUnavailable``
otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np
from rob_twin.models import names as N
from rob_twin.models.errors import UnknownNameError
from rob_twin.twin.render.video import RenderUnavailable, close_renderer


@dataclass(frozen=True)
class Intrinsics:
    """Pinhole intrinsics [px]: focal lengths fx, fy and principal point cx, cy."""

    fx: float
    fy: float
    cx: float
    cy: float
    width: int
    height: int

    @property
    def matrix(self) -> np.ndarray:
        return np.array([[self.fx, 0.0, self.cx], [0.0, self.fy, self.cy], [0.0, 0.0, 1.0]])


@dataclass
class Frame:
    t: float  # simulated time [s]
    rgb: np.ndarray  # (h, w, 3) uint8
    depth: np.ndarray  # (h, w) float32 [m]


class HeadCamera:
    """Renders ``camera`` (the head camera by default) of ``model`` at ``height`` x ``width``."""

    def __init__(
        self,
        model: mujoco.MjModel,
        height: int = 240,
        width: int = 320,
        camera: str = N.HEAD_CAMERA,
    ):
        cid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, camera)
        if cid < 0:
            raise UnknownNameError(
                "camera", camera, [model.camera(i).name for i in range(model.ncam)]
            )
        self.model, self.camera_id, self.height, self.width = model, cid, height, width
        try:
            self._renderer = mujoco.Renderer(model, height=height, width=width)
        except Exception as err:  # no GL context of any kind on this machine
            raise RenderUnavailable(f"cannot render the {camera!r} camera: {err}") from err
        self.frames: list[Frame] = []

    @property
    def intrinsics(self) -> Intrinsics:
        fovy = math.radians(float(self.model.cam_fovy[self.camera_id]))
        f = (self.height / 2.0) / math.tan(fovy / 2.0)
        return Intrinsics(
            fx=f,
            fy=f,
            cx=self.width / 2.0,
            cy=self.height / 2.0,
            width=self.width,
            height=self.height,
        )

    def rgb(self, data: mujoco.MjData) -> np.ndarray:
        self._renderer.disable_depth_rendering()
        self._renderer.update_scene(data, camera=self.camera_id)
        return self._renderer.render().copy()

    def depth(self, data: mujoco.MjData) -> np.ndarray:
        """Distance along the optical axis [m] per pixel."""
        self._renderer.enable_depth_rendering()
        self._renderer.update_scene(data, camera=self.camera_id)
        out = self._renderer.render().copy()
        self._renderer.disable_depth_rendering()
        return out

    def project(self, data: mujoco.MjData, points_world) -> tuple[np.ndarray, np.ndarray]:
        """(uv [px] as (n, 2) columns u right / v down, z [m] depth along the optical axis)
        of world points (n, 3); z <= 0 means behind the camera."""
        p = np.atleast_2d(np.asarray(points_world, float))
        pos = data.cam_xpos[self.camera_id]
        rot = data.cam_xmat[self.camera_id].reshape(3, 3)
        cam = (p - pos) @ rot  # camera frame: x right, y up, looking along -z
        z = -cam[:, 2]
        k = self.intrinsics
        with np.errstate(divide="ignore", invalid="ignore"):
            u = k.fx * cam[:, 0] / z + k.cx
            v = -k.fy * cam[:, 1] / z + k.cy
        return np.stack([u, v], axis=1), z

    def attach(self, twin, rate_hz: float, depth: bool = True, name: str = "head_camera") -> None:
        """Record a Frame every 1/``rate_hz`` s of simulated time (the rate must divide the
        physics rate; the scheduler says so otherwise)."""

        def capture(now: float) -> None:
            d = self.depth(twin.data) if depth else np.zeros((self.height, self.width), np.float32)
            self.frames.append(Frame(now, self.rgb(twin.data), d))

        twin.scheduler.add(name, rate_hz, capture)

    def close(self) -> None:
        close_renderer(self._renderer)
