"""A backdrop that contrasts with the robot: floor and sky recoloured in a render copy.

``robot_luminance`` is the mean relative luminance (0 black .. 1 white) of the robot's visible
geoms (its own rgba, or its material's): OpenArm's dark grey is about 0.2, ROB's white arms
and grey torso about 0.6. ``styled_copy`` returns a copy of a model for rendering only, in which
the floor (every plane geom: its checker texture redrawn, or its rgba) and the sky take a
luminance ``MIN_CONTRAST`` or more away from the robot's (light for a dark robot, dark for a
light one), and the static scenery far from the arms (a room's walls, whose lit top edges made
a white line across the frame) moves to a geom group the recorder does not draw. The horizon
haze (MuJoCo's band where the floor meets the sky, white by default: the bright line across the
top of a view that looks at the horizon, a held box's close camera) takes the sky's colour. The
physics model is never touched: colours and groups are visual fields only, and only the copy
changes.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import mujoco
import numpy as np
from rob_twin.twin.render.framing import arm_body_ids, arm_points, visible_geoms

LUMA = np.array([0.2126, 0.7152, 0.0722])  # Rec. 709 weights of R, G, B
DARK_ROBOT = 0.55  # below this mean luminance a robot gets a light backdrop (lit surfaces
# render darker than their rgba: a mid grey robot reads dark on screen)
HIDDEN_GROUP = 5  # the group scenery far from the arms moves to (the recorder hides it)
SCENERY_REACH_M = 1.5  # static geoms farther than this beyond the arms' extent are hidden


@dataclass(frozen=True)
class Backdrop:
    """Floor checker colours and sky colours (rgb, 0..1) for one robot luminance."""

    floor_a: tuple[float, float, float]
    floor_b: tuple[float, float, float]
    line: tuple[float, float, float]
    sky_top: tuple[float, float, float]
    sky_bottom: tuple[float, float, float]


LIGHT = Backdrop(
    (0.86, 0.85, 0.80),
    (0.76, 0.75, 0.70),
    (0.62, 0.62, 0.60),
    (0.93, 0.95, 0.98),
    (0.80, 0.85, 0.90),
)
DARK = Backdrop(
    (0.10, 0.12, 0.16),
    (0.06, 0.08, 0.11),
    (0.22, 0.24, 0.28),
    (0.10, 0.14, 0.20),
    (0.02, 0.02, 0.03),
)


def luminance(rgb) -> float:
    """Relative luminance of an rgb triple (0..1 each)."""
    return float(np.asarray(rgb, dtype=float)[:3] @ LUMA)


def robot_geoms(model: mujoco.MjModel) -> list[int]:
    """The arms' visible geoms (what the ``auto`` camera frames): those of the bodies under
    ``right/`` and ``left/`` in the groups MuJoCo draws by default, not transparent."""
    return [g for g in visible_geoms(model, arm_body_ids(model)) if _rgba(model, g)[3] > 0]


def _rgba(model: mujoco.MjModel, g: int) -> np.ndarray:
    mat = model.geom_matid[g]
    return model.mat_rgba[mat] if mat >= 0 else model.geom_rgba[g]


def robot_luminance(model: mujoco.MjModel) -> float:
    """Mean luminance (0..1) of the arms' visible geoms' colours, each weighted by the square
    of its bounding radius (its surface, roughly: a large dark shell counts more than a light
    screw head); 0.5 without any."""
    geoms = robot_geoms(model)
    if not geoms:
        return 0.5
    lum = [luminance(_rgba(model, g)) for g in geoms]
    weight = model.geom_rbound[geoms] ** 2 + 1e-9
    return float(np.average(lum, weights=weight))


def backdrop_for(robot_lum: float) -> Backdrop:
    """A light backdrop for a dark robot (mean luminance below ``DARK_ROBOT``), else dark."""
    return LIGHT if robot_lum < DARK_ROBOT else DARK


def _paint_checker(model: mujoco.MjModel, tex: int, b: Backdrop) -> None:
    w, h, nc = model.tex_width[tex], model.tex_height[tex], model.tex_nchannel[tex]
    adr = model.tex_adr[tex]
    i, j = np.mgrid[0:h, 0:w]
    square = ((2 * i // max(h, 1)) + (2 * j // max(w, 1))) % 2
    edge = (i % max(h // 2, 1) < max(1, h // 100)) | (j % max(w // 2, 1) < max(1, w // 100))
    rgb = np.where(square[..., None] == 0, b.floor_a, b.floor_b)
    rgb = np.where(edge[..., None], b.line, rgb)
    pixels = np.zeros((h, w, nc))
    pixels[..., : min(3, nc)] = rgb[..., : min(3, nc)]
    if nc == 4:
        pixels[..., 3] = 1.0
    model.tex_data[adr : adr + w * h * nc] = np.round(255 * pixels).astype(np.uint8).ravel()


def _paint_sky(model: mujoco.MjModel, tex: int, b: Backdrop) -> None:
    w, h, nc = model.tex_width[tex], model.tex_height[tex], model.tex_nchannel[tex]
    adr = model.tex_adr[tex]
    t = np.linspace(0.0, 1.0, h)[:, None, None] * np.ones((1, w, 1))
    rgb = (1 - t) * np.array(b.sky_top) + t * np.array(b.sky_bottom)
    pixels = np.ones((h, w, nc))
    pixels[..., : min(3, nc)] = rgb[..., : min(3, nc)]
    model.tex_data[adr : adr + w * h * nc] = np.round(255 * pixels).astype(np.uint8).ravel()


def _floor_geoms(model: mujoco.MjModel) -> list[int]:
    return [g for g in range(model.ngeom) if model.geom_type[g] == mujoco.mjtGeom.mjGEOM_PLANE]


def _far_scenery(model: mujoco.MjModel, data: mujoco.MjData) -> list[int]:
    """Static geoms of the world body, not planes, whose every point is farther than
    ``SCENERY_REACH_M`` beyond the arms' extent (a room's walls)."""
    points = arm_points(model, data)
    if not len(points):
        return []
    centre = (points.min(axis=0) + points.max(axis=0)) / 2
    reach = float(np.max(np.linalg.norm(points - centre, axis=1))) + SCENERY_REACH_M
    far = []
    for g in range(model.ngeom):
        if model.geom_bodyid[g] != 0 or model.geom_type[g] == mujoco.mjtGeom.mjGEOM_PLANE:
            continue
        # the nearest point of the geom's bounding box (its own frame) to the arms' centre
        local = data.geom_xmat[g].reshape(3, 3).T @ (centre - data.geom_xpos[g])
        box_c, half = model.geom_aabb[g, :3], model.geom_aabb[g, 3:]
        if np.linalg.norm(local - np.clip(local, box_c - half, box_c + half)) > reach:
            far.append(g)
    return far


def styled_copy(model: mujoco.MjModel, data: mujoco.MjData) -> mujoco.MjModel:
    """A copy of ``model`` to render from: floor, sky and horizon haze contrasting with the
    robot (``backdrop_for(robot_luminance)``), far static scenery in ``HIDDEN_GROUP``. ``data``
    (forward kinematics done) places the arms; the copy has the same sizes, so ``data``
    renders with it."""
    out = copy.deepcopy(model)
    b = backdrop_for(robot_luminance(model))
    painted: set[int] = set()
    for g in _floor_geoms(out):
        mat = out.geom_matid[g]
        tex = out.mat_texid[mat, mujoco.mjtTextureRole.mjTEXROLE_RGB] if mat >= 0 else -1
        if tex >= 0:
            if tex not in painted:
                _paint_checker(out, tex, b)
                painted.add(tex)
            out.mat_rgba[mat] = (1.0, 1.0, 1.0, 1.0)
            out.mat_reflectance[mat] = min(float(out.mat_reflectance[mat]), 0.1)
        else:
            out.geom_rgba[g, :3] = b.floor_a
            if mat >= 0:
                out.mat_rgba[mat, :3] = b.floor_a
    for tex in range(out.ntex):
        if out.tex_type[tex] == mujoco.mjtTexture.mjTEXTURE_SKYBOX:
            _paint_sky(out, tex, b)
    out.vis.rgba.haze[:3] = b.sky_bottom  # MuJoCo's default white haze drew the horizon line
    for g in _far_scenery(out, data):
        out.geom_group[g] = HIDDEN_GROUP
    return out
