"""``make_closed_loop``: the closed loop of the robot a ``ClosedLoopConfig`` names.

The robot's drive family picks the loop: ``amber`` (ROB) builds
``rob_twin.twin.sim.closed_loop.ClosedLoop`` (Amber position drives); ``damiao`` (OpenArm v2)
``rob_twin.twin.sim.damiao_loop.DamiaoClosedLoop`` (Damiao MIT drives). The classes build
only their own family: ``ClosedLoop`` given an OpenArm config raises TwinInputError naming
this factory.

Joint counts: Amber arms have seven joints (the Amber codec's seven frames, ids
0x11..0x17: ``SEVEN_JOINT_ARMS``); Damiao arms any count the robot file gives (one drive
and one MIT frame per joint: the owners, transports and bank take the count from the data).
"""

from __future__ import annotations

from dataclasses import replace

from rob_twin.models.names import Arm
from rob_twin.models.robot import CAN_DRIVES, SEVEN_JOINT_ARMS, Robot, robot_of
from rob_twin.models.robot_description import RobotFileError
from rob_twin.twin.errors import TwinInputError
from rob_twin.twin.sim.closed_loop import ClosedLoop, ClosedLoopConfig
from rob_twin.twin.sim.damiao_loop import DamiaoClosedLoop, openarm_config
from rob_twin.twin.sim.faults import check_fault_joints
from rob_twin.twin.sim.twin import Twin

LOOPS: dict[str, type[ClosedLoop]] = {"amber": ClosedLoop, "damiao": DamiaoClosedLoop}


def loop_config(robot: Robot | str, what: str = "a closed loop", **overrides) -> ClosedLoopConfig:
    """The closed-loop config of ``robot`` (its family's rates and options) with
    ``overrides``; MissingCapabilityError (exit 2) for a robot without CAN drives or with
    arms its codec cannot drive (Amber: seven joints; ``what``: the command asking, for the
    message); FaultSpecError for a fault naming a joint (or frame) its arm lacks."""
    robot = robot_of(robot)
    robot.require(CAN_DRIVES, what)
    if robot.family == "amber":
        robot.require(SEVEN_JOINT_ARMS, f"{what} (the Amber codec drives seven joints per arm)")
    check_fault_joints(overrides.get("faults", ()), {a: robot.joint_count(a) for a in Arm})
    if robot.family == "damiao":
        config = openarm_config(robot=robot.spec, **overrides)
    else:
        config = replace(ClosedLoopConfig(robot=robot.spec), **overrides)
    steps = 1.0 / (config.owner_rate_hz * robot.timestep_s)
    if round(steps) < 1 or abs(steps - round(steps)) > 1e-9:
        raise RobotFileError(
            f"{robot.path.name}: the MJCF's <option timestep>",
            robot.timestep_s,
            f"a physics step that divides the {robot.family} owners' period "
            f"{1.0 / config.owner_rate_hz:g} s (e.g. 0.001 s), for {what}",
        )
    return config


def make_closed_loop(
    config: ClosedLoopConfig | None = None, twin: Twin | None = None
) -> ClosedLoop:
    """The closed loop of ``config.robot`` (default config: ROB's) on ``twin`` (one is made
    if not given)."""
    if config is None:
        return ClosedLoop(None, twin)
    family = robot_of(config.robot).family
    if family not in LOOPS:
        raise TwinInputError(
            "robot",
            config.robot,
            f"a robot whose drives have a CAN model ({sorted(LOOPS)}); "
            f"{family!r} drives run without owners (rob_twin.twin.sim.ideal)",
        )
    return LOOPS[family](config, twin)
