"""Per-arm kinematics and statics with Pinocchio: TCP pose, 6x7 Jacobian, gravity torques.

One reduced Pinocchio model per arm, built from the same MJCF as the twin
(``models/rob/rob.xml``) with ``pin.buildReducedModel``. Locked at fixed values: the
free base at identity (so every pose is in the ``base`` body frame, the world frame when
the base stands at the origin), the head (pan, tilt = 0), the other arm (0) and both
grippers (closed, 0 m). The torso yaw stays a joint of the reduced model but is never
solved for: every call takes it as an input. Keeping it a joint, rather than locking it
per call, gives one model for every torso angle (no model rebuild per call), exact FK at
any angle, and the torso column of the Jacobian (``with_torso=True``) for the TCP speed
check while the torso turns.

Units: joint angles [rad], torso angle [rad], positions [m], torques [Nm], mass [kg].
Jacobian rows 0-2: TCP linear velocity [m/s per rad/s]; rows 3-5: angular velocity
[rad/s per rad/s]; both in the base frame, at the TCP point (Pinocchio's
LOCAL_WORLD_ALIGNED, MuJoCo's ``mj_jacSite`` convention).

An ArmKinematics owns one ``pinocchio.Data``: use one instance per thread (DESIGN.md).
The reduced model itself is shared read-only (cached per arm and MJCF path).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pinocchio as pin
from rob_twin.models import dimensions as D
from rob_twin.models import names as N
from rob_twin.models.loading import ROBOT_PATH, load_pinocchio
from rob_twin.models.names import JOINTS_PER_ARM, Arm
from rob_twin.planners.errors import KinematicsInputError, PlannerConfigError

TORSO_INDEX = 0  # q index of the torso yaw in the reduced model; the arm follows at 1..7
ARM_SLICE = slice(1, 1 + JOINTS_PER_ARM)
TORSO_JOINT_ID = 1  # Pinocchio joint id of the torso yaw in the reduced model


@dataclass(frozen=True)
class Payload:
    """A point mass held by the tool: mass [kg] at ``com_m`` [m] in the TCP frame."""

    mass_kg: float
    com_m: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def __post_init__(self) -> None:
        if not (np.isfinite(self.mass_kg) and self.mass_kg >= 0.0):
            raise PlannerConfigError("payload mass_kg", self.mass_kg, "finite and >= 0 kg")
        if len(self.com_m) != 3 or not np.all(np.isfinite(self.com_m)):
            raise PlannerConfigError("payload com_m", self.com_m, "3 finite values [m]")


@lru_cache(maxsize=8)
def reduced_model(arm: Arm, path: str = str(ROBOT_PATH)) -> pin.Model:
    """The reduced model of ``arm``: joints torso/yaw then ``arm``'s j1..j7 (q size 8)."""
    full = load_pinocchio(Path(path))
    keep = {N.TORSO_JOINT, *N.arm_joints(arm)}
    lock = [j for j in range(1, full.njoints) if full.names[j] not in keep]
    model = pin.buildReducedModel(full, lock, pin.neutral(full))  # neutral base = identity
    expected = [N.TORSO_JOINT, *N.arm_joints(arm)]
    if list(model.names)[1:] != expected:  # the q layout every method below relies on
        raise PlannerConfigError("reduced model joints", list(model.names)[1:], str(expected))
    return model


def joint_vector(q: object, field: str = "q", n: int = JOINTS_PER_ARM) -> np.ndarray:
    """``q`` as a float array of shape (n,); raise KinematicsInputError unless finite."""
    arr = np.asarray(q, dtype=float)
    if arr.shape != (n,):
        raise KinematicsInputError(f"{field} shape", arr.shape, f"({n},) joint angles [rad]")
    if not np.all(np.isfinite(arr)):
        raise KinematicsInputError(field, arr.tolist(), "finite joint angles [rad]")
    return arr


def torso_angle(torso: object) -> float:
    value = float(torso)
    if not np.isfinite(value):
        raise KinematicsInputError("torso", torso, "a finite angle [rad]")
    return value


