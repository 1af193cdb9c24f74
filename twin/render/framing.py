"""The ``auto`` camera: a free camera that fills the frame with the arms, from their geometry.

``auto_camera`` looks at the robot from its front (``front_azimuth_deg``: the horizontal
direction from the arms' roots to their hands, +x when the arms hang straight down) turned
``SIDE_DEG`` aside, from ``ELEVATION_DEG`` above, and backs off just far enough that every
corner of every visible arm geom's bounding box (``arm_points``), padded by ``PAD_M`` for the
reach the arms still make during the run, lies inside the vertical and the horizontal field of
view; the look-at point is the middle of those points as the camera sees them, so the arms fill
the frame, centred, whatever the robot. ``top_camera`` frames the same points from straight
above (the inset that shows which arm passes in front), ``focus_camera`` a few points closely
(the held box and the hands during a carry). Distances in metres, angles in degrees.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np
from rob_twin.models.names import Arm

AUTO_CAMERA = "auto"
SIDE_DEG = 20.0  # turned aside from straight in front: depth shows, the arms do not line up
ELEVATION_DEG = -30.0  # from above the hands, over anything they work on
TOP_ELEVATION_DEG = -89.0  # the inset from above (-90 exactly has no "up" in MuJoCo)
PAD_M = 0.12  # room around the arm geoms for the reach the arms make after framing
VISIBLE_GROUPS = (0, 1, 2)  # geom groups MuJoCo draws by default (3+: collision, hidden)


def arm_body_ids(model: mujoco.MjModel) -> list[int]:
    """Ids of the bodies of both arms (names under ``right/`` and ``left/``)."""
    prefixes = tuple(f"{arm.value}/" for arm in Arm)
    return [i for i in range(model.nbody) if model.body(i).name.startswith(prefixes)]


def visible_geoms(model: mujoco.MjModel, bodies: list[int]) -> list[int]:
    """Geoms of ``bodies`` MuJoCo draws by default (groups 0-2), planes left out."""
    wanted = set(bodies)
    return [
        g
        for g in range(model.ngeom)
        if model.geom_bodyid[g] in wanted
        and model.geom_group[g] in VISIBLE_GROUPS
        and model.geom_type[g] != mujoco.mjtGeom.mjGEOM_PLANE
    ]


def geom_corners(model: mujoco.MjModel, data: mujoco.MjData, geoms: list[int]) -> np.ndarray:
    """World positions [m] of the 8 corners of each geom's bounding box (``geom_aabb``, in
    the geom's frame), (8 * len(geoms)) x 3; empty when ``geoms`` is."""
    if not geoms:
        return np.zeros((0, 3))
    signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
    aabb = model.geom_aabb[geoms]  # centre (3), half sizes (3), geom frame
    local = aabb[:, None, :3] + signs[None] * aabb[:, None, 3:]  # n x 8 x 3
    rot = data.geom_xmat[geoms].reshape(-1, 3, 3)
    world = np.einsum("nij,nkj->nki", rot, local) + data.geom_xpos[geoms][:, None, :]
    return world.reshape(-1, 3)


def arm_points(model: mujoco.MjModel, data: mujoco.MjData) -> np.ndarray:
    """Points [m] the arms occupy in ``data`` (forward kinematics done): the bounding-box
    corners of their visible geoms, or their body origins where they have none."""
    bodies = arm_body_ids(model)
    points = geom_corners(model, data, visible_geoms(model, bodies))
    return points if len(points) else data.xpos[bodies].copy()


def front_azimuth_deg(model: mujoco.MjModel, data: mujoco.MjData) -> float:
    """The free-camera azimuth [deg] that looks at the robot's front: the camera stands on the
    side the hands reach to from the arms' roots (first and last arm bodies), +x if they do
    not reach out horizontally."""
    ends = []
    for arm in Arm:
        ids = [i for i in arm_body_ids(model) if model.body(i).name.startswith(f"{arm.value}/")]
        if ids:
            ends.append(data.xpos[ids[-1]] - data.xpos[ids[0]])
    reach = np.sum(ends, axis=0)[:2] if ends else np.zeros(2)
    if np.linalg.norm(reach) < 0.05:
        reach = np.array([1.0, 0.0])
    return math.degrees(math.atan2(-reach[1], -reach[0]))  # looking back along the reach


def _axes(azimuth_deg: float, elevation_deg: float) -> tuple[np.ndarray, ...]:
    a, e = math.radians(azimuth_deg), math.radians(elevation_deg)
    fwd = np.array([math.cos(e) * math.cos(a), math.cos(e) * math.sin(a), math.sin(e)])
    right = np.array([math.sin(a), -math.cos(a), 0.0])
    up = np.cross(right, fwd)
    return fwd, right, up


def free_camera_pose(camera: mujoco.MjvCamera) -> tuple[np.ndarray, np.ndarray]:
    """(position [m], unit forward direction) of a free ``camera``: it stands ``distance``
    back from ``lookat`` along its ``azimuth``/``elevation`` [deg]."""
    fwd, _, _ = _axes(camera.azimuth, camera.elevation)
    return np.array(camera.lookat) - camera.distance * fwd, fwd


