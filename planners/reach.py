"""Geoms the moving arms can never bring within the clearance horizon, found at the
reference state: which collision candidates MuJoCo need not generate for a session.

While a session's arms move, everything upstream of each arm's first joint (base, torso)
stays at the reference state, so the first joint's anchor ``a`` stays put, and every point
of every geom below that joint stays within the arm's reach ``R`` of ``a``: a bound valid
in every configuration, summed along the tree from body offsets, hinge anchor offsets (a
hinge turning about an anchor off its body's origin moves that origin by up to twice the
offset), slide travel (the largest end of the joint's range) and each geom's offset and
bounding radius. A geom that no moving arm moves, and whose distance from every moving
arm's anchor exceeds that arm's ``R`` plus the horizon, is never within the horizon of a
moving geom; pairs without a moving geom are not checked. So its pairs never give a checked
contact, and MuJoCo need not look at them (the floor and walls of a room, for an arm on a
torso, cost a third of each query at a 4 cm horizon).

Distances from a point to a geom are lower bounds: to a plane, the height above it (MuJoCo
planes collide as half-spaces); to any other geom, the distance to its bounding box
(``geom_aabb``, in the geom's frame). Units: metres.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np

_HINGE = int(mujoco.mjtJoint.mjJNT_HINGE)
_BALL = int(mujoco.mjtJoint.mjJNT_BALL)
_SLIDE = int(mujoco.mjtJoint.mjJNT_SLIDE)
_PLANE = int(mujoco.mjtGeom.mjGEOM_PLANE)


def subtree_bodies(model: mujoco.MjModel, root: int) -> list[int]:
    """``root`` and every body below it (bodies are numbered parents first)."""
    inside = {root}
    for b in range(root + 1, model.nbody):
        if int(model.body_parentid[b]) in inside:
            inside.add(b)
    return sorted(inside)


def joint_travel_m(
    model: mujoco.MjModel, j: int, reference_qpos: np.ndarray | None = None
) -> float:
    """How far joint ``j`` can move its body's origin from where ``qpos0`` puts it [m]: a
    hinge or ball turning about an anchor off the origin, up to twice the offset; a slide,
    its largest displacement over its range (inf when unlimited), or its displacement at
    ``reference_qpos`` when given (a joint locked there); a free joint, inf."""
    kind = int(model.jnt_type[j])
    if kind in (_HINGE, _BALL):
        return 2.0 * float(np.linalg.norm(model.jnt_pos[j]))
    if kind == _SLIDE:
        adr = int(model.jnt_qposadr[j])
        if reference_qpos is not None:
            return abs(float(reference_qpos[adr]) - float(model.qpos0[adr]))
        if not model.jnt_limited[j]:
            return math.inf
        return float(np.abs(model.jnt_range[j] - model.qpos0[adr]).max())
    return math.inf


def body_reach_m(model: mujoco.MjModel, joint: int, travel_m) -> dict[int, float]:
    """For ``joint``'s body and every body below it: a bound [m] on the distance from the
    joint's anchor to the body's origin, in every configuration. ``travel_m(j)``: how far
    joint j (not ``joint`` itself) can move its body's origin (``joint_travel_m``); the
    bound sums body offsets and travels along the tree (the triangle inequality)."""
    root = int(model.jnt_bodyid[joint])
    reach: dict[int, float] = {}
    for b in subtree_bodies(model, root):
        first = int(model.body_jntadr[b])
        travel = sum(
            travel_m(j) for j in range(first, first + int(model.body_jntnum[b])) if j != joint
        )
        if b == root:
            reach[b] = float(np.linalg.norm(model.jnt_pos[joint])) + travel
        else:
            offset = float(np.linalg.norm(model.body_pos[b]))
            reach[b] = reach[int(model.body_parentid[b])] + offset + travel
    return reach


def geom_extent_m(model: mujoco.MjModel, g: int) -> float:
    """The distance [m] from geom ``g``'s body origin to its farthest point, at most."""
    return float(np.linalg.norm(model.geom_pos[g])) + float(model.geom_rbound[g])


def arm_reach_m(model: mujoco.MjModel, first_joint: int) -> float:
    """R [m]: every point of every geom below hinge ``first_joint`` stays within R of the
    joint's anchor, in every configuration (slides anywhere in their range)."""
    reach = body_reach_m(model, first_joint, lambda j: joint_travel_m(model, j))
    out = 0.0
    for g in range(model.ngeom):
        b = int(model.geom_bodyid[g])
        if b in reach:
            out = max(out, reach[b] + geom_extent_m(model, g))
    return out


def point_to_geom_lower_bound_m(
    model: mujoco.MjModel, data: mujoco.MjData, g: int, point: np.ndarray
) -> float:
    """A lower bound [m] on the distance from ``point`` (world) to geom ``g`` as posed in
    ``data`` (after ``mj_kinematics``); negative inside a plane's half-space."""
    rot = data.geom_xmat[g].reshape(3, 3)
    local = rot.T @ (np.asarray(point, float) - data.geom_xpos[g])
    if int(model.geom_type[g]) == _PLANE:
        return float(local[2])
    centre, half = model.geom_aabb[g, :3], model.geom_aabb[g, 3:]
    outside = np.maximum(np.abs(local - centre) - half, 0.0)
    return float(np.linalg.norm(outside))


def out_of_reach(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    anchors: list[tuple[int, float]],
    horizon_m: float,
) -> np.ndarray:
    """(ngeom,) True for the colliding geoms (contype or conaffinity set) that no arm of
    ``anchors`` moves and that stay farther than ``horizon_m`` from every geom those arms
    move, in every configuration. ``anchors``: (first joint id, ``arm_reach_m`` of it) per
    moving arm; ``data``: the reference state after ``mj_kinematics``."""
    colliding = (model.geom_contype | model.geom_conaffinity) != 0
    moved = np.zeros(model.nbody, bool)
    for j, _ in anchors:
        moved[subtree_bodies(model, int(model.jnt_bodyid[j]))] = True
    out = colliding & ~moved[model.geom_bodyid]
    for g in np.flatnonzero(out):
        for j, reach in anchors:
            if point_to_geom_lower_bound_m(model, data, g, data.xanchor[j]) <= reach + horizon_m:
                out[g] = False
                break
    return out
