"""The twin: ROB's model, the motor bank, the closed loop, scenarios, rehearsal, viewer.

Offscreen rendering defaults to EGL (headless machines); it must be chosen before
mujoco's rendering module is first imported, hence here. Set MUJOCO_GL to override.
"""

import os

os.environ.setdefault("MUJOCO_GL", "egl")
