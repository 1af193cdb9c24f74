"""A calibration applied to the twin a command builds: the robot's model with the fitted
model-side parameters, and each arm's drive configurations (the robot's Amber drives) with
the drive-side ones.

The transport delays (``{arm}/command_delay_s``, ``{arm}/feedback_delay_s``) have no hook in
a live closed loop (the owners and drives exchange frames on simulated buses without a
transport delay of their own): they are used by ``rob-twin compare`` (and the mirror), which
replay recordings; a running twin takes only the model and drive parameters.
"""

from __future__ import annotations

import mujoco
from rob_twin.models.names import Arm
from rob_twin.twin.calibration.calibration_file import Calibration
from rob_twin.twin.calibration.parameters import apply_to_model, drive_configs
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


def check_robot(robot, calibration: Calibration | None) -> None:
    """MissingCapabilityError (exit 2) when ``calibration`` is given for a robot without Amber
    drives (a calibration holds Amber drive parameters; Damiao drives take none yet).
    ``robot``: a ``rob_twin.models.robot.Robot`` or anything ``robot_of`` takes."""
    if calibration is not None:
        from rob_twin.models.robot import AMBER_DRIVES, robot_of

        robot_of(robot).require(AMBER_DRIVES, "a calibration (fitted Amber drive parameters)")
