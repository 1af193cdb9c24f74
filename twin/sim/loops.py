"""``make_closed_loop``: the closed loop of the robot a ``ClosedLoopConfig`` names.

``robot="rob"`` builds ROB's loop (``rob_twin.twin.sim.closed_loop.ClosedLoop``, Amber
position drives); ``robot="openarm"`` the OpenArm-class loop
(``rob_twin.twin.sim.damiao_loop.DamiaoClosedLoop``, Damiao MIT drives). The classes build
only their own robot: ``ClosedLoop`` given an OpenArm config raises TwinInputError naming
this factory.
"""

from __future__ import annotations

from rob_twin.twin.sim.closed_loop import ClosedLoop, ClosedLoopConfig
from rob_twin.twin.sim.damiao_loop import DamiaoClosedLoop
from rob_twin.twin.sim.twin import Twin

LOOPS: dict[str, type[ClosedLoop]] = {"rob": ClosedLoop, "openarm": DamiaoClosedLoop}


def make_closed_loop(
    config: ClosedLoopConfig | None = None, twin: Twin | None = None
) -> ClosedLoop:
    """The closed loop of ``config.robot`` (default config: ROB's) on ``twin`` (one is made
    if not given)."""
    if config is None:
        return ClosedLoop(None, twin)
    return LOOPS[config.robot](config, twin)
