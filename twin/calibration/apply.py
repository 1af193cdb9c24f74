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

import mujoco
from rob_twin.models.names import Arm
from rob_twin.twin.calibration.calibration_file import Calibration
from rob_twin.twin.calibration.parameters import apply_to_model, delays, drive_configs
from rob_twin.twin.drives.amber_drive import DriveConfig


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


def check_robot(robot, calibration: Calibration | None) -> None:
    """MissingCapabilityError (exit 2) when ``calibration`` is given for a robot without Amber
    drives (a calibration holds Amber drive parameters; Damiao drives take none yet).
    ``robot``: a ``rob_twin.models.robot.Robot`` or anything ``robot_of`` takes."""
    if calibration is not None:
        from rob_twin.models.robot import AMBER_DRIVES, robot_of

        robot_of(robot).require(AMBER_DRIVES, "a calibration (fitted Amber drive parameters)")
