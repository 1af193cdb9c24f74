"""Damiao motor table: the CAN mapping ranges and the physical limits of OpenArm's motors.

Pure data (no mujoco, no numpy). Two different kinds of limit, never to be confused:

* ``pmax_rad`` / ``vmax_rad_s`` / ``tmax_nm``: the *wire scaling* of the MIT frame
  (registers PMAX/VMAX/TMAX, RID 21/22/23). A value is sent as a fraction of
  [-max, +max]; host and drive must agree on them or every command is scaled wrongly.
  Source: enactic/openarm_can ``MOTOR_LIMIT_PARAMS``
  (``include/openarm/damiao_motor/dm_motor_constants.hpp``, as of its commit 25f8f44: DM4340
  VMAX 10 rad/s, the value real DM4340P motors report).
* ``peak_torque_nm`` / ``no_load_speed_rad_s``: what the motor can physically do
  (OpenArm v10 URDF ``config/arm/v10/joint_limits.yaml``: effort 40 / 27 / 7 Nm,
  velocity 16.754666 / 5.445426 / 20.943946 rad/s = 160 / 52 / 200 rpm at 24 V).

Research notes: ``shared/research/openarm_can_models.md`` sections 1.3, 1.7, 2.2.
"""

from __future__ import annotations

from dataclasses import dataclass

from rob_twin.models.names import JOINTS_PER_ARM

# MIT gain ranges, the same for every motor (openarm_can ``dm_motor_control.cpp``).
KP_MAX = 500.0  # [Nm/rad]
KD_MAX = 5.0  # [Nm s/rad]


@dataclass(frozen=True, kw_only=True)
class MotorLimits:
    """One Damiao motor model. Units: rad, rad/s, Nm."""

    model: str
    pmax_rad: float  # wire scaling of q: [-PMAX, +PMAX]
    vmax_rad_s: float  # wire scaling of dq: [-VMAX, +VMAX]
    tmax_nm: float  # wire scaling of tau: [-TMAX, +TMAX]
    peak_torque_nm: float  # physical peak torque (the drive saturates here)
    no_load_speed_rad_s: float  # at 24 V


DM8009 = MotorLimits(
    model="DM8009",
    pmax_rad=12.5,
    vmax_rad_s=45.0,
    tmax_nm=54.0,
    peak_torque_nm=40.0,
    no_load_speed_rad_s=16.754666,
)
DM4340 = MotorLimits(
    model="DM4340",
    pmax_rad=12.5,
    vmax_rad_s=10.0,
    tmax_nm=28.0,
    peak_torque_nm=27.0,
    no_load_speed_rad_s=5.445426,
)
DM4310 = MotorLimits(
    model="DM4310",
    pmax_rad=12.5,
    vmax_rad_s=30.0,
    tmax_nm=10.0,
    peak_torque_nm=7.0,
    no_load_speed_rad_s=20.943946,
)

MOTORS: dict[str, MotorLimits] = {m.model: m for m in (DM8009, DM4340, DM4310)}

# OpenArm v10 joint -> motor (openarm_can calibration script, openarm_ros2
# ``v10_simple_hardware.hpp``): J1-J2 DM8009, J3-J4 DM4340, J5-J7 DM4310.
OPENARM_ARM_MOTORS: tuple[MotorLimits, ...] = (
    DM8009,
    DM8009,
    DM4340,
    DM4340,
    DM4310,
    DM4310,
    DM4310,
)
assert len(OPENARM_ARM_MOTORS) == JOINTS_PER_ARM

# OpenArm addressing: command (ESC) id 0x01..0x07, reply (MST) id = ESC + 0x10.
MIT_COMMAND_ID_BASE = 0x00
MIT_REPLY_OFFSET = 0x10
ESC_IDS: tuple[int, ...] = tuple(range(1, JOINTS_PER_ARM + 1))
MST_IDS: tuple[int, ...] = tuple(i + MIT_REPLY_OFFSET for i in ESC_IDS)
REGISTER_ID = 0x7FF  # register and system frames go here, target ESC id in data[0..1]

# OpenArm ROS 2 arm gains (``openarm_ros2`` v10_simple_hardware): kp, kd per joint.
OPENARM_KP: tuple[float, ...] = (70.0, 70.0, 70.0, 60.0, 10.0, 10.0, 10.0)  # [Nm/rad]
OPENARM_KD: tuple[float, ...] = (2.75, 2.5, 2.0, 2.0, 0.7, 0.6, 0.5)  # [Nm s/rad]
