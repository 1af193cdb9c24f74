"""``arm_kinematics(robot, arm)``: the TCP kinematics of one arm of a robot.

ROB (the robot whose MJCF is ``models/rob/scene.xml``) gets its Pinocchio
``rob_twin.planners.kinematics.ArmKinematics``, unchanged (its IK, carries and pose goals
stay bit-for-bit what they were); every other robot gets
``rob_twin.planners.mj_kinematics.MjArmKinematics`` on its own compiled canonical model (one
read-only copy per robot and process, each instance with its own MjData). Both answer the
same calls (TCP pose, Jacobian, gravity torques, limits), so ``IKSolver``, lockstep Cartesian
paths, carries and goal checks take either.

Why ROB keeps Pinocchio: its numbers are the baselines every scenario, study and fingerprint
compares against, and one TCP pose plus Jacobian is about as fast either way (CHANGELOG).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import mujoco
from rob_twin.models.names import Arm
from rob_twin.planners.kinematics import ArmKinematics
from rob_twin.planners.mj_kinematics import MjArmKinematics

if TYPE_CHECKING:
    from rob_twin.models.robot import Robot

_MODELS: dict[int, tuple[Robot, mujoco.MjModel]] = {}


def uses_rob_kinematics(robot: Robot) -> bool:
    """True for ROB's own MJCF: its arms get the Pinocchio ArmKinematics."""
    from rob_twin.models.loading import SCENE_PATH

    return robot.description.mjcf_path == SCENE_PATH.resolve()


def _shared_model(robot: Robot) -> mujoco.MjModel:
    """One read-only copy of ``robot``'s canonical model per process."""
    entry = _MODELS.get(id(robot))
    if entry is None or entry[0] is not robot:
        entry = _MODELS[id(robot)] = (robot, robot.model())
    return entry[1]


def arm_kinematics(
    robot: Robot | str | Path | None, arm: Arm | str
) -> ArmKinematics | MjArmKinematics:
    """The kinematics of ``robot``'s ``arm`` (None: the default robot, ROB). One instance
    per thread (each owns its data)."""
    if robot is None:
        return ArmKinematics(arm)
    from rob_twin.models.robot import robot_of  # the robot file's loader: only when asked

    robot = robot_of(robot)
    if uses_rob_kinematics(robot):
        return ArmKinematics(arm)
    return MjArmKinematics(_shared_model(robot), arm, key=robot.model_hash)