class ArmKinematics:
    """TCP forward kinematics, Jacobian and gravity torques of one arm, torso angle as input."""

    def __init__(self, arm: Arm | str, path: Path | str = ROBOT_PATH):
        self.arm = Arm.parse(arm)
        self.model = reduced_model(self.arm, str(path))
        self.data = self.model.createData()
        self.joint_names: tuple[str, ...] = N.arm_joints(self.arm)
        self.tcp_frame = self.model.getFrameId(N.tcp_site(self.arm))
        if self.tcp_frame >= self.model.nframes:
            raise PlannerConfigError("tcp frame", N.tcp_site(self.arm), "a frame of the model")
        self.lower = self.model.lowerPositionLimit[ARM_SLICE].copy()  # [rad]
        self.upper = self.model.upperPositionLimit[ARM_SLICE].copy()  # [rad]
        self.torso_range = (
            float(self.model.lowerPositionLimit[TORSO_INDEX]),
            float(self.model.upperPositionLimit[TORSO_INDEX]),
        )
        self.effort_limit = np.array([j.effort_limit for j in D.ARM_JOINTS])  # [Nm]
        self.velocity_limit = np.array([j.velocity_limit for j in D.ARM_JOINTS])  # [rad/s]
        self.gravity = self.model.gravity.linear.copy()  # [m/s^2] in the base frame
        self._q = np.zeros(self.model.nq)
        # what IKSolver, goal checks and Cartesian paths ask of any arm kinematics (this one
        # and planners.mj_kinematics.MjArmKinematics, a robot's own MuJoCo model)
        self.n_joints = JOINTS_PER_ARM
        self.has_torso = True
        self.key = f"pinocchio:{path}"  # the IK's seed tables are cached per model and arm

    # ------------------------------------------------------------------ full q
    def full_q(self, q: object, torso: object = 0.0) -> np.ndarray:
        """The reduced model's q (torso first, then the arm) after validating both."""
        self._q[TORSO_INDEX] = torso_angle(torso)
        self._q[ARM_SLICE] = joint_vector(q)
        return self._q.copy()

    def pose_of(self, q8: np.ndarray) -> pin.SE3:
        """TCP pose for a full reduced q (no validation; for solvers in this package)."""
        pin.forwardKinematics(self.model, self.data, q8)
        return pin.updateFramePlacement(self.model, self.data, self.tcp_frame).copy()

    def jacobian_of(self, q8: np.ndarray, frame: pin.ReferenceFrame) -> np.ndarray:
        """6x8 frame Jacobian (torso column first) for a full reduced q (no validation)."""
        return pin.computeFrameJacobian(self.model, self.data, q8, self.tcp_frame, frame)

    def mount_pose(self, torso: float) -> pin.SE3:
        """Pose of the torso frame (the arm's mount: it turns with the torso, never with
        the arm) at ``torso`` [rad]."""
        q8 = np.zeros(self.model.nq)
        q8[TORSO_INDEX] = torso
        pin.forwardKinematics(self.model, self.data, q8)
        return self.data.oMi[TORSO_JOINT_ID].copy()

    def shoulder_origin(self, torso: float) -> np.ndarray:
        """The J1 joint origin [m] in the base frame at ``torso`` [rad]."""
        q8 = np.zeros(self.model.nq)
        q8[TORSO_INDEX] = torso
        self.pose_of(q8)
        return self.data.oMi[self.model.getJointId(self.joint_names[0])].translation.copy()

    def reach_bound_m(self) -> float:
        """Upper bound [m] on |TCP - J1 origin|: the sum of the link offsets from J1 to the TCP."""
        m = self.model
        j1 = m.getJointId(self.joint_names[0])
        links = sum(
            float(np.linalg.norm(m.jointPlacements[j].translation))
            for j in range(j1 + 1, m.njoints)
        )
        return links + float(np.linalg.norm(m.frames[self.tcp_frame].placement.translation))

    # -------------------------------------------------------------- public API
    def tcp_pose(self, q: object, torso: object = 0.0) -> pin.SE3:
        """TCP pose in the base frame (rotation [-], translation [m]) at arm ``q`` [rad]."""
        return self.pose_of(self.full_q(q, torso))

    def tcp_jacobian(self, q: object, torso: object = 0.0, with_torso: bool = False) -> np.ndarray:
        """6x7 TCP Jacobian (6x8 with the torso column first when ``with_torso``)."""
        jac = self.jacobian_of(self.full_q(q, torso), pin.LOCAL_WORLD_ALIGNED)
        return jac.copy() if with_torso else jac[:, ARM_SLICE].copy()

    def gravity_torques(
        self, q: object, torso: object = 0.0, payload: Payload | None = None
    ) -> np.ndarray:
        """Joint torques [Nm] that hold the arm still against gravity (RNEA at v = a = 0).

        With a ``payload``, adds the torques that hold its weight at its centre of mass:
        ``-J_c^T (m g)`` with ``J_c`` the linear Jacobian of that point.
        """
        q8 = self.full_q(q, torso)
        tau = pin.computeGeneralizedGravity(self.model, self.data, q8)[ARM_SLICE].copy()
        if payload is not None and payload.mass_kg > 0.0:
            jac = self.jacobian_of(q8, pin.LOCAL_WORLD_ALIGNED)[:, ARM_SLICE]
            pose = pin.updateFramePlacement(self.model, self.data, self.tcp_frame)
            r = pose.rotation @ np.asarray(payload.com_m, dtype=float)  # TCP -> CoM, base frame
            jac_c = jac[:3] - pin.skew(r) @ jac[3:]
            tau -= jac_c.T @ (payload.mass_kg * self.gravity)
        return tau

    def within_limits(self, q: np.ndarray, tolerance: float = 0.0) -> bool:
        """True when every joint of ``q`` is inside [lower - tol, upper + tol] [rad]."""
        return bool(np.all(q >= self.lower - tolerance) and np.all(q <= self.upper + tolerance))
