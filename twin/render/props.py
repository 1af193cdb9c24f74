"""Scene props in front of the arms: which ones a video's render copy leaves out.

A scene's props (ROB's table and can: bodies of their own, neither the robot nor the held box)
stand in front of the robot, so a camera that looks at the robot's front sees them first: the
table's near corner and the can filled the lower third of every scenario video. ``props`` lists
them: visible geoms (groups 0-2, not planes) of bodies that are neither the world body (its
static geoms are the robot's own pedestal or the room, ``backdrop``), nor in the tree of a body
the arms hang from, nor ``keep`` (the held box). ``in_front`` picks those that reach in front
of the arms' middle: some corner of the prop's bounding box is nearer to the camera, along its
view direction, than the middle of the arms' depth range (a table leg level with the hands, the
can beside them, count). A prop behind or beneath the arms (the table seen from above) stays.
Only a render copy's geom groups change: physics never sees it. Metres.
"""

from __future__ import annotations

import mujoco
import numpy as np
from rob_twin.twin.render.framing import (
    VISIBLE_GROUPS,
    arm_body_ids,
    free_camera_pose,
    geom_corners,
)


def robot_roots(model: mujoco.MjModel) -> set[int]:
    """Ids of the bodies the arms hang from at the top (children of the world body): the
    robot's trees."""
    return {int(model.body_rootid[b]) for b in arm_body_ids(model)}


def props(model: mujoco.MjModel, keep: set[int] | frozenset[int] = frozenset()) -> list[int]:
    """Visible geoms (groups 0-2, not planes) of bodies outside the robot's trees, not of the
    world body and not of the bodies ``keep`` (ids: the held box)."""
    roots = robot_roots(model)
    return [
        g
        for g in range(model.ngeom)
        if model.geom_bodyid[g] != 0
        and model.geom_bodyid[g] not in keep
        and int(model.body_rootid[model.geom_bodyid[g]]) not in roots
        and model.geom_group[g] in VISIBLE_GROUPS
        and model.geom_type[g] != mujoco.mjtGeom.mjGEOM_PLANE
    ]


def in_front(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    geoms: list[int],
    camera: mujoco.MjvCamera,
    arm_points: np.ndarray,
) -> list[int]:
    """Those of ``geoms`` (forward kinematics done in ``data``) with a bounding-box corner
    nearer to the free ``camera``, along its view direction, than the middle of the depths
    of ``arm_points`` [m] (N x 3: the arms, and what they hold); none without arm points."""
    if not geoms or not len(arm_points):
        return []
    eye, fwd = free_camera_pose(camera)
    arm_depth = (arm_points - eye) @ fwd
    middle = float(arm_depth.min() + arm_depth.max()) / 2
    depth = ((geom_corners(model, data, geoms) - eye) @ fwd).reshape(len(geoms), 8)
    return [g for g, d in zip(geoms, depth.min(axis=1), strict=True) if d < middle]
