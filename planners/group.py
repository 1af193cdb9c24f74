"""ArmGroup: plan any subset of named arms together over any MuJoCo model.

The group knows each arm only by its joint names: nothing here is ROB-specific. A request
``plan({arm: goal, ...})`` moves exactly the named arms; every other joint (idle arms,
torso, head, base, objects) stays at the group's *reference* state (the current commanded
pose, ``set_arm``/``set_qpos``) and is an obstacle. The plan holds trajectories of the
moving arms only; a one-arm request is a one-arm group.

Stages (wall time of each in ``Plan.stage_times_s``): ``goals`` (candidates, combined
check), ``search`` (RRT-Connect in the stacked joint space), ``shortcut``, ``retime``
(jerk-limited time law, 125 Hz samples), ``check`` (``rob_twin.planners.final_check``: every
sample is either measured, all pairs' distances up to the clearance horizon in one
collision pass, or proven free from the last measured state by each pair's Lipschitz
bound; a measured state within the margin is a hit, which re-plans only the offending
span at a finer edge step, shortcuts it again and retimes), ``certify``
(``rob_twin.planners.pair_certificate``: every pair's clearance between the measured states is
bounded with seed 003's envelope, reusing the check's distances; a segment whose
envelope stays inconclusive is first slowed (``slow_factor``, up to ``max_slowdowns``
per plan), else a plan that cannot be certified at the margin is repaired like a hit,
else the result is ``PlanStatus.UNCERTIFIED``: no plan is returned uncertified).

Lazy goal candidates: a streaming goal (``rob_twin.planners.goals.StreamingGoal``, e.g.
``PoseGoal``: one IK solve per candidate) gives one candidate at first; only when no
combination of the candidates so far passes the combined check does each streaming arm
give its next one (in arm order), so a free first pair costs one IK solution per arm.

Goal resampling: when no combination of the goal candidates passes the combined check
(streams spent), goals that can resample (``rob_twin.planners.goals.ResamplingGoal``, e.g.
``PoseGoal``) are asked for more candidates, up to ``max_goal_resamples`` rounds, before
GOAL_IN_COLLISION.

Repair (why it is reliable): shortcut waypoints are checked themselves (a waypoint
within the margin would make every later repair end at the same colliding state); a
repair spans from the nearest waypoint before the hit that is free to the nearest one
after it, keeps the search padding whenever the padded re-plan succeeds, and shortcuts
the re-planned span.

A goal equal to the start (every moving arm already there, within 1e-12 rad) is a
zero-length plan: one sample at t = 0, at rest, after the start is checked; nothing is
searched or timed.

Wall-time budget: ``GroupConfig.time_budget_s`` (or ``plan(..., time_budget_s=...)``)
bounds the planning wall time [s]. The search, the shortcutting, the final check and the
repairs look at the deadline as they go; past it ``plan`` returns a TIMEOUT result that
names the stage. Without a budget nothing looks at the clock, so the same seed always
gives the same plan.

Units: radians, seconds, metres.
"""

from __future__ import annotations

import itertools
import math
import numbers
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import mujoco
import numpy as np
from rob_twin.planners import collision, search
from rob_twin.planners.certificate_record import FAIL_INCONCLUSIVE
from rob_twin.planners.collision import CheckSession, Clearance, CollisionChecker, CollisionConfig
from rob_twin.planners.errors import (
    GoalInputError,
    GoalUnreachableError,
    GroupNameError,
    PlannerConfigError,
)
from rob_twin.planners.final_check import final_check
from rob_twin.planners.goals import Goal, ResamplingGoal, candidate_source
from rob_twin.planners.pair_certificate import CertificateConfig, certify_plan_timed, certify_timed
from rob_twin.planners.plan import ArmTrajectory, ClearanceRecord, Plan, PlanResult, PlanStatus
from rob_twin.planners.retime import JointLimits, TimedPath, sample_times, time_path
from rob_twin.planners.search import SearchConfig
from rob_twin.planners.timing import StageTimer


