"""Lockstep Cartesian paths: every named TCP follows its straight line, all on one time law.

Path: each arm's TCP goes from its current pose to its target along a straight line
(position lerp, orientation slerp: ``start * exp(s * log(start^-1 target))`` with the
rotation and translation interpolated separately). All arms share the path parameter
s in [0, 1], so they start, progress and arrive together (lockstep). s is sampled so no
TCP moves more than ``step_m`` [m] or turns more than ``step_rad`` [rad] per sample.

Joint path: at each sample, each arm's IK in continuity mode (``solve_continuous``) from
the previous sample's solution, every joint within ``max_joint_step_rad`` and at least
``limit_inset_rad`` inside its range (see below); the stacked state is checked with the
group's checker (margin). A broken continuity or a colliding sample ends the request with
a typed ``CartesianFailure`` (which sample, which arm, why).

Time law: a C2 cubic spline Q(s) through the IK samples and one jerk-limited rest-to-rest
profile s(t) (``rob_twin.planners.retime.ScalarProfile``); q(t) = Q(s(t)). Its limits are first
set from max |Q'| and then the whole law is slowed by a uniform time scale
(V/k, A/k^2, J/k^3 is exactly s(t/k)) until velocity, acceleration and jerk hold, both
analytically on a dense grid and as divided differences of the 125 Hz samples. Every
125 Hz sample and ``substeps`` states between samples are then re-checked (margin), and
the TCPs' largest distance from their lines is measured.

Joint-limit inset: where the line needs a joint beyond its range (ROB's home has J7 on its
lower limit, -1.571 rad, and most lines want to turn it further) the IK pins that joint on
the bound, and the pinned sequence has slope kinks (where it meets or leaves the bound, and
a ~0.1-0.3 mrad blip at the first sample). The C2 spline through a kink rings: on the
planner benchmark's 20 requests it left the range by 7-31 urad between samples (5 LIMITS
failures; up to 45 urad, 32 of 200 requests of another seed). So the IK samples (not the
start) keep ``limit_inset_rad`` (default 1 mrad) from every bound: over those 200 requests
the spline came at most 63 urad past the inset bound, never out of the true range. The
true range is still checked on the 125 Hz samples (a typed LIMITS failure naming the
joint, the excess, s and the neighbouring IK samples).

Units: metres, radians, seconds.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pinocchio as pin
from rob_twin.planners.errors import GoalInputError, PlanFailedError, PlannerConfigError
from rob_twin.planners.geom_pairs import GeomPair
from rob_twin.planners.ik import IKConfig, IKSolver
from rob_twin.planners.kinematics import ArmKinematics
from rob_twin.planners.plan import ArmTrajectory, Plan
from rob_twin.planners.pose import as_pose
from rob_twin.planners.pose_goals import group_torso
from rob_twin.planners.retime import JointLimits, ScalarProfile, limit_report, sample_times
from rob_twin.planners.robot_kinematics import arm_kinematics
from rob_twin.planners.timing import StageTimer
from scipy.interpolate import CubicSpline

if TYPE_CHECKING:
    from rob_twin.models.robot import Robot
    from rob_twin.planners.group import ArmGroup
    from rob_twin.planners.mj_kinematics import MjArmKinematics


@dataclass(frozen=True)
class CartesianConfig:
    """step_m / step_rad: largest TCP move / turn between IK samples [m], [rad];
    max_joint_step_rad: continuity bound per joint between samples [rad];
    position_tolerance_m: allowed TCP distance from its line at the 125 Hz samples [m]
    (the spline between IK samples); max_time_scalings: rounds of slowing down;
    limit_inset_rad: distance the IK samples keep from every joint bound [rad], room for
    the spline's overshoot between samples (0 pins samples on the bounds);
    jump_refinements: how often a pass whose IK broke continuity (a joint beyond
    ``max_joint_step_rad`` between samples) is redone with twice the samples, so the
    failure is named where it is: a line that leaves the workspace becomes ``ik_failed``
    where it does, one that runs into something a ``collision``, a branch flip stays a
    jump at any step (on 30 ROB lines that jumped at the default step: 19, 7 and 4); a
    joint that only moves fast passes (0: never)."""

    step_m: float = 0.005
    step_rad: float = 0.02
    max_joint_step_rad: float = 0.1
    position_tolerance_m: float = 0.001
    max_time_scalings: int = 12
    limit_inset_rad: float = 1e-3
    jump_refinements: int = 2

    def __post_init__(self) -> None:
        for name in ("step_m", "step_rad", "max_joint_step_rad", "position_tolerance_m"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise PlannerConfigError(name, v, "finite and > 0")
        if not 0.0 <= self.limit_inset_rad < 0.05:
            raise PlannerConfigError("limit_inset_rad", self.limit_inset_rad, "0 <= inset < 0.05")
        if not (isinstance(self.jump_refinements, int) and 0 <= self.jump_refinements <= 4):
            raise PlannerConfigError("jump_refinements", self.jump_refinements, "an integer 0..4")


def default_config() -> CartesianConfig:
    """5 mm / 0.02 rad per sample, 0.1 rad joint step, 1 mm line tolerance, 1 mrad inset."""
    return CartesianConfig()


class CartesianStatus(enum.Enum):
    SUCCESS = "success"
    START_IN_COLLISION = "start_in_collision"
    IK_FAILED = "ik_failed"  # no IK solution near the previous sample (unreachable, singular)
    JOINT_JUMP = "joint_jump"  # the only solutions need a branch flip (continuity broken)
    COLLISION = "collision"  # an IK sample or a retimed state is within the margin
    OFF_LINE = "off_line"  # the timed path leaves the line by more than the tolerance
    LIMITS = "limits"  # the time law could not be made to respect the joint limits


@dataclass(frozen=True, kw_only=True)
class CartesianFailure:
    """Where and why: IK sample index (of ``samples``), path fraction s, the arm at fault
    (None when a collision involves no single moving arm), reason, and the geom pair."""

    status: CartesianStatus
    sample: int
    samples: int
    s: float
    arm: str | None
    reason: str
    pair: GeomPair | None = None


@dataclass(frozen=True)
class CartesianResult:
    """``plan`` on success, else ``failure``; ``max_line_deviation_m``: largest TCP
    distance from its straight line over the 125 Hz samples."""

    status: CartesianStatus
    plan: Plan | None = None
    failure: CartesianFailure | None = None
    max_line_deviation_m: float = math.nan
    time_scale: float = math.nan  # the slow-down that made the limits hold (>= 1 when used)

    @property
    def ok(self) -> bool:
        return self.status is CartesianStatus.SUCCESS

    @property
    def reason(self) -> str:
        return "" if self.failure is None else self.failure.reason

    def unwrap(self) -> Plan:
        if self.plan is None:
            raise PlanFailedError(self)
        return self.plan


def interpolate(start: pin.SE3, goal: pin.SE3, s: float) -> pin.SE3:
    """Straight-line pose: position lerp, orientation slerp, at fraction ``s``."""
    rot = start.rotation @ pin.exp3(s * pin.log3(start.rotation.T @ goal.rotation))
    return pin.SE3(rot, (1.0 - s) * start.translation + s * goal.translation)


class SplinePath:
    """q(t) = Q(s(t)): a C2 spline through the IK samples on a scalar jerk-limited law."""

    def __init__(self, waypoints: np.ndarray, scale: float, base: tuple[float, float, float]):
        self.waypoints = waypoints
        self.spline = CubicSpline(np.linspace(0.0, 1.0, len(waypoints)), waypoints, axis=0)
        self.scale = scale
        v, a, j = base
        self.profile = ScalarProfile(v / scale, a / scale**2, j / scale**3)

    @property
    def duration(self) -> float:
        return self.profile.duration

    def evaluate(self, t: np.ndarray):
        """(q, qd, qdd) at times ``t`` [s]."""
        s, sd, sdd = self.profile.evaluate(np.atleast_1d(t))
        d1, d2 = self.spline(s, 1), self.spline(s, 2)
        return self.spline(s), d1 * sd[:, None], d2 * sd[:, None] ** 2 + d1 * sdd[:, None]

    def jerk(self, t: np.ndarray) -> np.ndarray:
        s, sd, sdd = self.profile.evaluate(np.atleast_1d(t))
        k = np.clip(np.searchsorted(self.profile.starts, t, "right") - 1, 0, 6)
        sddd = np.where(t < self.duration, self.profile.jerks[k], 0.0)
        d1, d2, d3 = self.spline(s, 1), self.spline(s, 2), self.spline(s, 3)
        return d3 * sd[:, None] ** 3 + 3 * d2 * (sd * sdd)[:, None] + d1 * sddd[:, None]


def plan_cartesian(
    group: ArmGroup,
    targets: Mapping[str, pin.SE3 | np.ndarray],
    config: CartesianConfig | None = None,
    torso: float | None = None,
    ik_config: IKConfig | None = None,
    robot: Robot | str | None = None,
) -> CartesianResult:
    """Lockstep straight-line TCP paths of the arms in ``targets`` (base-frame poses) from
    their commanded poses; ``torso`` [rad] defaults to the group's reference torso.
    ``robot``: whose arm kinematics the poses are in (``rob_twin.planners.robot_kinematics``;
    None: ROB's)."""
    cfg = config or default_config()
    timer = StageTimer()
    if not targets:
        raise GoalInputError("*", "targets", dict(targets), f"at least one of {group.arm_names}")
    for a in targets:
        group._arm(a)
    moving = tuple(a for a in group.arm_names if a in targets)
    torso = group_torso(group) if torso is None else float(torso)
    solvers = {
        a: IKSolver(_inset_kinematics(a, cfg.limit_inset_rad, robot), ik_config) for a in moving
    }
    q0 = {a: group.arm_q(a) for a in moving}
    start = {a: solvers[a].kin.tcp_pose(q0[a], torso) for a in moving}
    goal = {a: as_pose(targets[a], f"targets[{a!r}]") for a in moving}
    reach = max(
        max(
            float(np.linalg.norm(goal[a].translation - start[a].translation)) / cfg.step_m,
            float(np.linalg.norm(pin.log3(start[a].rotation.T @ goal[a].rotation))) / cfg.step_rad,
        )
        for a in moving
    )
    n = max(2, math.ceil(reach))
    meter = group.meter.session(moving, group.reference_qpos)
    margin = group.config.collision.margin_m
    stages = timer.stages

    def fail(status, k, arm, reason, pair=None):
        failure = CartesianFailure(
            status=status, sample=k, samples=n + 1, s=k / n, arm=arm, reason=reason, pair=pair
        )
        return CartesianResult(status, failure=failure)

    def ik_pass():
        """The IK samples of the path at ``n`` + 1 points (rows), or a failed result."""
        rows, q = [], dict(q0)
        for k in range(n + 1):
            if k > 0:
                for a in moving:
                    r = solvers[a].solve_continuous(
                        interpolate(start[a], goal[a], k / n), q[a], torso, cfg.max_joint_step_rad
                    )
                    if not r.ok:
                        status = (
                            CartesianStatus.JOINT_JUMP
                            if r.status.value == "joint_jump"
                            else CartesianStatus.IK_FAILED
                        )
                        return fail(
                            status,
                            k,
                            a,
                            f"IK at sample {k}/{n} (s={k / n:.3f}) of {a}: "
                            f"{r.status.value}: {r.message}",
                        )
                    q[a] = r.q
            row = np.concatenate([q[a] for a in moving])
            c = meter.clearance(row)
            if not c.is_free(margin):
                status = CartesianStatus.START_IN_COLLISION if k == 0 else CartesianStatus.COLLISION
                return fail(
                    status,
                    k,
                    _arm_of(group, c.pair, moving),
                    f"sample {k}/{n} (s={k / n:.3f}) is {c.distance_m * 1e3:.2f} mm from "
                    f"collision (margin {margin * 1e3:.1f} mm): {c.pair}",
                    c.pair,
                )
            rows.append(row)
        return rows

    with timer.stage("ik"):
        for refinement in range(cfg.jump_refinements + 1):
            rows = ik_pass()
            jumped = isinstance(rows, CartesianResult) and rows.status is CartesianStatus.JOINT_JUMP
            if not jumped or refinement == cfg.jump_refinements:
                break
            n *= 2
        if isinstance(rows, CartesianResult):
            return rows

    with timer.stage("retime"):
        waypoints = np.array(rows)
        limits = JointLimits.stack([group.motion_limits(a) for a in moving])
        path, scale = _timed(waypoints, limits, group.config.rate_hz, cfg)
    if path is None:
        return fail(
            CartesianStatus.LIMITS,
            n,
            None,
            f"joint limits still exceeded after {cfg.max_time_scalings} slow-downs",
        )
    times = sample_times(path.duration, group.config.rate_hz)
    qs, qd, qdd = path.evaluate(times)
    lo = np.concatenate([group.joint_limits(a)[0] for a in moving])
    hi = np.concatenate([group.joint_limits(a)[1] for a in moving])
    if (qs < lo - 1e-6).any() or (qs > hi + 1e-6).any():
        k, arm, reason = _range_report(group, moving, path, times, qs, lo, hi, n)
        return fail(CartesianStatus.LIMITS, k, arm, reason)
    qs = np.clip(qs, lo, hi)

    with timer.stage("check"):
        hit, record, checked = group._check_timed(path, meter)
    if hit is not None:
        k = int(round(float(path.profile.evaluate(np.array([hit[0]]))[0][0]) * n))
        return fail(
            CartesianStatus.COLLISION,
            k,
            _arm_of(group, hit[1].pair, moving),
            f"retimed state at t={hit[0]:.3f} s (near sample {k}) is "
            f"{hit[1].distance_m * 1e3:.2f} mm from collision: {hit[1].pair}",
            hit[1].pair,
        )
    deviation = _line_deviation(solvers, moving, start, goal, qs, torso)
    if deviation > cfg.position_tolerance_m:
        return fail(
            CartesianStatus.OFF_LINE,
            n,
            None,
            f"TCP leaves its line by {deviation * 1e3:.2f} mm "
            f"(tolerance {cfg.position_tolerance_m * 1e3:.2f} mm)",
        )
    arms, col = {}, 0
    for a in moving:
        m = len(group.joint_names(a))
        arms[a] = ArmTrajectory(
            a,
            group.joint_names(a),
            qs[:, col : col + m],
            qd[:, col : col + m],
            qdd[:, col : col + m],
        )
        col += m
    timer.total()
    plan = Plan(
        t=times,
        rate_hz=group.config.rate_hz,
        arms=arms,
        waypoints=waypoints,
        min_clearance=record,
        stage_times_s=stages,
        checked_states=checked,
        repairs=0,
        seed=0,
    )
    return CartesianResult(CartesianStatus.SUCCESS, plan, None, deviation, scale)


def _inset_kinematics(arm: str, inset: float, robot=None) -> ArmKinematics | MjArmKinematics:
    """The arm's kinematics for the path's IK: every joint range shrunk by ``inset`` [rad] at
    both ends (FK unchanged), so the IK samples keep that distance from the true bounds."""
    kin = arm_kinematics(robot, arm)
    kin.lower, kin.upper = kin.lower + inset, kin.upper - inset
    return kin


def _range_report(group, moving, path, times, qs, lo, hi, n):
    """(nearest sample, arm, reason) for the 125 Hz state furthest outside the joint range."""
    excess = np.maximum(lo - qs, qs - hi)
    i, j = np.unravel_index(int(np.argmax(excess)), excess.shape)
    names = [(a, nm) for a in moving for nm in group.joint_names(a)]
    s = float(path.profile.evaluate(np.array([times[i]]))[0][0])
    k = min(int(s * n), n - 1)
    w = path.waypoints[:, j]
    margins = [float(min(w[m] - lo[j], hi[j] - w[m])) * 1e6 for m in (k, k + 1)]
    reason = (
        f"the spline leaves the joint range: {names[j][1]} by {excess[i, j] * 1e6:.2f} urad "
        f"at t={times[i]:.3f} s (s={s:.4f}), between IK samples {k} and {k + 1} "
        f"({margins[0]:.2f} / {margins[1]:.2f} urad inside the range)"
    )
    return int(round(s * n)), names[j][0], reason


def _arm_of(group: ArmGroup, pair: GeomPair | None, moving) -> str | None:
    if pair is None:
        return None
    owners = {int(group.checker.pairs.owner[g]) for g in (pair.geom1, pair.geom2)}
    arms = [a for a in moving if group.checker.pairs.arm_index(a) in owners]
    return arms[0] if len(arms) == 1 else None


def _timed(waypoints: np.ndarray, limits: JointLimits, rate_hz: float, cfg: CartesianConfig):
    """The spline path on the fastest uniformly slowed law that respects ``limits``."""
    vmax, amax, jmax = (
        np.asarray(getattr(limits, f)) for f in ("velocity", "acceleration", "jerk")
    )
    probe = CubicSpline(np.linspace(0, 1, len(waypoints)), waypoints, axis=0)
    grid = np.linspace(0.0, 1.0, 20 * len(waypoints))
    d1 = np.max(np.abs(probe(grid, 1)), axis=0) + 1e-12
    base = (float(np.min(vmax / d1)), float(np.min(amax / d1)), float(np.min(jmax / d1)))
    scale = 1.0
    for _ in range(cfg.max_time_scalings):
        path = SplinePath(waypoints, scale, base)
        dt = 1.0 / rate_hz
        dense = np.linspace(0.0, path.duration, max(200, int(path.duration * 1000)))
        _, qd, qdd = path.evaluate(dense)
        ratio = max(
            float(np.max(np.abs(qd) / vmax)),
            math.sqrt(float(np.max(np.abs(qdd) / amax))),
            float(np.max(np.abs(path.jerk(dense)) / jmax)) ** (1 / 3),
        )
        times = sample_times(path.duration, rate_hz)
        qs, qds, qdds = path.evaluate(times)
        rep = limit_report(qs, qds, qdds, dt, limits)
        ratio = max(
            ratio,
            rep.discrete_velocity,
            math.sqrt(rep.discrete_acceleration),
            rep.discrete_jerk ** (1 / 3),
        )
        if ratio <= 1.0 + 1e-9:
            return path, scale
        scale *= ratio * 1.01
    return None, scale


def _line_deviation(solvers, moving, start, goal, q, torso) -> float:
    """Largest distance [m] of any TCP from its straight start-goal segment."""
    worst, col = 0.0, 0
    for a in moving:
        kin = solvers[a].kin
        p0, p1 = start[a].translation, goal[a].translation
        d = p1 - p0
        L2 = float(d @ d)
        n = kin.n_joints
        for row in q[:, col : col + n]:
            p = kin.tcp_pose(row, torso).translation
            u = 0.0 if L2 == 0 else float(np.clip((p - p0) @ d / L2, 0.0, 1.0))
            worst = max(worst, float(np.linalg.norm(p - (p0 + u * d))))
        col += n
    return worst
