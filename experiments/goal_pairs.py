"""Seeded random goal pairs for a robot's two arms (ROB's by default), shared by the ``study``
experiment and the ``planner`` benchmark: joint goal pairs, the same pairs as TCP pose goals,
and lockstep Cartesian targets (short mirrored TCP moves from the group's commanded poses).
The TCP poses are in the robot's own arm kinematics
(``rob_twin.planners.robot_kinematics.arm_kinematics``; ``robot`` None: ROB's).

Units: radians, metres.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
from rob_twin.models.robot import Robot
from rob_twin.planners.group import ArmGroup
from rob_twin.planners.pose_goals import group_torso
from rob_twin.planners.robot_kinematics import arm_kinematics

SAMPLING = "home + N(0, 0.8 rad) per joint, clipped; each arm and the pair >= 10 mm free"


def goal_pairs(
    group: ArmGroup,
    n: int,
    rng: np.random.Generator,
    sigma_rad: float = 0.8,
    min_clearance_m: float = 0.01,
) -> list[dict[str, np.ndarray]]:
    """``n`` pairs {arm: q}: per arm, its commanded q + N(0, sigma_rad) per joint clipped to
    the limits and free by ``min_clearance_m`` alone; the pair free by it together."""
    out: list[dict[str, np.ndarray]] = []
    while len(out) < n:
        goals = {}
        for a in group.arm_names:
            lo, hi = group.joint_limits(a)
            while True:
                q = np.clip(group.arm_q(a) + rng.normal(0.0, sigma_rad, lo.size), lo, hi)
                if group.clearance({a: q}).distance_m >= min_clearance_m:
                    break
            goals[a] = q
        if group.clearance(goals).distance_m >= min_clearance_m:
            out.append(goals)
    return out


def pose_targets(
    group: ArmGroup, pairs: list[dict[str, np.ndarray]], robot: Robot | str | None = None
) -> list[dict[str, pin.SE3]]:
    """The TCP poses (base frame, the group's torso) of joint goal pairs on ``robot``
    (None: ROB)."""
    torso = group_torso(group)
    kin = {a: arm_kinematics(robot, a) for a in group.arm_names}
    return [{a: kin[a].tcp_pose(q, torso) for a, q in p.items()} for p in pairs]


def cartesian_targets(
    group: ArmGroup, n: int, rng: np.random.Generator, robot: Robot | str | None = None
) -> list[dict[str, pin.SE3]]:
    """``n`` lockstep requests: both TCPs move from their commanded poses by mirrored
    offsets (forward 0..10 cm, outward -5..+5 cm, up -5..+15 cm) and turn 0..0.3 rad about
    the vertical, mirrored (``right`` is the robot's right, -y); ``robot``: None for ROB."""
    torso = group_torso(group)
    kin = {a: arm_kinematics(robot, a) for a in group.arm_names}
    out = []
    for _ in range(n):
        dx, dy, dz = rng.uniform(0.0, 0.1), rng.uniform(-0.05, 0.05), rng.uniform(-0.05, 0.15)
        yaw = rng.uniform(0.0, 0.3)
        req = {}
        for a in group.arm_names:
            sign = -1.0 if a == "right" else 1.0
            p = kin[a].tcp_pose(group.arm_q(a), torso)
            rot = p.rotation @ pin.exp3(np.array([0.0, 0.0, yaw * sign]))
            req[a] = pin.SE3(rot, p.translation + np.array([dx, sign * dy, dz]))
        out.append(req)
    return out
