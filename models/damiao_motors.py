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

Also here: each motor's gear ratio and rotor inertia (registers Gr / Inertia), the
factory register values a simulated drive starts with (``factory_registers``; which are
known and which are SIMULATED placeholders is listed there), and OpenArm's gripper drive
(``OPENARM_GRIPPER_MOTOR``, ``GRIPPER_ESC_ID`` 0x08, ``GRIPPER_MST_ID`` 0x18).

Research notes: ``shared/research/openarm_can_models.md`` sections 1.3, 1.7, 2.2;
``shared/research/openarm_host_clients.md``.
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
    gear_ratio: float = 1.0  # register Gr (RID 20)
    rotor_inertia_kg_m2: float = 0.0  # register Inertia (RID 12), motor side


DM8009 = MotorLimits(
    model="DM8009",
    pmax_rad=12.5,
    vmax_rad_s=45.0,
    tmax_nm=54.0,
    peak_torque_nm=40.0,
    no_load_speed_rad_s=16.754666,
    gear_ratio=9.0,
    rotor_inertia_kg_m2=1.95e-4,
)
DM4340 = MotorLimits(
    model="DM4340",
    pmax_rad=12.5,
    vmax_rad_s=10.0,
    tmax_nm=28.0,
    peak_torque_nm=27.0,
    no_load_speed_rad_s=5.445426,
    gear_ratio=40.0,
    rotor_inertia_kg_m2=1.970e-5,
)
DM4310 = MotorLimits(
    model="DM4310",
    pmax_rad=12.5,
    vmax_rad_s=30.0,
    tmax_nm=10.0,
    peak_torque_nm=7.0,
    no_load_speed_rad_s=20.943946,
    gear_ratio=10.0,
    rotor_inertia_kg_m2=1.8e-5,
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

# OpenArm's gripper: the 8th drive of each arm, a DM4310 on ESC 0x08 / MST 0x18, on the
# arm's own bus (openarm_can ``init_gripper_motor(DM4310, 0x08, 0x18)`` in its examples;
# LeRobot's OpenArm follower drives eight motors per bus). Hosts drive it in MIT mode
# (LeRobot, openarm_can's ``set_position_mit``) or in POS_FORCE mode (openarm_can's
# ``GripperComponent::set_position`` / ``grasp``, which write CTRL_MODE 4 at start-up).
# The drive itself is an ordinary Damiao drive: ``DamiaoDrive`` serves it with
# ``DamiaoDriveConfig(motor=OPENARM_GRIPPER_MOTOR, esc_id=GRIPPER_ESC_ID,
# mst_id=GRIPPER_MST_ID)``. Its position is the motor shaft's, not a finger opening.
OPENARM_GRIPPER_MOTOR: MotorLimits = DM4310
GRIPPER_DRIVE_NUMBER = 8  # drive (joint) number of the gripper on an arm's bus
GRIPPER_ESC_ID = 0x08
GRIPPER_MST_ID = GRIPPER_ESC_ID + MIT_REPLY_OFFSET  # 0x18

# Factory register values a simulated drive starts with, by register id (RID; the names
# are ``rob_twin.controllers.damiao_codec.Register``'s). Only some are known:
#   from the DM4340P register dump quoted in shared/research/openarm_can_models.md 1.7
#   (openarm_can commit 25f8f44): UV 15 V, OT 100 degC, OC 0.8, ACC 2, DEC -2, MAX_SPD
#   600, TIMEOUT 0 (off), NPP 14, Rs 0.8404 Ohm, Ls 3.545e-4 H, flux 5.157e-3 Wb; the
#   dump's CTRL_MODE is 3 (VEL) but a drive here starts in MIT (1), the mode every
#   OpenArm host expects (change it with ``DamiaoDriveConfig.ctrl_mode``);
#   per motor (``factory_registers``): Gr and Inertia from the Seeed datasheet table
#   (same file, 1.7), PMAX/VMAX/TMAX from ``MotorLimits``;
#   CAN_BR 4 (1 Mbit/s, OpenArm's nominal rate).
# SIMULATED placeholders, not measured on any drive (they change nothing in the
# simulation; a host reading them gets a plausible, stable number): KT, Damp, the
# version/serial registers, the loop tuning registers 24-34, the calibration registers
# 50-56 and 63-65, IMAX; the DM4340P's NPP/Rs/Ls/flux are used for every motor.
SIM_FIRMWARE_VERSION = 5013  # RID 14 sw_ver: SIMULATED, no real drive's number
SIM_HARDWARE_VERSION = 1  # RID 13: SIMULATED
SIM_SUB_VERSION = 1  # RID 36: SIMULATED
FACTORY_REGISTERS: dict[int, int | float] = {
    0: 15.0,  # UV [V] (dump)
    1: 0.0,  # KT: SIMULATED (not modelled)
    2: 100.0,  # OT [degC] (dump)
    3: 0.8,  # OC [pu] (dump)
    4: 2.0,  # ACC (dump)
    5: -2.0,  # DEC (dump)
    6: 600.0,  # MAX_SPD (dump)
    9: 0,  # TIMEOUT, 50 us counts, 0 = off (dump)
    10: 1,  # CTRL_MODE: MIT (see above)
    11: 0.0,  # Damp: SIMULATED
    13: SIM_HARDWARE_VERSION,
    14: SIM_FIRMWARE_VERSION,
    15: 0,  # SN: SIMULATED (the drive's number is set by the bank wiring, not here)
    16: 14,  # NPP (dump)
    17: 0.8404,  # Rs [Ohm] (dump)
    18: 3.545e-4,  # Ls [H] (dump)
    19: 5.157e-3,  # flux [Wb] (dump)
    24: 1000.0,  # I_BW: SIMULATED
    25: 0.002,  # KP_ASR: SIMULATED (the simulated loops do not read it)
    26: 0.002,  # KI_ASR: SIMULATED
    27: 30.0,  # KP_APR: SIMULATED
    28: 0.0,  # KI_APR: SIMULATED
    29: 56.0,  # OV [V]: SIMULATED
    30: 1.0,  # GREF: SIMULATED
    31: 4.0,  # Deta: SIMULATED
    32: 100.0,  # V_BW: SIMULATED
    33: 1000.0,  # IQ_c1: SIMULATED
    34: 1000.0,  # VL_c1: SIMULATED
    35: 4,  # CAN_BR: 1 Mbit/s
    36: SIM_SUB_VERSION,
    50: 0.0,  # u_off: SIMULATED
    51: 0.0,  # v_off: SIMULATED
    52: 0.0,  # k1: SIMULATED
    53: 0.0,  # k2: SIMULATED
    54: 0.0,  # m_off: SIMULATED
    55: 1.0,  # dir: SIMULATED
    56: 0.0,  # motor-side m_off: SIMULATED
    59: 10.0,  # IMAX [A]: SIMULATED
    63: 0.0,  # Iu_off: SIMULATED
    64: 0.0,  # Iv_off: SIMULATED
    65: 0.0,  # Iw_off: SIMULATED
}


def factory_registers(motor: MotorLimits) -> dict[int, int | float]:
    """The factory registers of a drive with ``motor`` (RID -> value): the common table
    plus the motor's Gr, Inertia and PMAX/VMAX/TMAX. The ids (7, 8), the live registers
    (60-62, 80-81) and the installation's UV/OT/TIMEOUT/CTRL_MODE are the drive's."""
    regs = dict(FACTORY_REGISTERS)
    regs.update(
        {
            12: motor.rotor_inertia_kg_m2,
            20: motor.gear_ratio,
            21: motor.pmax_rad,
            22: motor.vmax_rad_s,
            23: motor.tmax_nm,
        }
    )
    return regs
