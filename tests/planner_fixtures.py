"""Shared set-up of the planner tests: ROB at home, and the two-arm stand model."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
from rob_twin.models.loading import HOME_KEY, keyframe_state
from rob_twin.models.names import group_arms

STAND_PATH = Path(__file__).parent / "models" / "two_arm_stand.xml"
STAND_ARMS = {a: [f"{a}/yaw", f"{a}/shoulder", f"{a}/elbow", f"{a}/wrist"] for a in ("a", "b")}
ROB_ARMS = group_arms()
STAND_START = {"a": [-0.34, 0.37, -1.22, -0.79], "b": [-1.06, -0.33, -0.46, 0.45]}  # [rad]


def rob_home():
    """(scene model, full qpos): ROB at the model's ``home`` keyframe."""
    return keyframe_state(HOME_KEY)


def rob_home_group():
    """A fresh ArmGroup of ROB's two arms with the reference state at home."""
    from rob_twin.planners.group import ArmGroup

    m, home = rob_home()
    g = ArmGroup(m, ROB_ARMS)
    g.set_qpos(home)
    return g


def load_stand() -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_path(str(STAND_PATH))


def stand_at_start():
    """A fresh ArmGroup of the stand's two arms with the reference state at ``STAND_START``
    (the arms' crossing start)."""
    from rob_twin.planners.group import ArmGroup

    g = ArmGroup(load_stand(), STAND_ARMS)
    for a, q in STAND_START.items():
        g.set_arm(a, q)
    return g


def straight(start: np.ndarray, goal: np.ndarray, n: int = 120) -> np.ndarray:
    """Naive straight joint interpolation, n states."""
    return start + (goal - start) * np.linspace(0.0, 1.0, n)[:, None]
