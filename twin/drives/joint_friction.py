"""A joint's identified friction acting in the twin (``rob_twin.models.joint_friction``: the
form ``tau_f(w) = Fo + Fv w + Fc tanh(k w)`` and OpenArm's published values).

The twin applies ``-tau_f(w)`` to the joint (``friction_split``), so the drive's reported
torque is the motor's, friction included, as a real drive's current would show it. The
values are the identified friction of the real arm: where a robot file gives
``[drives.friction]``, its joints carry this model *in place of* the MJCF's ``damping`` and
``frictionloss`` (the published OpenArm MJCF's 1.0 / 0.9 N m s/rad and 0.2 / 0.1 / 0.04 N m
are its author's choice, not a measurement; keeping both would count the joint's friction
twice).

Stability: the tanh term's slope at rest, ``Fc k`` (22.5 N m s/rad on OpenArm's J6 against
an inertia of about 0.01 kg m^2), would reverse a light joint's speed within one explicit
1 ms step, and so would a saturated Coulomb torque near rest. So each step the
speed-dependent part is given to MuJoCo as joint ``damping``, its secant through rest
``(Fv w + Fc tanh(k w)) / w`` at the present speed (``friction_split``), which MuJoCo's
Euler, implicit and implicitfast integrators apply implicitly, at the step's new speed:
friction can then slow a joint to rest but never swing it back. At the present speed it is
exactly the published torque. The offset ``Fo`` acts as a torque. RK4, which integrates
damping explicitly, is refused (``DAMPING_IMPLICIT_INTEGRATORS``).
"""

from __future__ import annotations

import numpy as np
from rob_twin.models.joint_friction import (
    OPENARM_FRICTION_SOURCE,
    OPENARM_PUBLISHED,
    FrictionError,
    JointFriction,
)

# MuJoCo's integrators that apply joint damping implicitly: mjINT_EULER, mjINT_IMPLICIT,
# mjINT_IMPLICITFAST (not mjINT_RK4)
DAMPING_IMPLICIT_INTEGRATORS = (0, 2, 3)

__all__ = [
    "DAMPING_IMPLICIT_INTEGRATORS",
    "OPENARM_FRICTION_SOURCE",
    "OPENARM_PUBLISHED",
    "FrictionError",
    "FrictionOnJoints",
    "JointFriction",
    "friction_split",
]


def friction_split(
    frictions: tuple[JointFriction, ...], w_rad_s: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(damping [N m s/rad], explicit torque [N m]) per joint at speeds ``w_rad_s`` [rad/s]:
    the speed-dependent part as its secant through rest, ``(Fv w + Fc tanh(k w)) / w``
    (``Fv + Fc k`` at rest), which MuJoCo's Euler step applies implicitly as joint damping,
    and the offset ``-Fo`` as a torque; together ``-tau_f(w)`` at ``w`` (module docstring)."""
    return _split(_terms(frictions), w_rad_s)


def _terms(frictions: tuple[JointFriction, ...]) -> np.ndarray:
    """The friction terms as one array, rows Fo, Fv, Fc, k, a column per joint."""
    return np.array(
        [[f.fo_nm, f.fv_nm_s_per_rad, f.fc_nm, f.k_s_per_rad] for f in frictions], float
    ).T.reshape(4, len(frictions))


def _split(terms: np.ndarray, w_rad_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    fo, fv, fc, k = terms
    kw = k * np.asarray(w_rad_s, float)
    small = np.abs(kw) < 1e-6  # tanh(x) / x -> 1 - x^2 / 3 at rest
    safe = np.where(small, 1.0, kw)
    ratio = np.where(small, 1.0 - kw**2 / 3.0, np.tanh(safe) / safe)
    return fv + fc * k * ratio, -fo


class FrictionOnJoints:
    """``frictions`` acting on the joints at ``dofs`` of a MuJoCo model: built once per arm by
    a bank, which calls ``apply`` before every physics step.

    On construction the joints' MJCF ``frictionloss`` is set to 0 in ``model`` (the bank's
    own twin model, a copy of the canonical one: module docstring); ``apply`` writes each
    joint's friction secant to ``model.dof_damping`` (integrated implicitly) and its offset
    to ``data.qfrc_applied``."""

    def __init__(self, model, dofs, frictions: tuple[JointFriction, ...]):
        dofs = np.asarray(dofs, int)
        if len(frictions) != len(dofs):
            raise FrictionError(
                "joint friction count", len(frictions), f"{len(dofs)} (one per joint)"
            )
        if int(model.opt.integrator) not in DAMPING_IMPLICIT_INTEGRATORS:
            raise FrictionError(
                "MJCF integrator",
                int(model.opt.integrator),
                "Euler (0), implicit (2) or implicitfast (3): they apply joint damping implicitly",
            )
        self.model, self.dofs, self.frictions = model, dofs, tuple(frictions)
        self._terms = _terms(self.frictions)  # once, not every physics step
        model.dof_frictionloss[dofs] = 0.0
        model.dof_damping[dofs], _ = _split(self._terms, np.zeros(len(dofs)))

    def apply(self, data) -> None:
        """Set each joint's friction at its present speed [N m s/rad, N m]."""
        damping, explicit = _split(self._terms, data.qvel[self.dofs])
        self.model.dof_damping[self.dofs] = damping
        data.qfrc_applied[self.dofs] = explicit
