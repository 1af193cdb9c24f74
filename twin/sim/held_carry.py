"""Carrying the held box: one lockstep Cartesian move of both hands, dispatched to the owners
with an optional skew per arm.

``carry_plan(loop, translation_m)`` plans both TCPs along parallel straight lines (the same
translation, orientations kept; ``rob_twin.planners.cartesian.plan_cartesian``: one shared path
parameter and time law) with the loop's robot's own arm kinematics
(``rob_twin.planners.robot_kinematics.arm_kinematics``: ROB's Pinocchio model, any other
robot's MuJoCo model, poses in its base or world frame), so the hands' relative pose, the
closed chain through the box, is kept to the planner's line tolerance; ``carry_plan`` checks
it (``chain_deviation`` over the 125 Hz samples, against 1 mm and 5 mrad) and refuses a plan
that breaks it. It plans from the owners' commanded positions on the robot's scene with the
held box welded to the holding hand (``held_planning_model``): the planner checks the box
against the world, the body and the other arm at every sample.

``dispatch_carry(loop, plan, start_s, skew_s)`` streams each arm's planned (p, v, a) to its
owner at every owner tick (``sample``: the executor's quintic Hermite between the plan's
samples, one owner period ahead as the executor sends them), the arm's clock offset by
``skew_s[arm]``: skew 0 is what the synchronized executor's one shared start stamp gives; a
skew is what independent dispatch of the two arms' commands gives when one arrives that much
later (middleware, host load). Once an arm's last sample is sent the task leaves that arm
alone (its owner holds that target), so a later carry can take over.

Units: metres, seconds, radians.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache

import mujoco
import numpy as np
import pinocchio as pin
from rob_twin.controllers.trajectory import MultiArmTrajectory
from rob_twin.models.names import Arm
from rob_twin.models.robot import Robot
from rob_twin.models.robot_model import compile_quietly, robot_spec
from rob_twin.planners.cartesian import CartesianConfig, plan_cartesian
from rob_twin.planners.group import ArmGroup
from rob_twin.planners.plan import Plan
from rob_twin.planners.robot_kinematics import arm_kinematics
from rob_twin.twin.errors import TwinInputError
from rob_twin.twin.sim.held_object import BOX, hand_body, hand_subtree, weld_name

CHAIN_TOLERANCE_M = 1e-3  # the hands' relative position may drift this much along a carry [m]
CHAIN_TOLERANCE_RAD = 5e-3  # and their relative orientation this much [rad]


class ClosedChainError(TwinInputError):
    """A carry plan that does not keep the hands' relative pose within tolerance."""


def chain_deviation(
    plan: Plan, torso: float = 0.0, robot: Robot | str | None = None
) -> tuple[float, float]:
    """The largest change of the right-to-left TCP pose over the plan's 125 Hz samples,
    against its first sample: (position [m], rotation angle [rad]); ``robot``: whose arms
    (None: ROB)."""
    kin = {arm: arm_kinematics(robot, arm) for arm in Arm}
    first, dp, dr = None, 0.0, 0.0
    for k in range(len(plan.t)):
        pose = {a: kin[a].tcp_pose(plan.arms[a.value].q[k], torso) for a in Arm}
        rel = pose[Arm.RIGHT].inverse() * pose[Arm.LEFT]
        if first is None:
            first = rel
        d = first.inverse() * rel
        dp = max(dp, float(np.linalg.norm(d.translation)))
        dr = max(dr, float(np.linalg.norm(pin.log3(d.rotation))))
    return dp, dr


@lru_cache(maxsize=4)
def _planning_model(robot: str) -> mujoco.MjModel:
    return compile_quietly(robot_spec(robot))


PLANNED_BOX = "held/box_in_hand"  # the held box as the planner sees it


def holding_arms(model: mujoco.MjModel, data: mujoco.MjData) -> list[Arm]:
    """The arms whose grasp weld on the held box is active now (none without a box)."""
    out = []
    for arm in Arm:
        eq = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_EQUALITY, weld_name(arm))
        if eq >= 0 and data.eq_active[eq]:
            out.append(arm)
    return out


def held_planning_model(robot: str, model: mujoco.MjModel, data: mujoco.MjData) -> mujoco.MjModel:
    """The planner's model of ``robot`` with the held box, if a hand holds it in ``data``: a body
    welded to the first holding hand at its present pose relative to that hand (rigid while
    held), so the planner checks it against the world, the body and the other arm at every
    sample (a Cartesian plan carries no clearance certificate: ``plan_cartesian`` checks its
    samples); its contacts with the holding hands (and their fingers) are excluded, reported
    by the planner as ``excluded``. Without a held box: ``robot``'s scene."""
    arms = holding_arms(model, data)
    if not arms:
        return _planning_model(robot)
    spec = robot_spec(robot)
    hand = hand_body(model, arms[0])
    box = data.body(BOX)
    rot_hand = data.body(hand).xmat.reshape(3, 3)
    pos = rot_hand.T @ (box.xpos - data.body(hand).xpos)
    quat = np.zeros(4)
    inv = np.zeros(4)
    mujoco.mju_negQuat(inv, data.body(hand).xquat)
    mujoco.mju_mulQuat(quat, inv, box.xquat)
    body = spec.body(hand).add_body(name=PLANNED_BOX, pos=pos.tolist(), quat=quat.tolist())
    # a convex mesh of the box's 8 corners: MuJoCo's box-cylinder collider can miss
    # penetrations (the planner warns), its mesh colliders do not
    half = model.geom(BOX).size
    corners = [
        [sx * half[0], sy * half[1], sz * half[2]]
        for sx in (-1, 1)
        for sy in (-1, 1)
        for sz in (-1, 1)
    ]
    spec.add_mesh(name=PLANNED_BOX, uservert=[c for v in corners for c in v])
    body.add_geom(
        name=PLANNED_BOX, type=mujoco.mjtGeom.mjGEOM_MESH, meshname=PLANNED_BOX, mass=1e-6
    )
    for arm in arms:
        for part in hand_subtree(model, arm):
            spec.add_exclude(bodyname1=PLANNED_BOX, bodyname2=part)
    return compile_quietly(spec)


