"""The twin: ROB's simulated body, the motor bank, the closed loop, scenarios, rehearsal, viewer.

Start here::

    from rob_twin.twin import Twin, make_closed_loop, run_plan, Scenario, run_scenario, rehearse

Names are imported on first use (so ``import twin`` does not load mujoco until one is used).
Offscreen rendering defaults to EGL (headless machines); it must be chosen before
mujoco's rendering module is first imported, hence here. Set MUJOCO_GL to override.
"""

import os

from rob_twin.models.lazy_exports import lazy_exports

os.environ.setdefault("MUJOCO_GL", "egl")

_MODULES = {
    "rob_twin.twin.sim.twin": ("Twin", "TwinConfig"),
    "rob_twin.twin.sim.closed_loop": ("ClosedLoop", "ClosedLoopConfig"),
    "rob_twin.twin.sim.loops": ("make_closed_loop",),
    "rob_twin.twin.sim.execution": ("run_plan", "ExecutedPlan"),
    "rob_twin.twin.sim.damiao_loop": ("DamiaoOptions", "openarm_config"),
    "rob_twin.twin.sim.faults": ("FaultSpec",),
    "rob_twin.twin.scenario.run": ("Scenario", "ScenarioError", "run_scenario", "demo_scenario"),
    "rob_twin.twin.rehearsal": ("RehearsalConfig", "rehearse", "write_report"),
    "rob_twin.twin.render.video": ("RenderUnavailable", "VideoRecorder"),
    "rob_twin.twin.base.tread_drive": ("BaseDrive", "BaseDriveConfig"),
    "rob_twin.twin.base.odometry": ("Odometry", "OdometryConfig", "MocapStream"),
    "rob_twin.twin.base.lidar": ("Lidar", "LidarConfig", "LidarPair"),
    "rob_twin.twin.base.scan_merge": ("ScanMerger", "MergeConfig", "merge"),
    "rob_twin.twin.env": ("RobEnv", "EnvConfig"),
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _MODULES)