def fit_camera(
    points: np.ndarray,
    azimuth_deg: float,
    elevation_deg: float,
    fovy_deg: float,
    aspect: float,
    pad_m: float = PAD_M,
) -> mujoco.MjvCamera:
    """A free camera looking from ``azimuth_deg``/``elevation_deg`` at ``points`` [m] (N x 3),
    centred on them and as close as lets every point, grown by ``pad_m``, fit a frame
    ``aspect`` (width / height) wide with a vertical field of view of ``fovy_deg``."""
    fwd, right, up = _axes(azimuth_deg, elevation_deg)
    ty = math.tan(math.radians(fovy_deg) / 2)
    tx = ty * aspect
    x, y = points @ right, points @ up
    centre = points.mean(axis=0)
    centre += right * ((x.min() + x.max()) / 2 - centre @ right)
    centre += up * ((y.min() + y.max()) / 2 - centre @ up)
    v = points - centre
    x, y, z = v @ right, v @ up, v @ fwd
    # camera at centre - d * fwd: a point at depth d + z fits when |x| + pad <= tx (d + z - pad)
    need = np.maximum((np.abs(x) + pad_m) / tx, (np.abs(y) + pad_m) / ty) - z + pad_m
    cam = mujoco.MjvCamera()
    cam.type = mujoco.mjtCamera.mjCAMERA_FREE
    cam.lookat[:] = centre
    cam.azimuth, cam.elevation = azimuth_deg, elevation_deg
    cam.distance = float(max(need.max(), 0.2))
    return cam


def auto_camera(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    aspect: float = 4 / 3,
    extra_points: np.ndarray | None = None,
) -> mujoco.MjvCamera:
    """A free camera that fills a frame ``aspect`` (width / height) wide with the arms of
    ``data`` (forward kinematics done), seen from the robot's front (``front_azimuth_deg``
    turned ``SIDE_DEG`` aside) and ``ELEVATION_DEG`` above, with the model's free-camera field
    of view; ``extra_points`` [m] (N x 3, e.g. the arms at other states of the run) are
    framed too."""
    points = arm_points(model, data)
    if extra_points is not None and len(extra_points):
        points = np.vstack([points, extra_points])
    az = front_azimuth_deg(model, data) - SIDE_DEG
    return fit_camera(points, az, ELEVATION_DEG, model.vis.global_.fovy, aspect)


def top_camera(
    model: mujoco.MjModel, points: np.ndarray, azimuth_deg: float, aspect: float
) -> mujoco.MjvCamera:
    """A camera from straight above ``points`` [m], turned like ``azimuth_deg`` (the main
    camera's: the robot's front at the bottom of the picture)."""
    return fit_camera(
        points, azimuth_deg, TOP_ELEVATION_DEG, model.vis.global_.fovy, aspect, pad_m=0.05
    )


def focus_camera(
    model: mujoco.MjModel,
    points: np.ndarray,
    azimuth_deg: float,
    aspect: float,
    pad_m: float,
) -> mujoco.MjvCamera:
    """A close camera on ``points`` [m] (the held box and the hands) from ``azimuth_deg``,
    ``pad_m`` of room around them for the motion to come (a carry's lift)."""
    return fit_camera(points, azimuth_deg, -20.0, model.vis.global_.fovy, aspect, pad_m=pad_m)


def _yaw(xmat: np.ndarray) -> float:
    """Heading [rad] of a body's x axis in the world's horizontal plane."""
    return math.atan2(xmat[3], xmat[0])


class RootFollow:
    """Free cameras that ride along with the robot's root body (``body_rootid`` of the arms:
    ROB's driven base; a fixed root, as OpenArm's, never moves them): framed once
    (``anchor``), each camera keeps its look-at point and azimuth relative to the root's
    position and heading as the root drives and turns (``apply``), so a robot that drives
    stays in view from the same side."""

    def __init__(self, model: mujoco.MjModel):
        bodies = arm_body_ids(model)
        self.root = int(model.body_rootid[bodies[0]]) if bodies else 0
        self._pos0 = np.zeros(3)
        self._yaw0 = 0.0
        self._cameras: list[tuple[mujoco.MjvCamera, np.ndarray, float]] = []

    def anchor(self, data: mujoco.MjData, cameras: list[mujoco.MjvCamera | None]) -> None:
        """Remember ``cameras`` as framed at ``data`` (forward kinematics done)."""
        self._pos0 = data.xpos[self.root].copy()
        self._yaw0 = _yaw(data.xmat[self.root])
        self._cameras = [(c, c.lookat.copy(), float(c.azimuth)) for c in cameras if c]

    def apply(self, data: mujoco.MjData) -> None:
        """Move the anchored cameras by the root's travel and turn since ``anchor``."""
        turn = _yaw(data.xmat[self.root]) - self._yaw0
        c, s = math.cos(turn), math.sin(turn)
        for camera, lookat0, azimuth0 in self._cameras:
            rel = lookat0 - self._pos0
            camera.lookat[:] = data.xpos[self.root] + (
                c * rel[0] - s * rel[1],
                s * rel[0] + c * rel[1],
                rel[2],
            )
            camera.azimuth = azimuth0 + math.degrees(turn)
