"""What a video shows of a held box: where to look, the grasps, and the stand.

The held box (``rob_twin.twin.sim.held_object``) is welded to the world until grasped (its
"stand": an equality, no geom) and then to each hand (welds: nothing closes). So that a person
sees what happens: ``focus_points`` gives the box's corners and the hands (a camera framed on
them, with room for the carry, shows the grasp and the lift large); ``paint_grasps`` draws a
hand green while its weld holds the box; ``add_stand`` draws the stand (a grey post from the
box down to whatever lies under it) while the box waits on it. Visual only: scene geoms of one
frame, nothing of the model or the physics. Metres.
"""

from __future__ import annotations

import mujoco
import numpy as np
from rob_twin.models.names import Arm
from rob_twin.twin.render.framing import geom_corners
from rob_twin.twin.sim.held_object import BOX, STAND, hand_body, hand_subtree, weld_name

GRASP_RGBA = (0.15, 0.85, 0.3, 1.0)  # a hand holding the box
STAND_RGBA = (0.55, 0.55, 0.58, 1.0)
STAND_RADIUS_M = 0.02


def has_held_box(model: mujoco.MjModel) -> bool:
    """Whether ``model`` carries the held box (``held_object.held_scene``)."""
    return mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, BOX) >= 0


def _box_geoms(model: mujoco.MjModel) -> list[int]:
    box = model.body(BOX).id
    return [g for g in range(model.ngeom) if model.geom_bodyid[g] == box]


def focus_points(model: mujoco.MjModel, data: mujoco.MjData) -> np.ndarray:
    """The box's bounding-box corners and both hands' origins [m] (N x 3)."""
    hands = [data.xpos[model.body(hand_body(model, arm)).id] for arm in Arm]
    return np.vstack([geom_corners(model, data, _box_geoms(model)), np.array(hands)])


def _eq_active(model: mujoco.MjModel, data: mujoco.MjData, name: str) -> bool:
    eq = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_EQUALITY, name)
    return eq >= 0 and bool(data.eq_active[eq])


def grasping_geoms(model: mujoco.MjModel, data: mujoco.MjData) -> set[int]:
    """Geoms of the hands (last link and below) whose weld holds the box now."""
    out: set[int] = set()
    for arm in Arm:
        if _eq_active(model, data, weld_name(arm)):
            bodies = {model.body(n).id for n in hand_subtree(model, arm)}
            out.update(g for g in range(model.ngeom) if model.geom_bodyid[g] in bodies)
    return out


def add_stand(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    scene: mujoco.MjvScene,
    geomgroup: np.ndarray | None = None,
) -> bool:
    """While the box waits on its stand, add a post from the box's underside down to the
    first surface below it (or the ground) to ``scene``; True when one was added.
    ``geomgroup`` (6 flags, e.g. a recorder's ``MjvOption.geomgroup``): only surfaces of the
    groups drawn count, so a post whose table a render copy hides reaches the ground; None:
    every group."""
    if not _eq_active(model, data, STAND) or scene.ngeom >= scene.maxgeom:
        return False
    box = model.body(BOX).id
    corners = geom_corners(model, data, _box_geoms(model))
    bottom = np.array([*data.xpos[box][:2], corners[:, 2].min()])
    geomid = np.zeros(1, dtype=np.int32)
    groups = None if geomgroup is None else np.asarray(geomgroup, dtype=np.uint8)
    dist = mujoco.mj_ray(
        model, data, bottom, np.array([0.0, 0.0, -1.0]), groups, 1, box, geomid
    )  # static geoms included, the box's own body left out
    length = dist if dist >= 0 else max(float(bottom[2]), 0.0)
    if length < 1e-3:
        return False
    g = scene.geoms[scene.ngeom]
    mujoco.mjv_initGeom(
        g,
        mujoco.mjtGeom.mjGEOM_CYLINDER,
        np.array([STAND_RADIUS_M, length / 2, 0.0]),
        bottom - np.array([0.0, 0.0, length / 2]),
        np.eye(3).ravel(),
        np.array(STAND_RGBA, dtype=np.float32),
    )
    scene.ngeom += 1
    return True
