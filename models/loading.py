"""Load ROB's MuJoCo scene and its Pinocchio twin; apply a keyframe (``home``, ...)."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
from rob_twin.models import names as N
from rob_twin.models.build import MODEL_DIR
from rob_twin.models.names import Arm, UnknownNameError

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


def model_arm_joints(model: mujoco.MjModel, arm: Arm | str) -> tuple[str, ...]:
    """``arm``'s canonical joint names in ``model``, base to tip: ``j1`` .. ``jN`` for the N
    joints the model's arm has (five to seven; ROB's and OpenArm's seven)."""
    names = []
    for name in N.arm_joints(arm):
        if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name) < 0:
            break
        names.append(name)
    if not names:
        joint_qpos_index(model, N.arm_joint(arm, 1))  # UnknownNameError lists the joints
    return tuple(names)


def arm_qpos_indices(model: mujoco.MjModel, arm: Arm | str) -> np.ndarray:
    return np.array([joint_qpos_index(model, n) for n in model_arm_joints(model, arm)])


def actuator_index(model: mujoco.MjModel, name: str) -> int:
    aid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_ACTUATOR, name)
    if aid < 0:
        raise UnknownNameError("actuator", name, [model.actuator(i).name for i in range(model.nu)])
    return aid


def arm_actuator_indices(model: mujoco.MjModel, arm: Arm | str) -> np.ndarray:
    n = len(model_arm_joints(model, arm))
    return np.array([actuator_index(model, a) for a in N.arm_actuators(arm)[:n]])


HOME_KEY = "home"
CROSSING_START_KEY = "crossing_start"


def keyframe_index(model: mujoco.MjModel, name: str) -> int:
    """Index of keyframe ``name`` (``rob_twin.models.poses.KEYFRAMES``); UnknownNameError
    lists them."""
    kid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, name)
    if kid < 0:
        raise UnknownNameError("keyframe", name, [model.key(i).name for i in range(model.nkey)])
    return kid


def keyframe_arm_q(model: mujoco.MjModel, arm: Arm | str, name: str = HOME_KEY) -> np.ndarray:
    """``arm``'s joint angles [rad] in keyframe ``name`` of ``model``."""
    return model.key_qpos[keyframe_index(model, name)][arm_qpos_indices(model, arm)].copy()


def apply_keyframe(model: mujoco.MjModel, data: mujoco.MjData, name: str = HOME_KEY) -> None:
    """Put both arms at keyframe ``name``, their servos commanded there too; then mj_forward.

    Only the arms' joints and servos are set; the rest of ``data`` is left as it is."""
    key = model.key(keyframe_index(model, name))
    for arm in Arm:
        qi, ai = arm_qpos_indices(model, arm), arm_actuator_indices(model, arm)
        data.qpos[qi] = key.qpos[qi]
        data.ctrl[ai] = key.ctrl[ai]
    mujoco.mj_forward(model, data)


def apply_home(model: mujoco.MjModel, data: mujoco.MjData) -> None:
    """Put both arms in the home pose (keyframe ``home``), servos commanded there too."""
    apply_keyframe(model, data, HOME_KEY)


def keyframe_state(name: str = HOME_KEY) -> tuple[mujoco.MjModel, np.ndarray]:
    """(scene model, full qpos): the scene with both arms at keyframe ``name``, base at the
    origin (``home``: ROB at home; ``crossing_start``: the start of the crossing pair)."""
    model = load_scene()
    data = mujoco.MjData(model)
    apply_keyframe(model, data, name)
    return model, data.qpos.copy()