@dataclass(frozen=True)
class GroupConfig:
    """collision: margin for planning (``horizon_m`` = margin keeps checks cheapest);
    clearance_horizon_m: range [m] up to which the final check measures clearance (a longer
    range proves more samples free without a query: 4 cm by default); search: RRT-Connect
    settings; rate_hz: shared time base [Hz]; substeps: states between consecutive samples
    checked by the dense check (Cartesian plans, and the count of colliding states before a
    repair; ``plan``'s final check measures or proves free every sample and its certificate
    covers the time between); max_repairs: segment re-plans after a retimed state collides;
    repair_step_factor: edge step of a repair relative to the search's;
    velocity/acceleration/jerk: default joint limits [rad/s, rad/s^2, rad/s^3] (per-arm
    ``JointLimits`` may be given to ArmGroup instead); max_goal_combinations: candidate
    combinations tried against the combined check; max_goal_resamples: rounds of extra
    candidates asked of resampling goals when no combination is free; search_padding_m: extra
    clearance [m] the search keeps (so densely checked retimed states between its edge checks
    keep the margin); when the padded search fails, it is retried unpadded (and repairs still
    try padded first); certificate: how every returned plan is certified between its samples
    (``rob_twin.planners.pair_certificate``, seed 003: declared uncertainty, payload reach,
    bisection
    rounds); a plan that cannot be certified at the margin is repaired like a colliding one,
    else fails with ``PlanStatus.UNCERTIFIED``; time_budget_s: wall time [s] a ``plan`` call may
    take (None: no limit), overridable per call; slow_factor: a segment whose certificate stays
    inconclusive after bisection is retimed with its velocity and acceleration limits times this
    (in (0, 1)), up to max_slowdowns times per plan, before the segment is re-planned."""

    collision: CollisionConfig = field(default_factory=collision.default_config)
    clearance_horizon_m: float = 0.04
    search: SearchConfig = field(default_factory=search.default_config)
    rate_hz: float = 125.0
    substeps: int = 1
    max_repairs: int = 12
    repair_step_factor: float = 0.25
    velocity: float = 1.0
    acceleration: float = 2.5
    jerk: float = 15.0
    max_goal_combinations: int = 256
    max_goal_resamples: int = 3
    search_padding_m: float = 0.002
    certificate: CertificateConfig = field(default_factory=CertificateConfig)
    time_budget_s: float | None = None
    slow_factor: float = 0.5
    max_slowdowns: int = 3

    def __post_init__(self) -> None:
        _check_budget("time_budget_s", self.time_budget_s)
        if not (isinstance(self.slow_factor, numbers.Real) and 0.0 < self.slow_factor < 1.0):
            raise PlannerConfigError("slow_factor", self.slow_factor, "in (0, 1)")
        if (
            isinstance(self.max_slowdowns, bool)
            or not isinstance(self.max_slowdowns, numbers.Integral)
            or not 0 <= self.max_slowdowns <= 20
        ):
            raise PlannerConfigError("max_slowdowns", self.max_slowdowns, "an integer in [0, 20]")
        if not self.clearance_horizon_m >= self.collision.margin_m:
            raise PlannerConfigError(
                "clearance_horizon_m",
                self.clearance_horizon_m,
                f">= margin ({self.collision.margin_m} m)",
            )
        if not (math.isfinite(self.rate_hz) and self.rate_hz > 0):
            raise PlannerConfigError("rate_hz", self.rate_hz, "finite and > 0 Hz")
        for name in ("substeps", "max_repairs"):
            if getattr(self, name) < 0:
                raise PlannerConfigError(name, getattr(self, name), ">= 0")
        if not 0 < self.repair_step_factor <= 1:
            raise PlannerConfigError("repair_step_factor", self.repair_step_factor, "in (0, 1]")
        if self.max_goal_resamples < 0:
            raise PlannerConfigError("max_goal_resamples", self.max_goal_resamples, ">= 0")
        if self.max_goal_combinations < 1:
            raise PlannerConfigError("max_goal_combinations", self.max_goal_combinations, ">= 1")
        spec = self.certificate.spec
        floor = (
            self.collision.margin_m + 2 * spec.point_m + spec.obstacle_m + spec.query_tolerance_m
        )
        if floor >= self.clearance_horizon_m:
            raise PlannerConfigError(
                "certificate.spec",
                spec.as_dict(),
                f"margin + 2 point_m + obstacle_m + query_tolerance_m = {floor:.4g} m "
                f"< clearance_horizon_m ({self.clearance_horizon_m} m), else no pair "
                "can ever be certified",
            )


