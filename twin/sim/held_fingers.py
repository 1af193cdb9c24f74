"""The grippers around a held box: where a grasping hand's fingers stop, and the servo ramp
that takes them there (and open again at release).

The box is carried by welds (``held_object``: why not by the fingers); the fingers only show
the grasp. At a grasp each hand with a gripper closes until its fingers are ``GAP_M`` short of
the box, so they never touch it and put no force on it. The stop is found on the model, for
any robot: the gripper joint (``names.gripper_joint``) is set in a scratch copy of the state
(its coupled joints, MuJoCo joint equalities that follow it, with it) and the smallest
distance from the box to the geoms that move with it (``mj_geomDistance``; visual geoms too,
so what is seen stops short as well) is bisected between the joint's two ends. The closed end
is the one where those finger bodies are nearest each other (ROB: 0 m, OpenArm: either sign).
A hand is left as it is, with the reason, when it has no gripper joint, no position servo on
it, fewer than two moving finger bodies, when the box is not between its fingers (fully
closed they stay clear of it: ROB's hands in ``carry_box``, whose TCPs are 3 cm beyond the
box's ends), or when the box does not fit between them fully open.

Assumed: between the two ends the box's distance grows as the fingers open (true for parallel
and pivoting jaws either side of a convex box). Units: the gripper joint's (m for a slide, rad
for a hinge), metres for gaps, seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np
from rob_twin.models import names as N
from rob_twin.models.names import Arm
from rob_twin.twin.errors import TwinInputError

GAP_M = 0.002  # the fingers stop this short of the box's faces [m] (the soft weld lets the
# box shift up to about 1 mm toward a finger in a carry: it keeps 1 mm)
MAX_GAP_M = 0.02  # a larger gap is no grasp to show [m]
CLOSE_S = 0.3  # a gripper's servo target moves to its stop over this [s] (smoothstep)
BISECT_STEPS = 40  # halvings of the joint's range: far below a micrometre
MOVED_M = 1e-9  # a body that moves less than this between the joint's ends is not a finger


@dataclass(frozen=True)
class Gripper:
    """One hand's gripper on a model: joint (id), qpos (address), actuator (id), gear (ctrl =
    gear * position), closed / opened (the joint's ends [joint unit]), followers ((qpos
    address, its qpos0, polynomial coefficients) of each joint equality that follows it),
    fingers (geoms of the bodies that move with it)."""

    joint: int
    qpos: int
    actuator: int
    gear: float
    closed: float
    opened: float
    followers: tuple[tuple[int, float, tuple[float, ...]], ...]
    fingers: tuple[int, ...]


@dataclass(frozen=True)
class FingerTarget:
    """Where ``arm``'s gripper goes at a grasp: ``target`` [joint unit], or None (left as it
    is) with ``reason``."""

    arm: Arm
    target: float | None
    reason: str = ""

    def as_dict(self) -> dict:
        out: dict = {"target": self.target}
        if self.reason:
            out["reason"] = self.reason
        return out


def _servo_actuator(model: mujoco.MjModel, joint: int, arm: Arm) -> tuple[int | None, str]:
    """The position servo driving ``joint`` (``names.gripper_actuator`` first), or a reason."""
    named = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_ACTUATOR, N.gripper_actuator(arm))
    candidates = [named] if named >= 0 else []
    candidates += [a for a in range(model.nu) if a != named]
    for a in candidates:
        if int(model.actuator_trntype[a]) != int(mujoco.mjtTrn.mjTRN_JOINT):
            continue
        if int(model.actuator_trnid[a, 0]) != joint:
            continue
        kp = float(model.actuator_gainprm[a, 0])
        servo = (
            int(model.actuator_gaintype[a]) == int(mujoco.mjtGain.mjGAIN_FIXED)
            and int(model.actuator_biastype[a]) == int(mujoco.mjtBias.mjBIAS_AFFINE)
            and kp > 0.0
            and model.actuator_biasprm[a, 0] == 0.0
            and math.isclose(float(model.actuator_biasprm[a, 1]), -kp)
            and model.actuator_gear[a, 0] != 0.0
        )
        if servo:
            return a, ""
        return None, f"the gripper actuator {model.actuator(a).name!r} is not a position servo"
    return None, "no actuator drives the gripper joint"


def _place(model, scratch, qadr: int, q: float, followers) -> None:
    """Set the gripper joint (qpos address ``qadr``) to ``q`` and its followers, then the
    kinematics of ``scratch``."""
    scratch.qpos[qadr] = q
    x = q - float(model.qpos0[qadr])
    for fadr, f0, coef in followers:
        scratch.qpos[fadr] = f0 + sum(c * x**i for i, c in enumerate(coef))
    mujoco.mj_kinematics(model, scratch)


def set_gripper(model: mujoco.MjModel, data: mujoco.MjData, g: Gripper, q: float) -> None:
    """Put ``g``'s joint and its followers at ``q`` [joint unit] in ``data`` (a start state;
    ``mj_forward`` follows)."""
    _place(model, data, g.qpos, q, g.followers)
    mujoco.mj_forward(model, data)


def _followers(model, data, joint: int) -> tuple[tuple[int, float, tuple[float, ...]], ...]:
    """(qpos address, qpos0, coefficients of the joint's offset from its qpos0) of each joint
    an active joint equality couples to ``joint``: ``joint1 = poly(joint2)`` as written where
    ``joint`` is joint2, inverted where it is joint1 and the polynomial is linear (OpenArm's
    mimic finger)."""
    out = []
    for e in range(model.neq):
        if int(model.eq_type[e]) != int(mujoco.mjtEq.mjEQ_JOINT) or not data.eq_active[e]:
            continue
        j1, j2 = int(model.eq_obj1id[e]), int(model.eq_obj2id[e])
        coef = tuple(float(v) for v in model.eq_data[e, :5])
        if j2 == joint:
            other = j1
        elif j1 == joint and j2 >= 0 and coef[1] != 0.0 and not any(coef[2:]):
            other = j2  # q1 - q10 = a0 + a1 (q2 - q20)  ->  q2 - q20 = (q1 - q10 - a0) / a1
            coef = (-coef[0] / coef[1], 1.0 / coef[1], 0.0, 0.0, 0.0)
        else:
            continue
        adr = int(model.jnt_qposadr[other])
        out.append((adr, float(model.qpos0[adr]), coef))
    return tuple(out)


def gripper_of(
    model: mujoco.MjModel, data: mujoco.MjData, arm: Arm | str
) -> tuple[Gripper | None, str]:
    """``arm``'s gripper on ``model`` (its fingers found at ``data``'s pose), or None and why
    not."""
    arm = Arm.parse(arm)
    joint = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, N.gripper_joint(arm))
    if joint < 0:
        return None, "no gripper joint"
    if int(model.jnt_type[joint]) not in (
        int(mujoco.mjtJoint.mjJNT_SLIDE),
        int(mujoco.mjtJoint.mjJNT_HINGE),
    ):
        return None, "the gripper joint is not a slide or hinge"
    act, why = _servo_actuator(model, joint, arm)
    if act is None:
        return None, why
    gear = float(model.actuator_gear[act, 0])
    lo, hi = (float(v) for v in model.jnt_range[joint])
    if not model.jnt_limited[joint]:
        lo, hi = -math.inf, math.inf
    if model.actuator_ctrllimited[act]:
        c = sorted(float(v) / gear for v in model.actuator_ctrlrange[act])
        lo, hi = max(lo, c[0]), min(hi, c[1])
    if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
        return None, "the gripper joint has no finite range"
    qadr = int(model.jnt_qposadr[joint])
    followers = _followers(model, data, joint)
    scratch = _scratch(model, data)
    poses = []
    for q in (lo, hi):
        _place(model, scratch, qadr, q, followers)
        poses.append(np.hstack([scratch.xpos, scratch.xmat]).copy())
    moved = np.flatnonzero(np.abs(poses[0] - poses[1]).max(axis=1) > MOVED_M)
    if len(moved) < 2:
        return None, "fewer than two finger bodies move with the gripper joint"
    fingers = tuple(int(g) for g in range(model.ngeom) if model.geom_bodyid[g] in set(moved))
    spread = []
    for q in (lo, hi):
        _place(model, scratch, qadr, q, followers)
        spread.append(_spread(model, scratch, fingers))
    closed, opened = (lo, hi) if spread[0] <= spread[1] else (hi, lo)
    return Gripper(joint, qadr, act, gear, closed, opened, followers, fingers), ""


def _scratch(model: mujoco.MjModel, data: mujoco.MjData) -> mujoco.MjData:
    scratch = mujoco.MjData(model)
    scratch.qpos[:] = data.qpos
    scratch.mocap_pos[:] = data.mocap_pos
    scratch.mocap_quat[:] = data.mocap_quat
    return scratch


_FAR_M = 10.0  # geomDistance's search bound [m]


def _spread(model, data, fingers: tuple[int, ...]) -> float:
    """The smallest distance between geoms of two different finger bodies [m]."""
    best, fromto = math.inf, np.zeros(6)
    for i, a in enumerate(fingers):
        for b in fingers[i + 1 :]:
            if model.geom_bodyid[a] != model.geom_bodyid[b]:
                best = min(best, mujoco.mj_geomDistance(model, data, a, b, _FAR_M, fromto))
    return best


def box_clearance(model, data, box_geoms: list[int], fingers: tuple[int, ...]) -> float:
    """The smallest distance from ``box_geoms`` to ``fingers`` [m] (negative: overlap)."""
    fromto = np.zeros(6)
    return min(
        mujoco.mj_geomDistance(model, data, b, f, _FAR_M, fromto)
        for b in box_geoms
        for f in fingers
    )


def finger_target(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    arm: Arm | str,
    box_geoms: list[int],
    gap_m: float = GAP_M,
) -> FingerTarget:
    """Where ``arm``'s gripper stops ``gap_m`` short of ``box_geoms`` with the rest of the
    robot as in ``data`` (see the module docstring); ``data`` is not changed."""
    if not (math.isfinite(gap_m) and 0.0 < gap_m <= MAX_GAP_M):
        raise TwinInputError("finger gap_m", gap_m, f"in (0, {MAX_GAP_M}] m")
    if not box_geoms or not all(0 <= int(b) < model.ngeom for b in box_geoms):
        raise TwinInputError("box_geoms", list(box_geoms), f"one or more geom ids < {model.ngeom}")
    arm = Arm.parse(arm)
    g, why = gripper_of(model, data, arm)
    if g is None:
        return FingerTarget(arm, None, why)
    scratch = _scratch(model, data)

    def clear(q: float) -> float:
        _place(model, scratch, g.qpos, q, g.followers)
        return box_clearance(model, scratch, box_geoms, g.fingers)

    if clear(g.closed) >= gap_m:
        return FingerTarget(arm, None, "the box is not between the fingers")
    if clear(g.opened) < gap_m:
        return FingerTarget(arm, None, "the box does not fit between the open fingers")
    inside, outside = g.closed, g.opened  # clear(inside) < gap <= clear(outside)
    for _ in range(BISECT_STEPS):
        mid = 0.5 * (inside + outside)
        if clear(mid) < gap_m:
            inside = mid
        else:
            outside = mid
    return FingerTarget(arm, outside)


def smoothstep(x: float) -> float:
    """0 at x <= 0, 1 at x >= 1, with zero slope at both ends."""
    x = min(max(x, 0.0), 1.0)
    return x * x * (3.0 - 2.0 * x)


@dataclass
class GripperRamp:
    """Moves one gripper servo's ``ctrl`` from ``start`` to ``end`` over ``duration_s`` from
    ``t0_s`` (smoothstep: no jerk at either end, so the fingers do not overshoot their stop)."""

    actuator: int
    start: float
    end: float
    t0_s: float
    duration_s: float = CLOSE_S

    def apply(self, data: mujoco.MjData, now: float) -> bool:
        """Write the ramp's ``ctrl`` at ``now`` [s]; True once it has reached ``end``."""
        x = (now - self.t0_s) / self.duration_s if self.duration_s > 0 else 1.0
        data.ctrl[self.actuator] = self.start + (self.end - self.start) * smoothstep(x)
        return x >= 1.0
