"""A joint's identified friction acting in the twin (``rob_twin.models.joint_friction``: the
form ``tau_f(w) = Fo + Fv w + Fc tanh(k w)`` and OpenArm's published values).

The twin applies ``-tau_f(w)`` to the joint (``applied_torque``), so the drive's reported
torque is the motor's, friction included, as a real drive's current would show it. The
values are the identified friction of the real arm: where a robot file gives
``[drives.friction]``, its joints carry this model *in place of* the MJCF's ``damping`` and
``frictionloss`` (the published OpenArm MJCF's 1.0 / 0.9 N m s/rad and 0.2 / 0.1 / 0.04 N m
are its author's choice, not a measurement; keeping both would count the joint's friction
twice).

Stability: the twin steps explicitly (1 ms on OpenArm), and the tanh term's slope at rest,
``Fc k`` (22.5 N m s/rad on OpenArm's J6 against an inertia of about 0.01 kg m^2), would
reverse the joint's speed within one step. The velocity-dependent part is therefore capped
at the torque that stops the joint in one step, ``M_jj |w| / dt`` (``M_jj`` the joint's
diagonal of the mass matrix, armature included): it never drives the joint backwards,
which a real friction cannot either. The offset ``Fo`` acts as given.
"""

from __future__ import annotations

import numpy as np
from rob_twin.models.joint_friction import (
    OPENARM_FRICTION_SOURCE,
    OPENARM_PUBLISHED,
    FrictionError,
    JointFriction,
)

__all__ = [
    "OPENARM_FRICTION_SOURCE",
    "OPENARM_PUBLISHED",
    "FrictionError",
    "FrictionOnJoints",
    "JointFriction",
    "applied_torque",
]


def applied_torque(
    frictions: tuple[JointFriction, ...],
    w_rad_s: np.ndarray,
    inertia_kg_m2: np.ndarray,
    dt_s: float,
) -> np.ndarray:
    """The torque [N m] friction applies to each joint: ``-tau_f(w)``, its velocity-dependent
    part capped at what stops the joint in one step of ``dt_s`` [s] (module docstring).
    ``w_rad_s`` [rad/s] and ``inertia_kg_m2`` (each joint's mass-matrix diagonal) per joint."""
    w = np.asarray(w_rad_s, float)
    fo = np.array([f.fo_nm for f in frictions])
    fv = np.array([f.fv_nm_s_per_rad for f in frictions])
    fc = np.array([f.fc_nm for f in frictions])
    k = np.array([f.k_s_per_rad for f in frictions])
    moving = fv * w + fc * np.tanh(k * w)
    cap = np.asarray(inertia_kg_m2, float) * np.abs(w) / dt_s
    return -(fo + np.clip(moving, -cap, cap))


class FrictionOnJoints:
    """``frictions`` acting on the joints at ``dofs`` of a MuJoCo model: built once per arm by
    a bank, which calls ``apply`` before every physics step.

    On construction the joints' MJCF ``damping`` and ``frictionloss`` are set to 0 in
    ``model`` (the bank's own twin model, a copy of the canonical one: module docstring);
    ``apply`` writes each joint's friction torque to ``data.qfrc_applied``."""

    def __init__(self, model, dofs, frictions: tuple[JointFriction, ...]):
        dofs = np.asarray(dofs, int)
        if len(frictions) != len(dofs):
            raise FrictionError(
                "joint friction count", len(frictions), f"{len(dofs)} (one per joint)"
            )
        self.model, self.dofs, self.frictions = model, dofs, tuple(frictions)
        model.dof_damping[dofs] = 0.0
        model.dof_frictionloss[dofs] = 0.0
        # each dof's diagonal entry in MuJoCo's sparse mass matrix (the row's last element)
        self._diag = np.asarray(model.M_rowadr + model.M_rownnz - 1)[dofs]

    def apply(self, data) -> None:
        """Write the friction torque [N m] of every joint at its present speed."""
        data.qfrc_applied[self.dofs] = applied_torque(
            self.frictions, data.qvel[self.dofs], data.M[self._diag], self.model.opt.timestep
        )
