"""Goal checks in joint and Cartesian space, each with a typed result (seed 002).

Before a goal reaches an owner it is checked against position and torque limits in
joint space and in Cartesian space (through FK). Each check returns a ``CheckResult``
whose ``Violation`` items name the limit that was broken, the value, the bound and the
excess, with units:

- ``check_joint_limits``: joint positions (and the torso) inside their ranges [rad];
- ``check_static_torque``: gravity + payload torques (RNEA) within the effort limits [Nm];
- ``check_workspace``: TCP above the table top by a margin and inside a reach box [m];
- ``check_tcp_speed``: TCP linear speed ``|J_v(q) qdot|`` at every trajectory sample [m/s];
- ``check_goal``: the first three for one goal configuration.

Cartesian quantities are in the arm kinematics' base frame: ROB's base frame (the scene's
world frame while the base stands at the origin; a caller that has driven the base transforms
the workspace), or the world frame of a robot fixed to it (``rob_twin.planners.mj_kinematics``).
Each check takes the arm's kinematics, ROB's ``ArmKinematics`` or any robot's
(``rob_twin.planners.robot_kinematics.arm_kinematics(robot, arm)``), with its own joint count,
effort limits and torso (a robot without a torso has no torso limit to check).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np
from rob_twin.models import dimensions as D
from rob_twin.models.names import TORSO_JOINT
from rob_twin.planners.errors import KinematicsInputError, PlannerConfigError
from rob_twin.planners.kinematics import ArmKinematics, Payload, joint_vector, torso_angle


class CheckKind(enum.Enum):
    JOINT_POSITION = "joint_position"
    STATIC_TORQUE = "static_torque"
    WORKSPACE = "workspace"
    TCP_SPEED = "tcp_speed"


@dataclass(frozen=True, kw_only=True)
class Violation:
    """One broken limit: ``value`` lies beyond ``bound`` by ``excess`` (> 0), all in ``unit``."""

    limit: str
    value: float
    bound: float
    excess: float
    unit: str
    sample: int | None = None  # trajectory sample index (TCP speed), else None

    def __str__(self) -> str:
        at = f" at sample {self.sample}" if self.sample is not None else ""
        return (
            f"{self.limit}{at}: {self.value:.6g} {self.unit} is beyond {self.bound:.6g} "
            f"{self.unit} by {self.excess:.3g} {self.unit}"
        )


@dataclass(frozen=True)
class CheckResult:
    """Outcome of one check; ``margin`` is the smallest slack to any limit (< 0 if violated)."""

    kind: CheckKind
    violations: tuple[Violation, ...]
    margin: float
    unit: str

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def worst(self) -> Violation | None:
        return max(self.violations, key=lambda v: v.excess) if self.violations else None

    @property
    def message(self) -> str:
        if self.ok:
            return f"{self.kind.value}: ok, margin {self.margin:.4g} {self.unit}"
        return f"{self.kind.value}: " + "; ".join(str(v) for v in self.violations)


@dataclass(frozen=True)
class GoalCheckConfig:
    """Limits of the goal checks (base frame, metres) with their provenance.

    table_top_z_m: table surface height (SCENE); table_margin_m: required TCP clearance
    above it (ASSUMED); table_xy_min/max_m: footprint where the table rule applies
    (SCENE's table, widened by the margin); box_min/max_m: reach box of allowed TCP
    positions (ASSUMED: generous around the arms' reach, 0.3 m above the floor);
    torque_fraction: share of the effort limits a static hold may use (ASSUMED 0.8, a
    reserve for acceleration); joint_margin_rad: slack kept from the joint limits;
    max_tcp_speed_m_s: TCP speed limit (ASSUMED 0.25 m/s, the ISO 10218-1 reduced speed).
    """

    table_top_z_m: float = D.SCENE.table_height
    table_margin_m: float = 0.03
    table_xy_min_m: tuple[float, float] = (
        D.SCENE.table_center[0] - D.SCENE.table_half[0] - 0.03,
        D.SCENE.table_center[1] - D.SCENE.table_half[1] - 0.03,
    )
    table_xy_max_m: tuple[float, float] = (
        D.SCENE.table_center[0] + D.SCENE.table_half[0] + 0.03,
        D.SCENE.table_center[1] + D.SCENE.table_half[1] + 0.03,
    )
    box_min_m: tuple[float, float, float] = (-0.5, -1.0, 0.3)
    box_max_m: tuple[float, float, float] = (1.2, 1.0, 1.8)
    torque_fraction: float = 0.8
    joint_margin_rad: float = 0.0
    max_tcp_speed_m_s: float = 0.25

    def __post_init__(self) -> None:
        if not all(lo < hi for lo, hi in zip(self.box_min_m, self.box_max_m, strict=True)):
            raise PlannerConfigError(
                "box_min_m/box_max_m", (self.box_min_m, self.box_max_m), "min < max per axis"
            )
        if not all(
            lo < hi for lo, hi in zip(self.table_xy_min_m, self.table_xy_max_m, strict=True)
        ):
            raise PlannerConfigError(
                "table_xy_min_m/max_m",
                (self.table_xy_min_m, self.table_xy_max_m),
                "min < max per axis",
            )
        if not self.table_margin_m >= 0.0:
            raise PlannerConfigError("table_margin_m", self.table_margin_m, ">= 0 m")
        if not 0.0 < self.torque_fraction <= 1.0:
            raise PlannerConfigError("torque_fraction", self.torque_fraction, "0 < fraction <= 1")
        if not self.joint_margin_rad >= 0.0:
            raise PlannerConfigError("joint_margin_rad", self.joint_margin_rad, ">= 0 rad")
        if not self.max_tcp_speed_m_s > 0.0:
            raise PlannerConfigError("max_tcp_speed_m_s", self.max_tcp_speed_m_s, "> 0 m/s")


def default_config() -> GoalCheckConfig:
    """ROB at the scene's table: 3 cm table clearance, 80 % effort, 0.25 m/s TCP speed."""
    return GoalCheckConfig()


def _result(kind: CheckKind, unit: str, names, values, lows, highs) -> CheckResult:
    """Range check of ``values`` against [lows, highs], one Violation per broken side."""
    out, margin = [], np.inf
    for name, v, lo, hi in zip(names, values, lows, highs, strict=True):
        margin = min(margin, v - lo, hi - v)
        if v < lo:
            out.append(
                Violation(
                    limit=f"{name} lower",
                    value=float(v),
                    bound=float(lo),
                    excess=float(lo - v),
                    unit=unit,
                )
            )
        elif v > hi:
            out.append(
                Violation(
                    limit=f"{name} upper",
                    value=float(v),
                    bound=float(hi),
                    excess=float(v - hi),
                    unit=unit,
                )
            )
    return CheckResult(kind, tuple(out), float(margin), unit)


def check_joint_limits(
    kin: ArmKinematics, q: np.ndarray, torso: float | None = None, margin_rad: float = 0.0
) -> CheckResult:
    """Arm ``q`` [rad] (and ``torso`` [rad] if given and the robot has one) inside the limits
    shrunk by ``margin_rad``."""
    q = joint_vector(q, n=kin.n_joints)
    names, values = list(kin.joint_names), list(q)
    lows, highs = list(kin.lower + margin_rad), list(kin.upper - margin_rad)
    if torso is not None and kin.has_torso:
        names.append(TORSO_JOINT)
        values.append(torso_angle(torso))
        lows.append(kin.torso_range[0] + margin_rad)
        highs.append(kin.torso_range[1] - margin_rad)
    return _result(CheckKind.JOINT_POSITION, "rad", names, values, lows, highs)


def check_static_torque(
    kin: ArmKinematics,
    q: np.ndarray,
    torso: float = 0.0,
    payload: Payload | None = None,
    fraction: float = 1.0,
) -> CheckResult:
    """Holding torques (gravity + payload, RNEA) [Nm] within ``fraction`` of the effort limits."""
    tau = kin.gravity_torques(q, torso, payload)
    limit = fraction * kin.effort_limit
    names = [f"{n} effort" for n in kin.joint_names]
    return _result(CheckKind.STATIC_TORQUE, "Nm", names, tau, -limit, limit)


def check_workspace(position: np.ndarray, config: GoalCheckConfig | None = None) -> CheckResult:
    """TCP ``position`` [m] inside the reach box and, over the table, above it by the margin."""
    cfg = config or default_config()
    p = np.asarray(position, dtype=float)
    if p.shape != (3,) or not np.all(np.isfinite(p)):
        raise KinematicsInputError("position", p.tolist(), "3 finite coordinates [m]")
    names = [f"reach box {a}" for a in "xyz"]
    lows, highs, values = list(cfg.box_min_m), list(cfg.box_max_m), list(p)
    over_table = all(
        lo <= v <= hi
        for v, lo, hi in zip(p[:2], cfg.table_xy_min_m, cfg.table_xy_max_m, strict=True)
    )
    if over_table:
        names.append("table clearance z")
        values.append(p[2])
        lows.append(cfg.table_top_z_m + cfg.table_margin_m)
        highs.append(np.inf)
    return _result(CheckKind.WORKSPACE, "m", names, values, lows, highs)


def check_tcp_speed(
    kin: ArmKinematics,
    q: np.ndarray,
    qd: np.ndarray,
    torso: float | np.ndarray = 0.0,
    torso_rate: float | np.ndarray = 0.0,
    max_speed_m_s: float | None = None,
) -> CheckResult:
    """TCP linear speed [m/s] at every sample of a trajectory, via the Jacobian.

    q, qd: (T, N) joint positions [rad] and velocities [rad/s]; torso, torso_rate: the
    torso angle [rad] and rate [rad/s], scalars or (T,). Only the given samples are
    checked: pass the retimed samples (125 Hz) the owners will receive.
    """
    limit = default_config().max_tcp_speed_m_s if max_speed_m_s is None else float(max_speed_m_s)
    if not limit > 0.0:
        raise PlannerConfigError("max_speed_m_s", max_speed_m_s, "> 0 m/s")
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    n = kin.n_joints
    if q.ndim != 2 or q.shape[1] != n or qd.shape != q.shape:
        raise KinematicsInputError("q/qd shapes", (q.shape, qd.shape), f"two equal (T, {n}) arrays")
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd))):
        raise KinematicsInputError("q/qd", "non-finite samples", "finite [rad], [rad/s]")
    torso = np.broadcast_to(np.asarray(torso, dtype=float), (len(q),))
    rate = np.broadcast_to(np.asarray(torso_rate, dtype=float), (len(q),))
    out, margin = [], np.inf
    for i in range(len(q)):
        jac = kin.tcp_jacobian(q[i], torso[i], with_torso=True)
        speed = float(np.linalg.norm(jac[:3, 0] * rate[i] + jac[:3, 1:] @ qd[i]))
        margin = min(margin, limit - speed)
        if speed > limit:
            out.append(
                Violation(
                    limit="tcp speed",
                    value=speed,
                    bound=limit,
                    excess=speed - limit,
                    unit="m/s",
                    sample=i,
                )
            )
    return CheckResult(CheckKind.TCP_SPEED, tuple(out), float(margin), "m/s")


@dataclass(frozen=True)
class GoalReport:
    """The joint, torque and workspace checks of one goal configuration."""

    results: tuple[CheckResult, ...]

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    @property
    def violations(self) -> tuple[Violation, ...]:
        return tuple(v for r in self.results for v in r.violations)

    @property
    def message(self) -> str:
        return "; ".join(r.message for r in self.results)


def check_goal(
    kin: ArmKinematics,
    q: np.ndarray,
    torso: float = 0.0,
    payload: Payload | None = None,
    config: GoalCheckConfig | None = None,
) -> GoalReport:
    """Joint limits (incl. torso), static torque and TCP workspace of goal ``q`` [rad]."""
    cfg = config or default_config()
    joints = check_joint_limits(kin, q, torso, cfg.joint_margin_rad)
    torque = check_static_torque(kin, q, torso, payload, cfg.torque_fraction)
    space = check_workspace(kin.tcp_pose(q, torso).translation, cfg)
    return GoalReport((joints, torque, space))
