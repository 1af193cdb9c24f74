"""One local IK solve: damped least squares with adaptive (Levenberg-Marquardt) damping.

Error: the twist ``e = log6(T(q)^-1 T_target)`` in the TCP frame (linear [m], angular
[rad]); its Jacobian is ``Jlog6(E^-1) J_local`` with ``E = T(q)^-1 T_target``. Each
iteration solves ``(A A^T + lambda I) y = e``, ``dq = A^T y`` with
``lambda = mu * |e|^2 + lambda_min``: large far away or near a singularity (a straight
elbow, coaxial J1/J3 or J3/J5), vanishing at the solution so the last steps are
Gauss-Newton and converge to machine precision against the *true* FK. A step that does
not lower ``|e|`` is rejected and ``mu`` grows; joint limits are kept by projection with
an active set (a joint at a bound whose step pushes outward is frozen and the step is
solved again without it). The solve never claims success: callers re-check the pose.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from rob_twin.planners.errors import PlannerConfigError
from rob_twin.planners.kinematics import TORSO_INDEX, ArmKinematics
from rob_twin.planners.pose import pose_error


@dataclass(frozen=True)
class LMSettings:
    """Iteration settings of one local solve.

    tolerance: stop when both position [m] and orientation [rad] errors are below it;
    max_iterations; max_step_rad: largest joint change of one iteration [rad];
    mu_init, mu_min, mu_max: damping scale [1/m^2-ish, dimensionless in practice];
    lambda_min: damping floor; stall_window: iterations over which the error must at least
    halve, otherwise the attempt stops early (a local minimum, often at a joint limit).
    """

    tolerance: float = 1e-11
    max_iterations: int = 100
    max_step_rad: float = 0.5
    mu_init: float = 1e-2
    mu_min: float = 1e-6
    mu_max: float = 1e6
    lambda_min: float = 1e-12
    stall_window: int = 12

    def __post_init__(self) -> None:
        if not 0.0 < self.tolerance < 1e-3:
            raise PlannerConfigError("lm.tolerance", self.tolerance, "0 < tolerance < 1e-3")
        if self.max_iterations < 1:
            raise PlannerConfigError("lm.max_iterations", self.max_iterations, ">= 1")
        if not self.max_step_rad > 0.0:
            raise PlannerConfigError("lm.max_step_rad", self.max_step_rad, "> 0 rad")
        if not 0.0 < self.mu_min <= self.mu_init <= self.mu_max:
            raise PlannerConfigError(
                "lm.mu_init",
                (self.mu_min, self.mu_init, self.mu_max),
                "0 < mu_min <= mu_init <= mu_max",
            )
        if self.stall_window < 2:
            raise PlannerConfigError("lm.stall_window", self.stall_window, ">= 2")


@dataclass(frozen=True)
class LocalResult:
    """Outcome of one local solve: final q [rad] (inside the limits) and its pose errors."""

    q: np.ndarray
    converged: bool
    position_error_m: float
    orientation_error_rad: float
    iterations: int


def solve_local(
    kin: ArmKinematics, torso: float, target: pin.SE3, q0: np.ndarray, s: LMSettings
) -> LocalResult:
    """Drive the TCP of ``kin`` (ArmKinematics or MjArmKinematics: full q = torso, then the
    N arm joints) from ``q0`` towards ``target`` at torso angle ``torso`` [rad]."""
    lo, hi = kin.lower, kin.upper
    cols = slice(1, 1 + kin.n_joints)  # the arm in the full q (ROB: kinematics.ARM_SLICE)
    q8 = np.zeros(1 + kin.n_joints)
    q8[TORSO_INDEX] = torso
    q8[cols] = np.clip(q0, lo, hi)
    pose = kin.pose_of(q8)
    err = pin.log6(pose.actInv(target)).vector
    cost = float(err @ err)
    dp, dr = pose_error(pose, target)
    mu = s.mu_init
    history = [cost]
    it = 0
    eye = np.eye(6)
    while it < s.max_iterations and not (dp < s.tolerance and dr < s.tolerance):
        it += 1
        jac = kin.jacobian_of(q8, pin.LOCAL)[:, cols]
        a = pin.Jlog6(pose.actInv(target).inverse()) @ jac
        q = q8[cols]
        dq = _projected_step(a, err, q, lo, hi, mu * cost + s.lambda_min, s.max_step_rad, eye)
        trial = q8.copy()
        trial[cols] = np.clip(q + dq, lo, hi)
        t_pose = kin.pose_of(trial)
        t_err = pin.log6(t_pose.actInv(target)).vector
        t_cost = float(t_err @ t_err)
        if t_cost < cost:
            q8, pose, err, cost = trial, t_pose, t_err, t_cost
            dp, dr = pose_error(pose, target)
            mu = max(mu * 0.3, s.mu_min)
            history.append(cost)
            if len(history) > s.stall_window and cost > 0.25 * history[-1 - s.stall_window]:
                break
        else:
            mu *= 8.0
            if mu > s.mu_max:
                break
    return LocalResult(q8[cols].copy(), bool(dp < s.tolerance and dr < s.tolerance), dp, dr, it)


def _projected_step(a, err, q, lo, hi, lam, max_step, eye) -> np.ndarray:
    """Damped least-squares step that does not push any joint already at a bound outward."""
    at_lo, at_hi = q <= lo, q >= hi
    free = np.ones(q.size, dtype=bool)
    dq = np.zeros(q.size)
    for _ in range(q.size):
        af = a[:, free]
        dq[:] = 0.0
        dq[free] = af.T @ np.linalg.solve(af @ af.T + lam * eye, err)
        biggest = float(np.max(np.abs(dq)))
        if biggest > max_step:
            dq *= max_step / biggest
        blocked = free & ((at_lo & (dq < 0.0)) | (at_hi & (dq > 0.0)))
        if not blocked.any():
            return dq
        free &= ~blocked
        if not free.any():
            break
    return np.zeros(q.size)
