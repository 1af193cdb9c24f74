"""The owner's target contract: one arm, seven joint positions and their provenance.

Positions are native joint radians; optional ``velocity_rad_s`` [rad/s] and
``acceleration_rad_s2`` [rad/s^2] let a trajectory follower pass the desired motion
state at the target (default: arrive at rest). ``sequence`` must strictly increase
within one ``generation``; ``lease`` is the host-issued authority it was sent under.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from controllers.errors import NonFiniteTargetError, TargetShapeError
from controllers.lease import Lease
from controllers.names import JOINTS_PER_ARM, Arm


def as_joint_vector(values, field: str, n: int = JOINTS_PER_ARM) -> np.ndarray:
    """Return ``values`` as a read-only float64 (n,) array; raise typed errors otherwise."""
    arr = np.array(values, dtype=float)  # a private copy
    if arr.shape != (n,):
        raise TargetShapeError(field, arr.shape, n)
    finite = np.isfinite(arr)
    if not finite.all():  # name the first non-finite joint
        j = int(np.argmin(finite))
        raise NonFiniteTargetError(field, j + 1, float(arr[j]))
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class ArmTarget:
    arm: Arm
    positions_rad: np.ndarray
    sequence: int
    generation: int
    lease: Lease | None
    velocity_rad_s: np.ndarray | None = None
    acceleration_rad_s2: np.ndarray | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "positions_rad", as_joint_vector(self.positions_rad, "positions_rad"))
        for name in ("velocity_rad_s", "acceleration_rad_s2"):
            val = getattr(self, name)
            if val is not None:
                object.__setattr__(self, name, as_joint_vector(val, name))
