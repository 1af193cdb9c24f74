"""The gravity model the Damiao transport calls: Pinocchio's RNEA for one arm.

``controllers/`` must not import pinocchio, so its transport takes any callable
``q [rad] (7,) -> tau [Nm] (7,)``; this is the one the twin hands it. Gravity torques
(RNEA at v = a = 0, plus a declared payload at the tool) of the arm's reduced model,
built from ROB's MJCF: the OpenArm-class variant has the same bodies and masses.
The torso yaw turns about the gravity axis, so it does not change these torques.
One instance per thread (it owns a ``pinocchio.Data``).
"""

from __future__ import annotations

import numpy as np
from rob_twin.models.names import Arm
from rob_twin.planners.kinematics import ArmKinematics, Payload


class PinocchioGravity:
    """``gravity(q)`` -> holding torques [Nm] of ``arm`` at joint angles ``q`` [rad]."""

    def __init__(self, arm: Arm | str, payload: Payload | None = None):
        self.kinematics = ArmKinematics(arm)
        self.payload = payload
        self.calls = 0

    def __call__(self, q: np.ndarray) -> np.ndarray:
        self.calls += 1
        return self.kinematics.gravity_torques(q, 0.0, self.payload)
