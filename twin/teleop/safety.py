"""The safety filter between a clutched TCP target and an arm owner.

Per proposed TCP target (all from the *commanded* joint state, never the measured one):

1. TCP-speed clamp: the step from ``FK(q_cmd)`` is cut to ``max_tcp_speed_m_s * dt`` and
   ``max_tcp_angular_speed_rad_s * dt`` (along the SE3 geodesic); a controller faster
   than that makes the arm lag behind and catch up, never jump.
2. IK in continuity mode, seeded from ``q_cmd`` moved along the Jacobian's null space
   away from the joint limits (the arm's spare degree of freedom; the bias scales with the
   TCP motion, so a still controller moves nothing). A target equal to ``FK(q_cmd)`` is
   ``q_cmd`` itself, no solve.
3. Joint-step clamp: ``|q - q_cmd|`` scaled down uniformly to ``max_joint_step_rad``.
4. Goal checks (joint limits, static torque, workspace: ``rob_twin.planners.goal_checks``).
5. Collision: arm-vs-arm and arm-vs-world with the planner's checker and its margin,
   at the target, along the joint segment from ``q_cmd`` to it and along the stopping
   path (``q_cmd`` plus the braking displacement ``v|v| / 2a`` of the commanded
   velocity, then on to the target), against the other arm's commanded joints and its
   pending target. The straight joint segments approximate the owner's jerk-limited
   path; the joint-step clamp keeps them short (ASSUMED adequate at 0.05 rad).

A rejected target leaves the arm where its last accepted target put it; the reason says
which check refused it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from rob_twin.models.names import Arm
from rob_twin.planners.collision import CheckSession
from rob_twin.planners.goal_checks import GoalCheckConfig, check_goal
from rob_twin.planners.ik import IKSolver
from rob_twin.twin.teleop.refusal_words import ik_refusal


@dataclass(frozen=True)
class SafetyConfig:
    """max_joint_step_rad: largest joint change of one target [rad]; max_tcp_speed_m_s
    [m/s] (ISO 10218-1 reduced speed 0.25 m/s) and max_tcp_angular_speed_rad_s [rad/s]:
    TCP motion per second of input; max_dt_s: the longest input gap the speed clamp
    credits [s]; path_step_rad: spacing of collision samples along joint segments [rad];
    nullspace_rad_per_m: null-space bias per metre of TCP motion [rad/m];
    ik_step_bound_rad: continuity bound handed to the IK [rad]."""

    max_joint_step_rad: float = 0.05
    max_tcp_speed_m_s: float = 0.25
    max_tcp_angular_speed_rad_s: float = 1.0
    max_dt_s: float = 0.05
    path_step_rad: float = 0.01
    nullspace_rad_per_m: float = 0.5
    ik_step_bound_rad: float = 0.2

    def __post_init__(self) -> None:
        for name in (
            "max_joint_step_rad",
            "max_tcp_speed_m_s",
            "max_tcp_angular_speed_rad_s",
            "max_dt_s",
            "path_step_rad",
            "ik_step_bound_rad",
        ):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        if not self.nullspace_rad_per_m >= 0:
            raise ValueError(f"nullspace_rad_per_m must be >= 0, got {self.nullspace_rad_per_m!r}")


def default_config() -> SafetyConfig:
    return SafetyConfig()


@dataclass(frozen=True, kw_only=True)
class FilterResult:
    """accepted: q [rad] may go to the owner; reason: why not (or what was clamped)."""

    accepted: bool
    q: np.ndarray | None
    reason: str = ""
    tcp_clamped: bool = False
    joint_clamped: bool = False
    check: str = ""  # which check refused: ik, goal, collision
    detail: str = ""  # the refusing check's own text (solver status, tolerances), for logs


class ArmSafetyFilter:
    """The filter of one arm (one thread: it owns its kinematics and IK)."""

    def __init__(
        self,
        arm: Arm,
        collision: CheckSession,
        accel_rad_s2: np.ndarray,
        torso_rad: float = 0.0,
        config: SafetyConfig | None = None,
        goal_config: GoalCheckConfig | None = None,
        robot=None,
    ):
        """robot: a ``rob_twin.models.robot.Robot`` (None: the default robot), whose own arm
        kinematics the IK and the checks use (``planners.robot_kinematics``)."""
        from rob_twin.planners.robot_kinematics import arm_kinematics

        self.arm = arm
        self.config = config or default_config()
        self.goal_config = goal_config
        self.kin = arm_kinematics(robot, arm)
        self.ik = IKSolver(self.kin)
        self.collision = collision
        self.torso = float(torso_rad)
        self.accel = np.asarray(accel_rad_s2, float)
        self._mid = 0.5 * (self.kin.lower + self.kin.upper)
        self._half_range = 0.5 * (self.kin.upper - self.kin.lower)
        self._slot = slice(0, 7) if arm is Arm.RIGHT else slice(7, 14)
        self._other = slice(7, 14) if arm is Arm.RIGHT else slice(0, 7)

    def tcp_pose(self, q: np.ndarray) -> pin.SE3:
        """FK of ``q`` [rad] at the filter's torso angle."""
        return self.kin.tcp_pose(q, self.torso)

    def filter(
        self,
        target: pin.SE3,
        q_cmd: np.ndarray,
        v_cmd: np.ndarray,
        dt_s: float,
        other_q: list[np.ndarray],
        still: bool = False,
    ) -> FilterResult:
        """Turn a TCP ``target`` into a checked joint target, or refuse it."""
        c = self.config
        if still:
            q, tcp_clamped, motion = q_cmd.copy(), False, 0.0
        else:
            start = self.tcp_pose(q_cmd)
            twist = pin.log6(start.actInv(target)).vector
            dt = min(max(dt_s, 0.0), c.max_dt_s)
            lin, ang = float(np.linalg.norm(twist[:3])), float(np.linalg.norm(twist[3:]))
            scale = min(
                1.0,
                c.max_tcp_speed_m_s * dt / lin if lin > 0 else 1.0,
                c.max_tcp_angular_speed_rad_s * dt / ang if ang > 0 else 1.0,
            )
            tcp_clamped = scale < 1.0
            if lin == 0.0 and ang == 0.0:
                q, motion = q_cmd.copy(), 0.0
            else:
                goal = start * pin.exp6(pin.Motion(twist * scale))
                motion = (lin + 0.1 * ang) * scale
                seed = self._nullspace_seed(q_cmd, motion)
                res = self.ik.solve_continuous(goal, seed, self.torso, c.ik_step_bound_rad)
                if not res.ok:
                    return FilterResult(
                        accepted=False,
                        q=None,
                        reason=self._ik_words(target, start, res),
                        tcp_clamped=tcp_clamped,
                        check="ik",
                        detail=f"IK {res.status.value}: {res.message}",
                    )
                q = res.q
        step = float(np.max(np.abs(q - q_cmd)))
        joint_clamped = step > c.max_joint_step_rad
        if joint_clamped:
            q = q_cmd + (q - q_cmd) * (c.max_joint_step_rad / step)
        report = check_goal(self.kin, q, self.torso, config=self.goal_config)
        if not report.ok:
            return FilterResult(
                accepted=False,
                q=None,
                reason=f"goal check: {report.violations[0]}",
                tcp_clamped=tcp_clamped,
                joint_clamped=joint_clamped,
                check="goal",
            )
        hit = self._collision(q_cmd, v_cmd, q, other_q)
        if hit:
            return FilterResult(
                accepted=False,
                q=None,
                reason=hit,
                tcp_clamped=tcp_clamped,
                joint_clamped=joint_clamped,
                check="collision",
            )
        notes = [
            n
            for n, on in (("TCP speed clamped", tcp_clamped), ("joint step clamped", joint_clamped))
            if on
        ]
        return FilterResult(
            accepted=True,
            q=q,
            reason="; ".join(notes),
            tcp_clamped=tcp_clamped,
            joint_clamped=joint_clamped,
        )

    def _ik_words(self, target: pin.SE3, start: pin.SE3, res) -> str:
        """The IK refusal in plain words (``refusal_words.ik_refusal``)."""
        return ik_refusal(
            self.arm.value,
            target.translation,
            start.translation,
            self.kin.shoulder_origin(self.torso),
            self.kin.reach_bound_m(),
            res,
            self.config.ik_step_bound_rad,
        )

    def _nullspace_seed(self, q: np.ndarray, motion: float) -> np.ndarray:
        """``q`` moved by at most ``nullspace_rad_per_m * motion`` [rad] in the Jacobian's
        null space, towards the middle of every joint's range (weighted by range)."""
        gain = self.config.nullspace_rad_per_m * motion
        if gain <= 0.0:
            return q
        jac = self.kin.tcp_jacobian(q, self.torso)
        proj = np.eye(7) - np.linalg.pinv(jac, rcond=1e-4) @ jac
        d = proj @ ((self._mid - q) / self._half_range**2)
        peak = float(np.max(np.abs(d)))
        if peak < 1e-12:
            return q
        seed = q + d * (gain / peak)
        return np.clip(seed, self.kin.lower, self.kin.upper)

    def _segment(self, a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
        n = max(1, int(np.ceil(float(np.max(np.abs(b - a))) / self.config.path_step_rad)))
        return [a + (b - a) * (k / n) for k in range(1, n + 1)]

    def _collision(self, q_cmd, v_cmd, q, other_q) -> str:
        brake = q_cmd + v_cmd * np.abs(v_cmd) / (2.0 * self.accel)
        paths = (
            ("target", [q]),
            ("path to target", self._segment(q_cmd, q)),
            ("stopping path", self._segment(q_cmd, brake) + self._segment(brake, q)),
        )
        stacked = np.zeros(14)
        for other in other_q:
            stacked[self._other] = other
            for label, samples in paths:
                for s in samples:
                    stacked[self._slot] = s
                    if not self.collision.is_free(stacked):
                        cl = self.collision.clearance(stacked)
                        pair = f"{cl.pair.name1} / {cl.pair.name2}" if cl.pair else "?"
                        return (
                            f"collision on the {label}: {pair} at {cl.distance_m * 1000:.1f} mm "
                            f"(margin {self.collision.margin * 1000:.1f} mm)"
                        )
        return ""
