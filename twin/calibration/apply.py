"""A calibration applied to the twin a command builds: the robot's model with the fitted
model-side parameters, each arm's drive configurations (the robot's Amber drives) with the
drive-side ones, and each arm's transport delays where they act.

The transport delays (``{arm}/command_delay_s``, ``{arm}/feedback_delay_s``;
``calibrated_delays``) act in the lockstep closed loop (``run``, ``demo``, ``view``,
``rehearse``, ``teleop``, ``study`` with ``--calibration``): the host's frames reach the
drives ``command_delay_s`` after the host sent them and the drives' replies reach the host
``feedback_delay_s`` after they were sent (``rob_twin.twin.bus.transport_delay``, between the
host and its bus), and a ``--record-can`` recording is stamped as the host sees the bus
(commands when sent, replies when received), so a calibration fitted from it finds the
delays again. ``rob-twin compare`` replays recordings with them; the mirror feeds the host's
frames to its twin ``command_delay_s`` after their stamp and compares each reply with the
twin ``feedback_delay_s`` before its stamp. ``rob-twin bank --calibration`` takes only the
model and drive parameters: the bank is the drives' side of a live bus whose host and
transport are real (their delays are the real ones, not modelled).
"""

from __future__ import annotations

from dataclasses import replace

import mujoco
from rob_twin.models.names import Arm
from rob_twin.twin.calibration.calibration_file import Calibration
from rob_twin.twin.calibration.parameters import (
    apply_to_model,
    check_family,
    damiao_parameters,
    delays,
    drive_configs,
)
from rob_twin.twin.drives.amber_drive import DriveConfig
from rob_twin.twin.drives.damiao_drive import DamiaoDriveConfig


def calibrated_model(
    calibration: Calibration, model: mujoco.MjModel | None = None
) -> mujoco.MjModel:
    """A copy of ``model`` (default: ROB's scene) with ``calibration``'s model parameters."""
    if model is None:
        from rob_twin.models.loading import load_scene

        model = load_scene()
    return apply_to_model(model, calibration.values)


def calibrated_drives(calibration: Calibration, robot=None) -> dict[Arm, tuple[DriveConfig, ...]]:
    """Each arm's drive configurations: ``robot``'s Amber drives (a
    ``rob_twin.models.robot.Robot``; None: the default robot) with ``calibration``'s drive
    parameters."""
    return drive_configs(calibration.values, robot)


def calibrated_delays(calibration: Calibration | None) -> dict[Arm, tuple[float, float]]:
    """Each arm's (command delay, feedback delay) [s] in ``calibration`` (zeros for None or
    a calibration without them)."""
    if calibration is None:
        return {arm: (0.0, 0.0) for arm in Arm}
    return delays(calibration.values)


def damiao_drives(
    values: dict[str, float], robot
) -> tuple[dict[Arm, tuple[DamiaoDriveConfig, ...]], dict[Arm, tuple | None]]:
    """``robot``'s Damiao drives (a ``rob_twin.models.robot.Robot`` with Damiao drives) with
    the drive parameters in ``values`` (a calibration's; empty: the robot file's): each arm's drive
    configurations (gain factors, encoder zeros) and its joints' identified friction (None:
    the robot has none and the calibration sets none)."""
    from rob_twin.models.damiao_motors import MOTORS
    from rob_twin.twin.drives.damiao_bank import default_damiao_configs

    params = damiao_parameters(values, robot)
    motors = tuple(MOTORS[m] for m in robot.motors)
    configs, friction = {}, {}
    for arm, p in params.items():
        configs[arm] = tuple(
            replace(c, kp_scale=kp, kd_scale=kd, zero_offset_rad=z)
            for c, kp, kd, z in zip(
                default_damiao_configs(motors=motors),
                p.kp_scale,
                p.kd_scale,
                p.zero_offset_rad,
                strict=True,
            )
        )
        friction[arm] = p.friction
    return configs, friction


def check_robot(robot, calibration: Calibration | None) -> None:
    """MissingCapabilityError (exit 2) when ``calibration`` is given for a robot whose drives
    have no calibration model (family ``ideal``); UnknownNameError when it names a parameter
    of another drive family (an Amber calibration on a Damiao robot or the reverse).
    ``robot``: a ``rob_twin.models.robot.Robot`` or anything ``robot_of`` takes."""
    if calibration is not None:
        from rob_twin.models.robot import CAN_DRIVES, robot_of

        robot = robot_of(robot)
        robot.require(CAN_DRIVES, "a calibration (fitted drive parameters)")
        check_family(calibration.values, robot)
