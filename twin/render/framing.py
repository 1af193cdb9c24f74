"""The ``auto`` camera: a free camera that frames both arms from their workspace.

``auto_camera`` looks at the centre of the arm bodies (every body under ``right/`` and
``left/``) from in front of ROB and above the table (azimuth 160 deg, elevation -30 deg), far
enough that a sphere around them with ``MARGIN_M`` of room for reach and link size fits the
vertical and the horizontal field of view: the table never hides the arms, whatever the
scene's named cameras look at. Distances in metres, angles in degrees.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np
from rob_twin.models.names import Arm

AUTO_CAMERA = "auto"
AZIMUTH_DEG = 160.0  # from the front (+x), a little to ROB's right
ELEVATION_DEG = -30.0  # from above the table
MARGIN_M = 0.3  # room around the arm bodies: link size and reach during the run


def arm_body_ids(model: mujoco.MjModel) -> list[int]:
    """Ids of the bodies of both arms (names under ``right/`` and ``left/``)."""
    prefixes = tuple(f"{arm.value}/" for arm in Arm)
    return [i for i in range(model.nbody) if model.body(i).name.startswith(prefixes)]


def auto_camera(
    model: mujoco.MjModel, data: mujoco.MjData, aspect: float = 4 / 3
) -> mujoco.MjvCamera:
    """A free camera framing the arm bodies of ``data`` (forward kinematics done) in a
    frame ``aspect`` (width / height) wide, with the model's free-camera field of view."""
    points = data.xpos[arm_body_ids(model)]
    centre = (points.min(axis=0) + points.max(axis=0)) / 2
    radius = float(np.max(np.linalg.norm(points - centre, axis=1))) + MARGIN_M
    half_v = math.radians(model.vis.global_.fovy) / 2
    half = min(half_v, math.atan(math.tan(half_v) * aspect))  # the narrower of the two
    cam = mujoco.MjvCamera()
    cam.type = mujoco.mjtCamera.mjCAMERA_FREE
    cam.lookat[:] = centre
    cam.azimuth, cam.elevation = AZIMUTH_DEG, ELEVATION_DEG
    cam.distance = radius / math.sin(half)
    return cam
