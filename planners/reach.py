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
from dataclasses import dataclass

import mujoco
import numpy as np
from rob_twin.planners.geom_pairs import subtree_bodies

_HINGE = int(mujoco.mjtJoint.mjJNT_HINGE)
_BALL = int(mujoco.mjtJoint.mjJNT_BALL)
_SLIDE = int(mujoco.mjtJoint.mjJNT_SLIDE)
_PLANE = int(mujoco.mjtGeom.mjGEOM_PLANE)


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
    for b in sorted(subtree_bodies(model, root)):  # parents before their children
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


def geom_reach_m(model: mujoco.MjModel, reach: dict[int, float]) -> np.ndarray:
    """(ngeom,) for each geom of a body in ``reach`` (``body_reach_m``): the body's bound
    plus the geom's offset and bounding radius, a bound [m] on the distance from the joint's
    anchor to any point of the geom; 0 for the other geoms."""
    out = np.zeros(model.ngeom)
    for g in range(model.ngeom):
        b = int(model.geom_bodyid[g])
        if b in reach:
            out[g] = (
                reach[b] + float(np.linalg.norm(model.geom_pos[g])) + float(model.geom_rbound[g])
            )
    return out


def arm_reach_m(model: mujoco.MjModel, first_joint: int) -> float:
    """R [m]: every point of every geom below hinge ``first_joint`` stays within R of the
    joint's anchor, in every configuration (slides anywhere in their range)."""
    reach = body_reach_m(model, first_joint, lambda j: joint_travel_m(model, j))
    return float(geom_reach_m(model, reach).max(initial=0.0))


def point_to_geoms_lower_bound_m(
    model: mujoco.MjModel, data: mujoco.MjData, geoms: np.ndarray, point: np.ndarray
) -> np.ndarray:
    """(G,) a lower bound [m] on the distance from ``point`` (world) to each of ``geoms`` as
    posed in ``data`` (after ``mj_kinematics``); negative inside a plane's half-space."""
    rot = data.geom_xmat[geoms].reshape(-1, 3, 3)
    local = np.einsum("kji,kj->ki", rot, np.asarray(point, float) - data.geom_xpos[geoms])
    centre, half = model.geom_aabb[geoms, :3], model.geom_aabb[geoms, 3:]
    outside = np.linalg.norm(np.maximum(np.abs(local - centre) - half, 0.0), axis=1)
    return np.where(model.geom_type[geoms] == _PLANE, local[:, 2], outside)


@dataclass(frozen=True)
class ArmReach:
    """An arm's first joint (id), its reach [m] (``arm_reach_m``) and the bodies it moves
    (a boolean mask over the model's bodies)."""

    joint: int
    reach_m: float
    bodies: np.ndarray


def arm_reach(model: mujoco.MjModel, first_joint: int) -> ArmReach:
    moved = np.zeros(model.nbody, bool)
    moved[list(subtree_bodies(model, int(model.jnt_bodyid[first_joint])))] = True
    return ArmReach(first_joint, arm_reach_m(model, first_joint), moved)


def out_of_reach(
    model: mujoco.MjModel, data: mujoco.MjData, arms: list[ArmReach], horizon_m: float
) -> np.ndarray:
    """(ngeom,) True for the colliding geoms (contype or conaffinity set) that no arm of
    ``arms`` (the moving ones) moves and that stay farther than ``horizon_m`` from every
    geom those arms move, in every configuration. ``data``: the reference state after
    ``mj_kinematics``."""
    out = (model.geom_contype | model.geom_conaffinity) != 0
    for arm in arms:
        out &= ~arm.bodies[model.geom_bodyid]
    candidates = np.flatnonzero(out)
    for arm in arms:
        if not candidates.size:
            break
        lower = point_to_geoms_lower_bound_m(model, data, candidates, data.xanchor[arm.joint])
        near = lower <= arm.reach_m + horizon_m
        out[candidates[near]] = False
        candidates = candidates[~near]
    return out
