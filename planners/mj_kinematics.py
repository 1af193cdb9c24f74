"""Per-arm kinematics and statics from a robot's own MuJoCo model: TCP pose, 6xN Jacobian,
gravity torques. The same interface as ``rob_twin.planners.kinematics.ArmKinematics`` (ROB's
Pinocchio model), so ``IKSolver``, lockstep Cartesian paths, carries and goal checks run on any
robot whose canonical model (``rob_twin.models.robot_model``) has arm joints ``right/j1`` ..
``right/jN`` (5 to 7 hinges) and a TCP site ``right/tcp``.

Frame (the equivalent of ArmKinematics' base frame): the model's world frame with every joint
that is not the arm's own at the model's ``qpos0``, except

- a free joint on the path from the world to the arm (a floating base: ROB's ``base/free``)
  is held at the identity, so poses are in that body's own frame, as ArmKinematics' are in
  ROB's ``base``; a robot fixed to the world (OpenArm on its pedestal, generated robots)
  has its poses in the world frame, which is where its twin stands;
- a torso yaw (canonical ``torso/yaw``) on that path is the ``torso`` input of every call,
  as in ArmKinematics. A robot without one takes ``torso = 0`` only (anything else is a
  KinematicsInputError); its ``torso_range`` is (0, 0) and its torso Jacobian column is 0.

The arm's *mount* frame (``mount_pose``) is the body that carries the arm's first joint: it
moves with the torso, never with the arm (the IK's seed table is built in it).

Units: joint angles [rad], positions [m], torques [Nm], mass [kg]. Jacobian rows 0-2: TCP
linear velocity [m/s per rad/s], rows 3-5: angular velocity [rad/s per rad/s], in the frame
above at the TCP point (Pinocchio's LOCAL_WORLD_ALIGNED): ``mj_jacSite`` after ``mj_kinematics``
and ``mj_comPos``, its columns of the arm's (and the torso's) dofs. Gravity torques: MuJoCo's
recursive Newton-Euler at zero velocity (``mj_rne``, the bias the twin's physics
applies) plus a payload's ``-J_c^T (m g)``, the same formula as ArmKinematics.

Effort limits: each arm joint's ``actuatorfrcrange`` when limited, else the force range of the
actuator that drives it, else unbounded. MuJoCo models carry no joint speed limit:
``velocity_limit`` is unbounded unless given.

An MjArmKinematics owns one ``MjData`` (one instance per thread, DESIGN.md); the ``MjModel`` is
only read and may be shared.
"""

from __future__ import annotations

import hashlib
import math

import mujoco
import numpy as np
import pinocchio as pin
from rob_twin.models import names as N
from rob_twin.models.names import Arm
from rob_twin.planners.errors import KinematicsInputError, PlannerConfigError
from rob_twin.planners.kinematics import Payload, joint_vector, torso_angle

MIN_JOINTS, MAX_JOINTS = 5, 7  # joints per arm this kinematics serves
_HINGE = int(mujoco.mjtJoint.mjJNT_HINGE)
_FREE = int(mujoco.mjtJoint.mjJNT_FREE)


def model_arm_joint_count(model: mujoco.MjModel, arm: Arm | str) -> int:
    """How many canonical joints ``arm/j1``, ``arm/j2``, ... ``model`` has, in a row."""
    n = 0
    while n < N.JOINTS_PER_ARM and (
        mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, N.arm_joint(arm, n + 1)) >= 0
    ):
        n += 1
    return n


def _ancestors(model: mujoco.MjModel, body: int) -> list[int]:
    """``body`` and every body above it up to (not including) the world, tip first."""
    out = []
    while body > 0:
        out.append(body)
        body = int(model.body_parentid[body])
    return out


def model_key(model: mujoco.MjModel) -> str:
    """A short digest of what the arm kinematics depends on (bodies, joints, sites, qpos0):
    equal for two copies of one model (the IK's seed tables are cached by it)."""
    h = hashlib.sha256()
    for arr in (
        model.body_pos,
        model.body_quat,
        model.body_parentid,
        model.jnt_pos,
        model.jnt_axis,
        model.jnt_range,
        model.site_pos,
        model.site_quat,
        model.qpos0,
    ):
        h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()[:16]


