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

_MODULES = {
    "twin.twin": ("Twin", "TwinConfig"),
    "twin.closed_loop": ("ClosedLoop", "ClosedLoopConfig"),
    "twin.faults": ("FaultSpec",),
    "twin.scenario": ("Scenario", "ScenarioError", "run_scenario", "demo_scenario"),
    "twin.rehearsal": ("RehearsalConfig", "rehearse", "write_report"),
    "twin.video": ("RenderUnavailable", "VideoRecorder"),
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _MODULES)