def carry_plan(
    loop,
    translation_m,
    config: CartesianConfig | None = None,
    torso: float = 0.0,
    tolerance: tuple[float, float] = (CHAIN_TOLERANCE_M, CHAIN_TOLERANCE_RAD),
) -> Plan:
    """A lockstep Cartesian plan moving both TCPs by ``translation_m`` (3 values, base frame)
    from the owners' commanded positions; PlanFailedError (the planner's) if it cannot, and
    ClosedChainError if its samples change the hands' relative pose by more than
    ``tolerance`` ([m], [rad]): a held box would be squeezed or torn by the plan itself."""
    delta = np.asarray(translation_m, float)
    if delta.shape != (3,) or not np.all(np.isfinite(delta)) or np.linalg.norm(delta) > 0.5:
        raise TwinInputError("carry translation_m", translation_m, "3 finite values, |d| <= 0.5 m")
    robot: Robot = loop.robot
    model = held_planning_model(loop.config.robot, loop.twin.model, loop.twin.data)
    group = ArmGroup(model, robot.group_arms())
    targets = {}
    for arm in Arm:
        q = np.asarray(loop.commanded(arm), float)
        group.set_arm(arm.value, q)
        start = arm_kinematics(robot, arm).tcp_pose(q, torso)
        targets[arm.value] = pin.SE3(start.rotation, start.translation + delta)
    plan = plan_cartesian(group, targets, config, torso=torso, robot=robot).unwrap()
    dp, dr = chain_deviation(plan, torso, robot)
    if dp > tolerance[0] or dr > tolerance[1]:
        raise ClosedChainError(
            "carry plan's hand-to-hand pose change",
            f"{dp * 1e3:.3g} mm, {dr * 1e3:.3g} mrad",
            f"<= {tolerance[0] * 1e3:g} mm and <= {tolerance[1] * 1e3:g} mrad",
        )
    return plan


def carry_trajectory(plan: Plan) -> MultiArmTrajectory:
    """``plan``'s arms as the executor's ``MultiArmTrajectory`` (time from its first sample)."""
    return MultiArmTrajectory.from_arrays(
        {arm: (plan.t, tr.q, tr.qd, tr.qdd) for arm in Arm for tr in [plan.arms[arm.value]]},
        joints={arm: plan.arms[arm.value].q.shape[1] for arm in Arm},
    )


def sample(
    plan: Plan | MultiArmTrajectory, arm: Arm, t: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The plan's (p, v, a) of ``arm`` at plan time ``t`` [s from its first sample]: the
    executor's quintic Hermite between its 125 Hz samples (``MultiArmTrajectory.sample``: p,
    v and a agree with each other, so a stream of them is a state the owner's jerk-limited
    Ruckig reaches in one period; linear interpolation of each is not: between samples its
    positions stray from the integral of its velocities by up to a * h^2 / 8, which the owner
    can only reach by a longer profile, and falls behind); held at rest past the end."""
    traj = plan if isinstance(plan, MultiArmTrajectory) else carry_trajectory(plan)
    p, v, a = traj.sample(arm, t)
    if t >= traj.duration_s:
        return p, np.zeros_like(p), np.zeros_like(p)
    return p, v, a


def dispatch_carry(
    loop, plan: Plan, start_s: float, skew_s: Mapping[Arm, float] | None = None
) -> str:
    """Stream ``plan`` to both owners from simulated time ``start_s`` [s], each arm's clock
    late by ``skew_s[arm]`` [s] (default 0); returns the scheduler task's name. Like the
    executor, the target an owner takes at its tick T is the plan at T + one owner period
    (what the owner publishes at T is its commanded state for T + period); a target
    submitted at tick T is taken at the next one (the owners tick before this task), so
    the arm's commanded state at ``start_s + skew + tau`` is the plan's at ``tau``."""
    skew = {arm: float((skew_s or {}).get(arm, 0.0)) for arm in Arm}
    for arm, s in skew.items():
        if not (math.isfinite(s) and 0.0 <= s <= 1.0):
            raise TwinInputError(f"skew_s[{arm.value!r}]", s, "in [0, 1] s")
    name = f"carry/{len(loop.twin.scheduler.tasks)}"
    traj = carry_trajectory(plan)
    lookahead = 2.0 / loop.config.owner_rate_hz  # taken one period later, for one more
    sent_last = {arm: False for arm in Arm}

    def task(now: float) -> None:
        for arm in Arm:
            if now + 1e-9 < start_s + skew[arm] or sent_last[arm]:
                continue  # not yet, or done: the owner holds its last target, a later carry
            tau = now - start_s - skew[arm] + lookahead
            p, v, a = sample(traj, arm, tau)  # may command the arm
            loop.command(arm, p, v, a)
            sent_last[arm] = tau >= traj.duration_s

    loop.twin.scheduler.add(name, loop.config.owner_rate_hz, task)
    return name


def carry_duration(plan: Plan) -> float:
    """The plan's duration [s]."""
    return float(plan.t[-1] - plan.t[0])