class MjArmKinematics:
    """TCP forward kinematics, Jacobian and gravity torques of one arm of a MuJoCo model with
    canonical names, torso angle as input (see the module docstring for the frame)."""

    def __init__(
        self,
        model: mujoco.MjModel,
        arm: Arm | str,
        velocity_limit: np.ndarray | None = None,
        key: str | None = None,
    ):
        self.arm = Arm.parse(arm)
        self.model = model
        self.data = mujoco.MjData(model)
        n = model_arm_joint_count(model, self.arm)
        if not MIN_JOINTS <= n <= MAX_JOINTS:
            raise PlannerConfigError(
                f"{self.arm.value} arm joints",
                n,
                f"{MIN_JOINTS} to {MAX_JOINTS} ({N.arm_joint(arm, 1)}...)",
            )
        self.n_joints = n
        self.joint_names: tuple[str, ...] = tuple(N.arm_joint(self.arm, j) for j in range(1, n + 1))
        self._jids = np.array([model.joint(j).id for j in self.joint_names])
        if np.any(model.jnt_type[self._jids] != _HINGE):
            raise PlannerConfigError(
                "arm joint types", model.jnt_type[self._jids].tolist(), "hinges"
            )
        self._qadr = model.jnt_qposadr[self._jids].copy()
        self._dofs = model.jnt_dofadr[self._jids].copy()
        site = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, N.tcp_site(self.arm))
        if site < 0:
            raise PlannerConfigError("tcp site", N.tcp_site(self.arm), "a site of the model")
        self.tcp_site = site
        chain = _ancestors(model, int(model.site_bodyid[site]))
        on_chain = set(chain)
        bodies = model.jnt_bodyid[self._jids]
        if not all(int(b) in on_chain for b in bodies):
            raise PlannerConfigError(
                "tcp site", N.tcp_site(self.arm), "a site below every arm joint"
            )

        limited = model.jnt_limited[self._jids] > 0
        self.lower = np.where(limited, model.jnt_range[self._jids, 0], -math.pi).astype(float)
        self.upper = np.where(limited, model.jnt_range[self._jids, 1], math.pi).astype(float)

        # the torso yaw: an input when it is a hinge above the arm, else held at 0
        torso = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, N.TORSO_JOINT)
        self.has_torso = bool(
            torso >= 0
            and model.jnt_type[torso] == _HINGE
            and int(model.jnt_bodyid[torso]) in on_chain
        )
        self._torso = torso if self.has_torso else -1
        if self.has_torso:
            lo, hi = model.jnt_range[torso] if model.jnt_limited[torso] else (-math.pi, math.pi)
            self.torso_range = (float(lo), float(hi))
        else:
            self.torso_range = (0.0, 0.0)

        # every other joint at qpos0; a floating base above the arm at the identity
        self.data.qpos[:] = model.qpos0
        for j in range(model.njnt):
            if model.jnt_type[j] == _FREE and int(model.jnt_bodyid[j]) in on_chain:
                adr = model.jnt_qposadr[j]
                self.data.qpos[adr : adr + 7] = [0, 0, 0, 1, 0, 0, 0]
        self.data.qvel[:] = 0.0

        self.effort_limit = self._effort_limits()  # [Nm]
        self.velocity_limit = (
            np.full(n, np.inf) if velocity_limit is None else np.asarray(velocity_limit, float)
        )  # [rad/s]
        self.gravity = model.opt.gravity.copy()  # [m/s^2]
        self._mount = int(model.body_parentid[bodies[0]])
        self.key = key or model_key(model)
        self._bias = np.zeros(model.nv)
        self._jacp, self._jacr = np.zeros((3, model.nv)), np.zeros((3, model.nv))
        # the Jacobian's columns: the torso's dof (any dof as a placeholder without one), the arm's
        self._cols = np.concatenate(
            [[model.jnt_dofadr[torso] if self.has_torso else self._dofs[0]], self._dofs]
        )
        self._q = np.zeros(1 + n)
        self._reach = self._reach_bound()

    def _effort_limits(self) -> np.ndarray:
        m = self.model
        out = np.full(self.n_joints, np.inf)
        for i, j in enumerate(self._jids):
            if m.jnt_actfrclimited[j]:
                out[i] = float(np.max(np.abs(m.jnt_actfrcrange[j])))
                continue
            for a in range(m.nu):
                if (
                    m.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT
                    and m.actuator_trnid[a, 0] == j
                    and m.actuator_forcelimited[a]
                ):
                    out[i] = float(np.max(np.abs(m.actuator_forcerange[a])))
        return out

    def _reach_bound(self) -> float:
        """Upper bound [m] on |TCP - J1 origin|: the distances from each joint's anchor to the
        next and from the last to the TCP. Each is the same at every q (the next point turns
        about an axis through the anchor), so it is measured once at the reference q."""
        self._forward(self._q)
        d = self.data
        points = np.vstack([d.xanchor[self._jids], d.site_xpos[self.tcp_site]])
        return float(np.sum(np.linalg.norm(np.diff(points, axis=0), axis=1)))

    # ------------------------------------------------------------------ full q
    def full_q(self, q: object, torso: object = 0.0) -> np.ndarray:
        """The full q (torso first, then the arm) after validating both."""
        t = torso_angle(torso)
        if not self.has_torso and t != 0.0:
            raise KinematicsInputError("torso", torso, "0: this robot has no torso joint")
        self._q[0] = t
        self._q[1:] = joint_vector(q, n=self.n_joints)
        return self._q.copy()

    def _forward(self, qfull: np.ndarray) -> None:
        d = self.data
        d.qpos[self._qadr] = qfull[1:]
        if self._torso >= 0:
            d.qpos[self.model.jnt_qposadr[self._torso]] = qfull[0]
        mujoco.mj_kinematics(self.model, d)

    def pose_of(self, qfull: np.ndarray) -> pin.SE3:
        """TCP pose for a full q (no validation; for solvers in this package)."""
        self._forward(qfull)
        d = self.data
        return pin.SE3(
            d.site_xmat[self.tcp_site].reshape(3, 3).copy(), d.site_xpos[self.tcp_site].copy()
        )

    def _jacobian_now(self, com_done: bool = False) -> np.ndarray:
        """6x(1+N) LOCAL_WORLD_ALIGNED Jacobian (torso column first) of the state in ``data``
        (after ``mj_kinematics``; ``com_done``: ``mj_comPos`` ran too)."""
        m, d = self.model, self.data
        if not com_done:
            mujoco.mj_comPos(m, d)
        mujoco.mj_jacSite(m, d, self._jacp, self._jacr, self.tcp_site)
        jac = np.zeros((6, 1 + self.n_joints))
        jac[:3] = self._jacp[:, self._cols]
        jac[3:] = self._jacr[:, self._cols]
        if self._torso < 0:
            jac[:, 0] = 0.0
        return jac

    def jacobian_of(self, qfull: np.ndarray, frame: pin.ReferenceFrame) -> np.ndarray:
        """6x(1+N) TCP Jacobian (torso column first) for a full q (no validation), in
        ``pin.LOCAL_WORLD_ALIGNED`` or ``pin.LOCAL`` (the TCP frame)."""
        self._forward(qfull)
        jac = self._jacobian_now()
        if frame == pin.LOCAL_WORLD_ALIGNED:
            return jac
        if frame == pin.LOCAL:
            rt = self.data.site_xmat[self.tcp_site].reshape(3, 3).T
            return np.vstack([rt @ jac[:3], rt @ jac[3:]])
        raise PlannerConfigError("jacobian frame", frame, "pin.LOCAL_WORLD_ALIGNED or pin.LOCAL")

    def mount_pose(self, torso: float) -> pin.SE3:
        """Pose of the body carrying the arm's first joint at ``torso`` [rad]."""
        self._forward(self._reference(torso))
        d = self.data
        return pin.SE3(d.xmat[self._mount].reshape(3, 3).copy(), d.xpos[self._mount].copy())

    def shoulder_origin(self, torso: float) -> np.ndarray:
        """The first joint's anchor [m] at ``torso`` [rad]."""
        self._forward(self._reference(torso))
        return self.data.xanchor[self._jids[0]].copy()

    def reach_bound_m(self) -> float:
        """Upper bound [m] on |TCP - J1 origin| (``_reach_bound``)."""
        return self._reach

    def _reference(self, torso: float) -> np.ndarray:
        q = np.zeros(1 + self.n_joints)
        q[0] = torso
        return q

    # -------------------------------------------------------------- public API
    def tcp_pose(self, q: object, torso: object = 0.0) -> pin.SE3:
        """TCP pose (rotation [-], translation [m]) at arm ``q`` [rad]."""
        return self.pose_of(self.full_q(q, torso))

    def tcp_jacobian(self, q: object, torso: object = 0.0, with_torso: bool = False) -> np.ndarray:
        """6xN TCP Jacobian (6x(N+1) with the torso column first when ``with_torso``)."""
        jac = self.jacobian_of(self.full_q(q, torso), pin.LOCAL_WORLD_ALIGNED)
        return jac if with_torso else jac[:, 1:].copy()

    def gravity_torques(
        self, q: object, torso: object = 0.0, payload: Payload | None = None
    ) -> np.ndarray:
        """Joint torques [Nm] that hold the arm still against gravity (``mj_rne`` at v = a =
        0), plus ``-J_c^T (m g)`` for a ``payload`` at its centre of mass."""
        self._forward(self.full_q(q, torso))
        m, d = self.model, self.data
        mujoco.mj_comPos(m, d)
        mujoco.mj_rne(m, d, 0, self._bias)
        tau = self._bias[self._dofs].copy()
        if payload is not None and payload.mass_kg > 0.0:
            jac = self._jacobian_now(com_done=True)[:, 1:]
            rot = d.site_xmat[self.tcp_site].reshape(3, 3)
            r = rot @ np.asarray(payload.com_m, dtype=float)  # TCP -> CoM
            jac_c = jac[:3] - pin.skew(r) @ jac[3:]
            tau -= jac_c.T @ (payload.mass_kg * self.gravity)
        return tau

    def within_limits(self, q: np.ndarray, tolerance: float = 0.0) -> bool:
        """True when every joint of ``q`` is inside [lower - tol, upper + tol] [rad]."""
        return bool(np.all(q >= self.lower - tolerance) and np.all(q <= self.upper + tolerance))
