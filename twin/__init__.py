"""The twin: ROB's simulated body, the motor bank, the closed loop, scenarios, rehearsal, viewer.

Start here::

    from twin import Twin, ClosedLoop, Scenario, run_scenario, rehearse

Names are imported on first use (so ``import twin`` does not load mujoco until one is used).
Offscreen rendering defaults to EGL (headless machines); it must be chosen before
mujoco's rendering module is first imported, hence here. Set MUJOCO_GL to override.
"""

import os

from controllers.lazy_exports import lazy_exports

os.environ.setdefault("MUJOCO_GL", "egl")

_EXPORTS = {
    "Twin": "twin.twin",
    "TwinConfig": "twin.twin",
    "ClosedLoop": "twin.closed_loop",
    "ClosedLoopConfig": "twin.closed_loop",
    "FaultSpec": "twin.faults",
    "Scenario": "twin.scenario",
    "ScenarioError": "twin.scenario",
    "run_scenario": "twin.scenario",
    "demo_scenario": "twin.scenario",
    "RehearsalConfig": "twin.rehearsal",
    "rehearse": "twin.rehearsal",
    "write_report": "twin.rehearsal",
    "RenderUnavailable": "twin.video",
    "VideoRecorder": "twin.video",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
