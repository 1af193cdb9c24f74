"""``make_closed_loop``: the closed loop of the robot a ``ClosedLoopConfig`` names.

The robot's drive family picks the loop: ``amber`` (ROB) builds
``rob_twin.twin.sim.closed_loop.ClosedLoop`` (Amber position drives); ``damiao`` (OpenArm v2)
``rob_twin.twin.sim.damiao_loop.DamiaoClosedLoop`` (Damiao MIT drives). The classes build
only their own family: ``ClosedLoop`` given an OpenArm config raises TwinInputError naming
this factory.
"""

from __future__ import annotations

from rob_twin.models.robot_description import robot_family
from rob_twin.twin.errors import TwinInputError
from rob_twin.twin.sim.closed_loop import ClosedLoop, ClosedLoopConfig
from rob_twin.twin.sim.damiao_loop import DamiaoClosedLoop
from rob_twin.twin.sim.twin import Twin

LOOPS: dict[str, type[ClosedLoop]] = {"amber": ClosedLoop, "damiao": DamiaoClosedLoop}


def make_closed_loop(
    config: ClosedLoopConfig | None = None, twin: Twin | None = None
) -> ClosedLoop:
    """The closed loop of ``config.robot`` (default config: ROB's) on ``twin`` (one is made
    if not given)."""
    if config is None:
        return ClosedLoop(None, twin)
    family = robot_family(config.robot)
    if family not in LOOPS:
        raise TwinInputError(
            "robot",
            config.robot,
            f"a robot whose drives have a CAN model ({sorted(LOOPS)}); "
            f"{family!r} drives run without owners (rob_twin.twin.sim.ideal)",
        )
    return LOOPS[family](config, twin)
