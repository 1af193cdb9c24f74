"""A joint's friction as identified on a real robot: ``tau_f(w) = Fo + Fv w + Fc tanh(k w)``.

``tau_f`` [N m] is the torque the motor must add to overcome the joint's friction at joint
speed ``w`` [rad/s]: an offset ``Fo`` [N m], viscous ``Fv`` [N m s/rad] and a smoothed
Coulomb term ``Fc`` [N m] with steepness ``k`` [s/rad]. A robot file's ``[drives.friction]``
gives one per arm joint; the twin applies it (``rob_twin.twin.drives.joint_friction``).

OpenArm's values (``OPENARM_PUBLISHED``, joints 1-7 and the gripper) are the ones LeRobot's
OpenArm friction-compensation example quotes from OpenArm's ``config/follower.yaml``
(``shared/research/openarm_host_clients.md``; Fo read from that example's source). The same
example's compensation scales the tanh argument by 0.1 (``COEF_TMP``); the published form
has none, and the twin follows the published form.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rob_twin.models.errors import InvalidValueError

OPENARM_FRICTION_SOURCE = (
    "OpenArm config/follower.yaml as quoted by LeRobot's OpenArm friction-compensation "
    "example (tau = Fo + Fv w + Fc tanh(k w)); shared/research/openarm_host_clients.md"
)

# per joint: (Fo [N m], Fv [N m s/rad], Fc [N m], k [s/rad]); joints 1-7, then the gripper
OPENARM_PUBLISHED_TABLE = (
    (0.088, 0.063, 0.306, 28.417),
    (0.088, 0.063, 0.306, 28.417),
    (0.008, 0.604, 0.400, 29.065),
    (-0.058, 0.813, 0.166, 130.038),
    (0.005, 0.029, 0.050, 151.771),
    (0.009, 0.072, 0.093, 242.287),
    (-0.059, 0.084, 0.172, 7.888),
    (-0.050, 0.084, 0.0512, 4.000),
)

# what a friction value may be: wide enough for any joint of a dual-arm robot, narrow
# enough that a typo (or a hostile file) cannot make the twin explode
LIMITS = {
    "fo_nm": (-50.0, 50.0),
    "fv_nm_s_per_rad": (0.0, 100.0),
    "fc_nm": (0.0, 100.0),
    "k_s_per_rad": (0.0, 1000.0),
}


class FrictionError(InvalidValueError):
    """A friction value outside its range (names the field, the value and the range)."""

    subject = "joint friction"


@dataclass(frozen=True)
class JointFriction:
    """One joint's identified friction (module docstring): fo_nm [N m], fv_nm_s_per_rad
    [N m s/rad], fc_nm [N m], k_s_per_rad [s/rad]."""

    fo_nm: float = 0.0
    fv_nm_s_per_rad: float = 0.0
    fc_nm: float = 0.0
    k_s_per_rad: float = 0.0

    def __post_init__(self) -> None:
        for name, (lo, hi) in LIMITS.items():
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise FrictionError(name, v, f"a finite number in [{lo:g}, {hi:g}]")
            if not lo <= v <= hi:
                raise FrictionError(name, v, f"[{lo:g}, {hi:g}]")

    def torque(self, w_rad_s: float) -> float:
        """tau_f(w) [N m]: what the motor must add to move the joint at ``w`` [rad/s]."""
        return (
            self.fo_nm
            + self.fv_nm_s_per_rad * w_rad_s
            + self.fc_nm * math.tanh(self.k_s_per_rad * w_rad_s)
        )


OPENARM_PUBLISHED = tuple(JointFriction(*row) for row in OPENARM_PUBLISHED_TABLE)
