"""An OpenArm-class variant of ROB: the same body and arms, each arm joint on a Damiao
MIT-mode drive (a MuJoCo ``motor``: torque in, no servo inside the model).

Built at load time from ROB's generated model with ``mujoco.MjSpec`` (no second
generator): the fourteen arm position servos are swapped for torque motors that keep
their names (``right/j1_servo`` ...), so every index helper of ``rob_twin.models.loading`` works
unchanged. ctrl is the joint torque [Nm], limited to the motor's physical peak
(DM8009 40, DM4340 27, DM4310 7 Nm; ``rob_twin.models.damiao_motors``). The impedance law
and its gains live in the simulated drive (``rob_twin.twin.drives.damiao_drive``), as on the real
motors. Grippers, torso and head keep their servos.
"""

from __future__ import annotations

from pathlib import Path

import mujoco
from rob_twin.models import names as N
from rob_twin.models.damiao_motors import OPENARM_ARM_MOTORS
from rob_twin.models.loading import SCENE_PATH
from rob_twin.models.names import Arm

ROBOT_NAME = "openarm"


def openarm_spec(path: Path | str = SCENE_PATH) -> mujoco.MjSpec:
    """ROB's scene with every arm joint on a torque motor (the Damiao peak as its limit)."""
    spec = mujoco.MjSpec.from_file(str(path))
    for arm in Arm:
        for j, motor in enumerate(OPENARM_ARM_MOTORS, start=1):
            act = spec.actuator(N.arm_actuator(arm, j))
            act.set_to_motor()
            peak = motor.peak_torque_nm
            act.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
            act.ctrlrange = [-peak, peak]
            act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
            act.forcerange = [-peak, peak]
    return spec


def load_openarm_scene(path: Path | str = SCENE_PATH) -> mujoco.MjModel:
    """The compiled OpenArm-class scene (same bodies, joints and names as ROB's)."""
    return openarm_spec(path).compile()
