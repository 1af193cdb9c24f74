"""The twin: ROB's simulated body, the motor bank, the closed loop, scenarios, rehearsal, viewer.

Start here::

    from rob_twin.twin import Twin, ClosedLoop, Scenario, run_scenario, rehearse

Names are imported on first use (so ``import twin`` does not load mujoco until one is used).
Offscreen rendering defaults to EGL (headless machines); it must be chosen before
mujoco's rendering module is first imported, hence here. Set MUJOCO_GL to override.
"""

import os

from rob_twin.controllers.lazy_exports import lazy_exports

os.environ.setdefault("MUJOCO_GL", "egl")

_MODULES = {
    "rob_twin.twin.twin": ("Twin", "TwinConfig"),
    "rob_twin.twin.closed_loop": ("ClosedLoop", "ClosedLoopConfig"),
    "rob_twin.twin.damiao_loop": ("DamiaoOptions", "openarm_config"),
    "rob_twin.twin.faults": ("FaultSpec",),
    "rob_twin.twin.scenario": ("Scenario", "ScenarioError", "run_scenario", "demo_scenario"),
    "rob_twin.twin.rehearsal": ("RehearsalConfig", "rehearse", "write_report"),
    "rob_twin.twin.video": ("RenderUnavailable", "VideoRecorder"),
    "rob_twin.twin.base_drive": ("BaseDrive", "BaseDriveConfig"),
    "rob_twin.twin.odometry": ("Odometry", "OdometryConfig", "MocapStream"),
    "rob_twin.twin.lidar": ("Lidar", "LidarConfig", "LidarPair"),
    "rob_twin.twin.scan_merge": ("ScanMerger", "MergeConfig", "merge"),
    "rob_twin.twin.env": ("RobEnv", "EnvConfig"),
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _MODULES)
