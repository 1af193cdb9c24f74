"""The owner's target contract: one arm, its joint positions and their provenance.

A target is for an arm of ``joints`` joints (default seven: ROB's and OpenArm's arms; an
owner refuses a target whose count is not its own). Positions are native joint radians;
optional ``velocity_rad_s`` [rad/s] and ``acceleration_rad_s2`` [rad/s^2] let a
trajectory follower pass the desired motion state at the target (default: arrive at
rest). ``sequence`` must strictly increase within one ``generation``; ``lease`` is the
host-issued authority it was sent under.

Every field is validated when the target is built, so the owner never sees a malformed
one: vectors are exactly ``joints`` finite real numbers (no bools, strings, complex values
or ragged lists), ``sequence`` and ``generation`` are integers (not bools, not floats: a NaN
sequence would compare false with everything and switch the replay check off), ``arm``
is an ``Arm`` (or its name) and ``lease`` a ``Lease`` or None.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass

import numpy as np
from rob_twin.controllers.errors import NonFiniteTargetError, TargetShapeError, TargetTypeError
from rob_twin.controllers.lease import Lease
from rob_twin.models.names import JOINTS_PER_ARM, Arm

_REAL_KINDS = "iuf"  # numpy dtype kinds of real numbers (bool is "b", complex "c")


def as_joint_vector(values, field: str, n: int = JOINTS_PER_ARM) -> np.ndarray:
    """Return ``values`` as a read-only float64 (n,) array; raise typed errors otherwise.

    TargetTypeError for bools, strings, complex or other non-real entries;
    TargetShapeError for any shape but (n,); NonFiniteTargetError names the first NaN/inf."""
    if isinstance(values, (list, tuple)) and any(isinstance(x, (bool, np.bool_)) for x in values):
        raise TargetTypeError(field, values, f"{n} real numbers (a bool is not a joint value)")
    try:
        raw = np.asarray(values)
    except (TypeError, ValueError):  # ragged nesting
        raise TargetShapeError(field, (), n) from None
    if raw.dtype.kind not in _REAL_KINDS:
        raise TargetTypeError(field, values, f"{n} real numbers (got dtype {raw.dtype})")
    arr = np.array(raw, dtype=float)  # a private copy
    if arr.shape != (n,):
        raise TargetShapeError(field, arr.shape, n)
    if not all(map(math.isfinite, arr.tolist())):  # name the first non-finite joint
        j = int(np.argmin(np.isfinite(arr)))
        raise NonFiniteTargetError(field, j + 1, float(arr[j]))
    arr.setflags(write=False)
    return arr


def as_integer(value, field: str) -> int:
    """``value`` as a Python int; TargetTypeError for bools, floats (NaN), strings, None."""
    if isinstance(value, (bool, np.bool_)):
        raise TargetTypeError(field, value, "an integer (a bool is not a counter)")
    try:
        return operator.index(value)  # int and numpy integers only
    except TypeError:
        raise TargetTypeError(field, value, "an integer") from None


@dataclass(frozen=True, eq=False)
class ArmTarget:
    arm: Arm
    positions_rad: np.ndarray
    sequence: int
    generation: int
    lease: Lease | None
    velocity_rad_s: np.ndarray | None = None
    acceleration_rad_s2: np.ndarray | None = None
    joints: int = JOINTS_PER_ARM  # the arm's joint count: every vector's length

    def __post_init__(self) -> None:
        if not isinstance(self.arm, Arm):
            if not isinstance(self.arm, str):
                raise TargetTypeError("arm", self.arm, f"an Arm or one of {[a.value for a in Arm]}")
            object.__setattr__(self, "arm", Arm.parse(self.arm))
        n = as_integer(self.joints, "joints")
        if n < 1:
            raise TargetTypeError("joints", self.joints, "an arm's joint count: an integer >= 1")
        object.__setattr__(self, "joints", n)
        object.__setattr__(
            self, "positions_rad", as_joint_vector(self.positions_rad, "positions_rad", n)
        )
        for name in ("velocity_rad_s", "acceleration_rad_s2"):
            val = getattr(self, name)
            if val is not None:
                object.__setattr__(self, name, as_joint_vector(val, name, n))
        object.__setattr__(self, "sequence", as_integer(self.sequence, "sequence"))
        object.__setattr__(self, "generation", as_integer(self.generation, "generation"))
        if self.lease is not None and not isinstance(self.lease, Lease):
            raise TargetTypeError("lease", self.lease, "a Lease issued by the owner, or None")
