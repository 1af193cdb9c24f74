"""Load ROB's MuJoCo scene and its Pinocchio twin, and apply the home pose."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np

from controllers import names as N
from controllers.names import Arm, UnknownNameError

from . import dimensions as D
from .build import MODEL_DIR

SCENE_PATH = MODEL_DIR / "scene.xml"
ROBOT_PATH = MODEL_DIR / "rob.xml"


def load_scene(path: Path | str = SCENE_PATH) -> mujoco.MjModel:
    """The MuJoCo model of ROB at the table (``models/rob/scene.xml``)."""
    return mujoco.MjModel.from_xml_path(str(path))


def load_pinocchio(path: Path | str = ROBOT_PATH):
    """Pinocchio model of the robot from the same MJCF (the base is its first body)."""
    import pinocchio as pin

    return pin.buildModelFromMJCF(str(path))


def joint_qpos_index(model: mujoco.MjModel, name: str) -> int:
    jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
    if jid < 0:
        raise UnknownNameError("joint", name, [model.joint(i).name for i in range(model.njnt)])
    return int(model.jnt_qposadr[jid])


def arm_qpos_indices(model: mujoco.MjModel, arm: Arm | str) -> np.ndarray:
    return np.array([joint_qpos_index(model, n) for n in N.arm_joints(arm)])


def actuator_index(model: mujoco.MjModel, name: str) -> int:
    aid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_ACTUATOR, name)
    if aid < 0:
        raise UnknownNameError("actuator", name, [model.actuator(i).name for i in range(model.nu)])
    return aid


def arm_actuator_indices(model: mujoco.MjModel, arm: Arm | str) -> np.ndarray:
    return np.array([actuator_index(model, n) for n in N.arm_actuators(arm)])


def apply_home(model: mujoco.MjModel, data: mujoco.MjData) -> None:
    """Put both arms in the home pose, servos commanded there too; then mj_forward."""
    home = np.array(D.HOME_ARM_POSE)
    for arm in Arm:
        data.qpos[arm_qpos_indices(model, arm)] = home
        data.ctrl[arm_actuator_indices(model, arm)] = home
    mujoco.mj_forward(model, data)