def _check_budget(field: str, value: object) -> float | None:
    """None or a finite real number of seconds > 0; PlannerConfigError otherwise."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not (math.isfinite(value) and value > 0)
    ):
        raise PlannerConfigError(field, value, "None (no limit) or a finite number of seconds > 0")
    return float(value)


def default_config() -> GroupConfig:
    """5 mm margin, clearance measured to 4 cm, 125 Hz, one sub-step, 1 rad/s, 2.5 rad/s^2,
    15 rad/s^3 on every joint (ASSUMED planning limits, well inside the OpenArm motors)."""
    return GroupConfig()


class ArmGroup:
    """Named arms over a MuJoCo model.

    model: any MjModel (not modified); arms: arm name -> joint names in chain order;
    config: ``default_config()``; limits: optional per-arm ``JointLimits``.
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        arms: Mapping[str, Sequence[str]],
        config: GroupConfig | None = None,
        limits: Mapping[str, JointLimits] | None = None,
    ):
        if config is not None and not isinstance(config, GroupConfig):
            raise PlannerConfigError("config", config, "a GroupConfig or None")
        if limits is not None and (
            not isinstance(limits, Mapping)
            or not all(isinstance(v, JointLimits) for v in limits.values())
        ):
            raise PlannerConfigError("limits", limits, "a mapping arm name -> JointLimits")
        self.config = config or default_config()
        self.model = model
        self.checker = CollisionChecker(model, arms, self.config.collision)
        measure = replace(self.config.collision, horizon_m=self.config.clearance_horizon_m)
        self.meter = CollisionChecker(model, arms, measure)
        pad = self.config.collision.margin_m + self.config.search_padding_m
        self.padded = CollisionChecker(
            model,
            arms,
            replace(
                self.config.collision,
                margin_m=pad,
                horizon_m=max(pad, self.config.collision.horizon_m),
            ),
        )
        self.arm_names = self.checker.arm_names
        self._qpos = {a: self.checker.arm_qpos[a] for a in self.arm_names}
        self._limits: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for a in self.arm_names:
            ids = [
                mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, j)
                for j in self.checker.arm_joints[a]
            ]
            lo = np.where(model.jnt_limited[ids] > 0, model.jnt_range[ids, 0], -math.pi)
            hi = np.where(model.jnt_limited[ids] > 0, model.jnt_range[ids, 1], math.pi)
            self._limits[a] = (lo.astype(float), hi.astype(float))
        self._dyn_limits: dict[str, JointLimits] = {}
        for a in self.arm_names:
            n = len(self._qpos[a])
            given = (limits or {}).get(a)
            c = self.config
            self._dyn_limits[a] = given or JointLimits.uniform(
                n, c.velocity, c.acceleration, c.jerk
            )
            if len(self._dyn_limits[a].velocity) != n:
                raise PlannerConfigError(f"limits[{a!r}]", self._dyn_limits[a], f"{n} joints")
        unknown = set(limits or {}) - set(self.arm_names)
        if unknown:
            raise GroupNameError("arm", sorted(unknown)[0], self.arm_names)
        self.reference_qpos = model.qpos0.copy()

    # ------------------------------------------------------------ commanded state
    def _arm(self, arm: str) -> str:
        if arm not in self.arm_names:
            raise GroupNameError("arm", arm, self.arm_names)
        return arm

    def joint_names(self, arm: str) -> tuple[str, ...]:
        return self.checker.arm_joints[self._arm(arm)]

    def joint_limits(self, arm: str) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) position limits [rad] of ``arm``'s joints."""
        lo, hi = self._limits[self._arm(arm)]
        return lo.copy(), hi.copy()

    def motion_limits(self, arm: str) -> JointLimits:
        return self._dyn_limits[self._arm(arm)]

    def set_qpos(self, qpos: np.ndarray) -> None:
        """Set the whole reference state (full model qpos): nq finite real numbers."""
        raw = np.asarray(qpos)
        if raw.dtype.kind not in "iuf":
            raise GoalInputError(
                "*", "qpos", qpos, f"({self.model.nq},) real numbers (got dtype {raw.dtype})"
            )
        qpos = raw.astype(float)
        if qpos.shape != (self.model.nq,):
            raise GoalInputError("*", "qpos shape", qpos.shape, f"({self.model.nq},)")
        if not np.all(np.isfinite(qpos)):
            k = int(np.flatnonzero(~np.isfinite(qpos))[0])
            raise GoalInputError("*", f"qpos[{k}]", float(qpos[k]), "a finite number")
        self.reference_qpos = qpos.copy()

    def set_arm(self, arm: str, q: Sequence[float] | np.ndarray) -> None:
        """Set ``arm``'s commanded joint positions [rad] (validated against its limits)."""
        self.reference_qpos[self._qpos[self._arm(arm)]] = self._validated(arm, q, "commanded")

    def arm_q(self, arm: str) -> np.ndarray:
        return self.reference_qpos[self._qpos[self._arm(arm)]].copy()

    def full_qpos(self, plan: Plan) -> np.ndarray:
        """(N, nq) full model states along ``plan``: the reference with the moving arms'
        samples written in (idle arms and every other joint stay bit-identical)."""
        out = np.repeat(self.reference_qpos[None, :], plan.t.size, axis=0)
        for a, traj in plan.arms.items():
            out[:, self._qpos[a]] = traj.q
        return out

    def _validated(self, arm: str, q, what: str) -> np.ndarray:
        n = len(self._qpos[arm])
        if isinstance(q, (list, tuple)) and any(isinstance(x, (bool, np.bool_)) for x in q):
            raise GoalInputError(arm, f"{what} value", q, f"{n} numbers [rad] (not bools)")
        try:
            raw = np.asarray(q)
        except (TypeError, ValueError):
            raise GoalInputError(arm, f"{what} value", q, f"{n} numbers [rad]") from None
        if raw.dtype.kind not in "iuf":  # str, bool, complex, objects: never converted
            raise GoalInputError(
                arm, f"{what} value", q, f"{n} real numbers [rad] (got dtype {raw.dtype})"
            )
        q = raw.astype(float)
        if q.shape != (n,):
            raise GoalInputError(arm, f"{what} shape", q.shape, f"({n},) joint positions [rad]")
        lo, hi = self._limits[arm]
        names = self.checker.arm_joints[arm]
        for i in range(n):
            if not math.isfinite(q[i]):
                raise GoalInputError(
                    arm, f"{what} {names[i]}", float(q[i]), "a finite number [rad]"
                )
            if not lo[i] - 1e-9 <= q[i] <= hi[i] + 1e-9:
                raise GoalInputError(
                    arm, f"{what} {names[i]}", float(q[i]), f"[{lo[i]:.4g}, {hi[i]:.4g}] rad"
                )
        return np.clip(q, lo, hi)

    # ------------------------------------------------------------------ checks
    def clearance(self, q_by_arm: Mapping[str, np.ndarray]) -> Clearance:
        """Combined clearance of the given arms at the given positions (others at the
        reference), measured up to the clearance horizon."""
        moving = tuple(a for a in self.arm_names if a in q_by_arm)
        for a in q_by_arm:
            self._arm(a)
        session = self.meter.session(moving, self.reference_qpos)
        q = np.concatenate([self._validated(a, q_by_arm[a], "configuration") for a in moving])
        return session.clearance(q)

    # -------------------------------------------------------------------- plan
    def plan(
        self, goals: Mapping[str, Goal], seed: int = 0, time_budget_s: float | None = None
    ) -> PlanResult:
        """Plan the arms named in ``goals`` to their goals from their commanded poses.

        goals: arm -> JointGoal, JointGoalSet, a joint vector, or a goal resolver (see
        ``rob_twin.planners.goals``); seed: the search's random seed, an int >= 0 (same seed, same
        plan); time_budget_s: wall time allowed [s] (default ``config.time_budget_s``; None:
        no limit). Raises GroupNameError / GoalInputError / PlannerConfigError for caller
        mistakes; planning failures (TIMEOUT included) come back as a PlanResult with a
        PlanStatus and a reason.
        """
        timer = StageTimer()
        stages = timer.stages
        if not isinstance(goals, Mapping):
            raise GoalInputError(
                "*", "goals", goals, f"a mapping arm -> goal, arms from {self.arm_names}"
            )
        if not goals:
            raise GoalInputError("*", "goals", dict(goals), f"at least one of {self.arm_names}")
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
            raise PlannerConfigError("seed", seed, "an integer >= 0")
        budget = _check_budget("time_budget_s", time_budget_s)
        budget = self.config.time_budget_s if budget is None else budget
        deadline = None if budget is None else timer.start_s + budget

        def timeout(stage: str) -> PlanResult:
            spent = timer.total()
            return PlanResult(
                PlanStatus.TIMEOUT,
                reason=(
                    f"wall-time budget {budget} s exhausted during {stage} after {spent:.4f} s"
                ),
                stage_times_s=stages,
            )

        def late() -> bool:
            return deadline is not None and time.perf_counter() > deadline

        for a in goals:
            self._arm(a)
        moving = tuple(a for a in self.arm_names if a in goals)
        start = np.concatenate([self._validated(a, self.arm_q(a), "start") for a in moving])
        unreachable = None
        with timer.stage("goals"):
            try:
                candidates = {a: self._candidates(a, goals[a]) for a in moving}
                streams = {a: candidates[a][1] for a in moving}
                candidates = {a: candidates[a][0] for a in moving}
            except GoalUnreachableError as err:
                unreachable = err
        if unreachable is not None:
            return PlanResult(
                PlanStatus.GOAL_UNREACHABLE, reason=str(unreachable), stage_times_s=stages
            )
        if late():
            return timeout("goals")
        session = self.checker.session(moving, self.reference_qpos)
        meter = self.meter.session(moving, self.reference_qpos)
        margin = self.config.collision.margin_m

        with timer.stage("goals"):
            at_start = meter.clearance(start)
            start_free = at_start.is_free(margin)
            if start_free:
                goal, failure, resamples = self._pick_goal(
                    moving, goals, candidates, meter, deadline, streams
                )
        if not start_free:
            return PlanResult(
                PlanStatus.START_IN_COLLISION,
                reason=(
                    f"start is {at_start.distance_m * 1e3:.1f} mm from collision "
                    f"(margin {margin * 1e3:.1f} mm): {at_start.pair}"
                ),
                pair=at_start.pair,
                stage_times_s=stages,
            )
        if goal is None:
            if failure is None:
                return timeout("goals")
            failure.stage_times_s.update(stages)
            return failure
        if float(np.max(np.abs(goal - start))) <= 1e-12:
            return self._zero_length(moving, start, at_start, seed, resamples, timer)
        if late():
            return timeout("goals")

        rng = np.random.default_rng(seed)
        lower = np.concatenate([self._limits[a][0] for a in moving])
        upper = np.concatenate([self._limits[a][1] for a in moving])
        with timer.stage("search"):
            padded = self.padded.session(moving, self.reference_qpos)
            found = search.rrt_connect(
                start,
                goal,
                lower,
                upper,
                padded.is_free,
                rng,
                self.config.search,
                deadline_s=deadline,
            )
            plain = session
            if found.path is None and not found.timed_out:
                found = search.rrt_connect(
                    start,
                    goal,
                    lower,
                    upper,
                    session.is_free,
                    rng,
                    self.config.search,
                    deadline_s=deadline,
                )
            elif found.path is not None:
                session = padded
        if found.timed_out:
            return timeout("search")
        if found.path is None:
            return PlanResult(PlanStatus.NO_PATH, reason=found.reason, stage_times_s=stages)
        with timer.stage("shortcut"):
            path = search.shortcut(
                found.path,
                session.is_free,
                rng,
                self.config.search.shortcut_rounds,
                self.config.search.edge_step_rad,
                deadline_s=deadline,
                min_gain=self.config.search.shortcut_min_gain,
            )
        if late():
            return timeout("shortcut")

        limits = JointLimits.stack([self._dyn_limits[a] for a in moving])
        stages["retime"] = stages["check"] = 0.0
        repairs = before = uncertified = slowdowns = 0
        timed = None
        while True:
            if timed is None:
                with timer.stage("retime"):
                    timed = time_path(path, limits)
            with timer.stage("check"):
                fc = final_check(self, moving, timed, meter, deadline)
            if fc.measured < 0:
                return timeout("check")
            hit, record, checked = fc.hit, fc.record, fc.measured
            if hit is None:
                with timer.stage("certify"):
                    cert = certify_timed(
                        self,
                        moving,
                        timed,
                        self.config.certificate,
                        initial=fc.initial,
                        sampled=fc.sampled[:3],
                        session=meter,
                    )
                if cert.certified:
                    cert = replace(cert, uncertified_attempts=uncertified)
                    break
                uncertified += 1
                if (
                    cert.fail_kind == FAIL_INCONCLUSIVE
                    and slowdowns < self.config.max_slowdowns
                    and cert.fail_time_s is not None
                ):  # a tighter speed bound may certify it: slow the segment, keep the path
                    with timer.stage("retime"):
                        k = int(timed.segment_of(np.array([cert.fail_time_s]))[0])
                        timed = timed.slowed(k, self.config.slow_factor)
                    slowdowns += 1
                    continue
                if repairs >= self.config.max_repairs:
                    return PlanResult(
                        PlanStatus.UNCERTIFIED,
                        reason=(
                            f"not certified ({cert.fail_kind}) after {repairs} segment repairs "
                            f"and {slowdowns} slowdowns: {cert.failure}"
                        ),
                        stage_times_s=stages,
                    )
                hit = (cert.fail_time_s, Clearance(cert.certified_min_m, None))
            if repairs == 0:
                before = self._count_colliding(timed, plain, deadline)
                if before < 0:
                    return timeout("check")
            if repairs >= self.config.max_repairs:
                return PlanResult(
                    PlanStatus.CHECK_FAILED,
                    reason=(
                        f"retimed state at t={hit[0]:.3f} s still collides after {repairs} "
                        f"segment repairs: {hit[1]}"
                    ),
                    pair=hit[1].pair,
                    stage_times_s=stages,
                )
            with timer.stage("search"):
                path = self._repair(
                    timed, hit[0], (padded, plain), meter, rng, (lower, upper), deadline
                )
            if late():
                return timeout("repair")
            repairs += 1
            timed = None
            if path is None:
                status = PlanStatus.CHECK_FAILED if hit[1].pair else PlanStatus.UNCERTIFIED
                return PlanResult(
                    status,
                    reason=(
                        f"retimed state at t={hit[0]:.3f} s collides or is not certified "
                        f"({hit[1]}) and its segment could not be re-planned"
                    ),
                    pair=hit[1].pair,
                    stage_times_s=stages,
                )

        times, q, qd, qdd = fc.sampled  # the final check evaluated the path at the samples
        arms, col = {}, 0
        for a in moving:
            n = len(self._qpos[a])
            arms[a] = ArmTrajectory(
                a,
                self.checker.arm_joints[a],
                q[:, col : col + n],
                qd[:, col : col + n],
                qdd[:, col : col + n],
            )
            col += n
        plan = Plan(
            t=times,
            rate_hz=self.config.rate_hz,
            arms=arms,
            waypoints=timed.waypoints,
            min_clearance=record,
            stage_times_s=stages,
            checked_states=checked,
            repairs=repairs,
            seed=seed,
            goal_resamples=resamples,
            colliding_before_repair=before,
            certificate=cert,
            proven_samples=fc.proven,
            slowdowns=slowdowns,
        )
        timer.total()
        return PlanResult(PlanStatus.SUCCESS, plan=plan, stage_times_s=stages)

    # ---------------------------------------------------------------- helpers
    def _zero_length(
        self,
        moving,
        start: np.ndarray,
        at_start: Clearance,
        seed: int,
        resamples: int,
        timer: StageTimer,
    ) -> PlanResult:
        """The plan of a goal equal to the start: one sample at t = 0, at rest."""
        arms, col = {}, 0
        for a in moving:
            n = len(self._qpos[a])
            q = start[None, col : col + n].copy()
            arms[a] = ArmTrajectory(
                a, self.checker.arm_joints[a], q, np.zeros_like(q), np.zeros_like(q)
            )
            col += n
        horizon = self.config.clearance_horizon_m
        record = (
            ClearanceRecord(horizon, None, None, True)
            if at_start.pair is None
            else ClearanceRecord(at_start.distance_m, 0.0, at_start.pair, False)
        )
        plan = Plan(
            t=np.zeros(1),
            rate_hz=self.config.rate_hz,
            arms=arms,
            waypoints=start[None, :].copy(),
            min_clearance=record,
            stage_times_s=timer.stages,
            checked_states=1,
            repairs=0,
            seed=seed,
            goal_resamples=resamples,
            colliding_before_repair=0,
        )
        with timer.stage("certify"):  # every plan carries its certificate, a still one too
            plan = replace(
                plan, certificate=certify_plan_timed(self, plan, None, self.config.certificate)
            )
        timer.total()
        return PlanResult(PlanStatus.SUCCESS, plan=plan, stage_times_s=timer.stages)

    def _candidates(self, arm: str, goal: Goal):
        """(validated first candidates, stream of further raw ones or None) of ``goal``."""
        raw, stream = candidate_source(goal, self, arm, self.arm_q(arm))
        if not raw:
            raise GoalInputError(arm, "goal", goal, "at least one candidate joint vector")
        return [self._validated(arm, c, "goal") for c in raw], stream

    def _pick_goal(
        self,
        moving,
        goals,
        candidates,
        meter: CheckSession,
        deadline: float | None = None,
        streams: Mapping | None = None,
    ):
        """First combination of candidates (in preference order) that is free; when none
        is, each arm with a stream (``streams``: arm -> iterator or None) adds its next
        candidate, and once every stream is spent resampling goals are asked for more
        candidates (``max_goal_resamples`` rounds). Returns (goal or None, failure or
        None, resample rounds used); (None, None, n) when ``deadline``
        (``time.perf_counter()``) passed first."""
        first: Clearance | None = None
        lists = {a: list(candidates[a]) for a in moving}
        live = {a: s for a, s in (streams or {}).items() if s is not None}
        tried: set[tuple[int, ...]] = set()
        margin = self.config.collision.margin_m
        resamples = 0
        while True:
            for combo in itertools.product(*(range(len(lists[a])) for a in moving)):
                if combo in tried or len(tried) >= self.config.max_goal_combinations:
                    continue
                if deadline is not None and time.perf_counter() > deadline:
                    return None, None, resamples
                tried.add(combo)
                q = np.concatenate([lists[a][k] for a, k in zip(moving, combo, strict=True)])
                c = meter.clearance(q)
                if c.is_free(margin):
                    return q, None, resamples
                first = first or c
            if len(tried) >= self.config.max_goal_combinations:
                break
            if self._grow_from_streams(moving, lists, live):
                continue
            if resamples >= self.config.max_goal_resamples:
                break
            grew = False
            for a in moving:
                if isinstance(goals[a], ResamplingGoal):
                    more = goals[a].more_candidates(self, a, self.arm_q(a), list(lists[a]))
                    lists[a].extend(self._validated(a, c, "goal") for c in more)
                    grew = grew or len(more) > 0
            if not grew:
                break
            resamples += 1
        n = len(tried)
        return (
            None,
            PlanResult(
                PlanStatus.GOAL_IN_COLLISION,
                reason=(
                    f"{'every' if n > 1 else 'the'} goal combination ({n} tried, "
                    f"{resamples} resample rounds) is within {margin * 1e3:.1f} mm of "
                    f"collision; first: {first.pair} at "
                    f"{first.distance_m * 1e3:.1f} mm"
                ),
                pair=first.pair,
            ),
            resamples,
        )

    def _grow_from_streams(self, moving, lists, live) -> bool:
        """Append each live stream's next candidate (validated) to its arm's list; drop
        spent streams. True when any list grew."""
        grew = False
        for a in moving:
            if a not in live:
                continue
            nxt = next(live[a], None)
            if nxt is None:
                del live[a]
            else:
                lists[a].append(self._validated(a, nxt, "goal"))
                grew = True
        return grew

    def _check_timed(
        self,
        timed: TimedPath,
        meter: CheckSession,
        deadline: float | None = None,
    ):
        """Check samples and sub-steps in time order (the Cartesian planner's check); return
        (hit or None, clearance record, states checked). A hit is (time, Clearance). States
        checked is -1 when ``deadline`` (``time.perf_counter()``) passed first (looked at
        every 32 states)."""
        dense = self._dense_times(timed.duration)
        q, _, _ = timed.evaluate(dense)
        best, best_t = Clearance(math.inf, None), None
        for lo in range(0, dense.size, 32):
            if deadline is not None and time.perf_counter() > deadline:
                return None, None, -1
            hit_i, best_i, c = meter.sweep(q[lo : lo + 32])
            if hit_i >= 0:
                return (float(dense[lo + hit_i]), c), None, lo + hit_i + 1
            if best_i >= 0 and c.distance_m < best.distance_m:
                best, best_t = c, float(dense[lo + best_i])
        horizon = self.config.clearance_horizon_m
        if best.pair is None:
            record = ClearanceRecord(horizon, None, None, True)
        else:
            record = ClearanceRecord(best.distance_m, best_t, best.pair, False)
        return None, record, dense.size

    def _count_colliding(
        self, timed: TimedPath, session: CheckSession, deadline: float | None = None
    ) -> int:
        """Retimed states (samples and sub-steps) of ``timed`` within the margin, counted
        with ``session`` (a margin check: the plain checker's is the cheapest); -1 when
        ``deadline`` (``time.perf_counter()``) passed first (looked at every 32 states)."""
        q, _, _ = timed.evaluate(self._dense_times(timed.duration))
        n = 0
        for i, row in enumerate(q):
            if deadline is not None and i % 32 == 0 and time.perf_counter() > deadline:
                return -1
            n += not session.is_free(row)
        return n

    def _dense_times(self, duration: float) -> np.ndarray:
        times = sample_times(duration, self.config.rate_hz)
        k = self.config.substeps + 1
        dense = (times[:-1, None] + np.arange(k)[None, :] / (k * self.config.rate_hz)).ravel()
        return np.append(dense, times[-1])

    def _repair(
        self,
        timed: TimedPath,
        t_hit: float,
        sessions,
        meter: CheckSession,
        rng,
        box,
        deadline: float | None = None,
    ):
        """Re-plan the span around the segment that holds ``t_hit`` at a finer edge step.

        The span runs from the nearest waypoint at or before the segment that is free at the
        margin to the nearest such waypoint at or after it (the ends of the path are free:
        checked before the search). The padded session is tried first, then the plain
        one; the re-planned span is shortcut with the session that found it.
        """
        margin = self.config.collision.margin_m
        pts = list(timed.waypoints)
        k = int(timed.segment_of(np.array([t_hit]))[0])
        lo, hi = k, k + 1
        while lo > 0 and not meter.clearance(pts[lo]).is_free(margin):
            lo -= 1
        while hi < len(pts) - 1 and not meter.clearance(pts[hi]).is_free(margin):
            hi += 1
        step = self.config.search.edge_step_rad * self.config.repair_step_factor
        fine = replace(self.config.search, edge_step_rad=step)
        for session in sessions:
            found = search.rrt_connect(
                pts[lo],
                pts[hi],
                box[0],
                box[1],
                session.is_free,
                rng,
                fine,
                try_direct=False,
                deadline_s=deadline,
            )
            if found.path is not None:
                span = search.shortcut(
                    found.path,
                    session.is_free,
                    rng,
                    self.config.search.shortcut_rounds // 2,
                    step,
                    deadline_s=deadline,
                    min_gain=self.config.search.shortcut_min_gain,
                )
                return pts[:lo] + span + pts[hi + 1 :]
            if found.timed_out:
                return None
        return None
