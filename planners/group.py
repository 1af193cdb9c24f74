"""ArmGroup: plan any subset of named arms together over any MuJoCo model.

The group knows each arm only by its joint names: nothing here is ROB-specific. A request
``plan({arm: goal, ...})`` moves exactly the named arms; every other joint (idle arms,
torso, head, base, objects) stays at the group's *reference* state (the current commanded
pose, ``set_arm``/``set_qpos``) and is an obstacle. The plan holds trajectories of the
moving arms only; a one-arm request is a one-arm group.

Stages (wall time of each in ``Plan.stage_times_s``): ``goals`` (candidates and the combined
check: ``rob_twin.planners.goal_select``), ``search`` (RRT-Connect in the stacked joint
space), ``shortcut``, then the refine stage (``rob_twin.planners.refine``): ``retime``
(jerk-limited time law, 125 Hz samples), ``check`` (every sample measured or proven free),
``certify`` (every pair's clearance bounded between the samples), with slowdowns and segment
repairs until the plan is certified.

A goal equal to the start (every moving arm already there, within 1e-12 rad) is a
zero-length plan: one sample at t = 0, at rest, after the start is checked; nothing is
searched or timed.

Wall-time budget: ``GroupConfig.time_budget_s`` (or ``plan(..., time_budget_s=...)``)
bounds the planning wall time [s]. The search, the shortcutting, the final check and the
repairs look at the deadline as they go; past it ``plan`` returns a TIMEOUT result that
names the stage. With a budget the unpadded search runs until the deadline (its round
count, ``SearchConfig.budgeted_max_iterations``, is only a safety net) instead of stopping
after ``SearchConfig.max_iterations``; the padded search before it always gets
``max_iterations`` rounds, so a plan that finishes in time is the same for a seed whatever
the clock. Without a budget nothing looks at the clock, so the same seed always gives the
same plan.

Settings: ``rob_twin.planners.group_config``. Units: radians, seconds, metres.
"""

from __future__ import annotations

import itertools
import math
import numbers
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Protocol

import mujoco
import numpy as np
from rob_twin.controllers.execution_report import START_TOLERANCE_RAD
from rob_twin.models.loading import model_arm_joints
from rob_twin.models.names import Arm
from rob_twin.planners import search, weak_judge
from rob_twin.planners.collision import CheckSession, Clearance, CollisionChecker
from rob_twin.planners.errors import (
    GoalInputError,
    GroupNameError,
    PlannerConfigError,
    StartMismatchError,
)
from rob_twin.planners.goal_select import pick_goal, resolve_candidates
from rob_twin.planners.goals import Goal
from rob_twin.planners.group_config import GroupConfig, _check_budget, default_config
from rob_twin.planners.pair_certificate import certify_plan_timed
from rob_twin.planners.plan import ArmTrajectory, ClearanceRecord, Plan, PlanResult, PlanStatus
from rob_twin.planners.refine import Refined, refine
from rob_twin.planners.retime import JointLimits, TimedPath, sample_times
from rob_twin.planners.timing import PlanClock, StageTimer

__all__ = ["ArmGroup", "GroupConfig", "RunningLoop", "default_config"]


class LoopTwin(Protocol):
    """The simulated body a running loop drives: its MjModel and MjData."""

    model: mujoco.MjModel
    data: mujoco.MjData


class RunningLoop(Protocol):
    """What ``ArmGroup.for_loop`` reads of a running closed loop (duck typed: the planners
    never import the twin; ``rob_twin.twin.sim.closed_loop.ClosedLoop`` and its Damiao variant
    satisfy it). ``twin.model``: the model planned over; ``twin.data.qpos``: the full simulated
    state (torso, head, base, objects: the obstacles); ``commanded(arm)``: the arm owner's last
    published commanded positions [rad], where an execution starts from."""

    @property
    def twin(self) -> LoopTwin: ...

    def commanded(self, arm: str) -> np.ndarray: ...


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
        if self.checker.weak_pairs:  # their judge's compiled pre-check, loaded once
            weak_judge.warm_kernel()
        self.arm_names = self.checker.arm_names
        self._arm_set = frozenset(self.arm_names)
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
        self._loop: RunningLoop | None = None
        self.start_tolerance_rad = START_TOLERANCE_RAD

    @classmethod
    def for_loop(
        cls,
        loop: RunningLoop,
        config: GroupConfig | None = None,
        limits: Mapping[str, JointLimits] | None = None,
        arms: Mapping[str, Sequence[str]] | None = None,
        start_tolerance_rad: float = START_TOLERANCE_RAD,
    ) -> ArmGroup:
        """A group over ``loop.twin.model`` that plans from the loop's owners.

        Every ``plan`` first takes the reference state from the loop (``sync_to_loop``: the
        full simulated state, each arm at its owner's commanded positions), so a plan starts
        where an execution through the owners will; an explicit ``plan(..., start=...)`` that
        differs from the owners' commanded state by more than ``start_tolerance_rad`` [rad]
        (default: the executor's ``start_tolerance_rad``) raises StartMismatchError when
        planning. loop: any object with ``twin.model``, ``twin.data.qpos`` and
        ``commanded(arm)`` (``RunningLoop``); arms: default ROB's two arms
        (``rob_twin.models.names.group_arms()``); config, limits: as for ``ArmGroup``.
        """
        if not (math.isfinite(start_tolerance_rad) and start_tolerance_rad > 0):
            raise PlannerConfigError(
                "start_tolerance_rad", start_tolerance_rad, "finite and > 0 rad"
            )
        model = loop.twin.model
        if arms is None:
            arms = {a.value: list(model_arm_joints(model, a)) for a in Arm}
        group = cls(model, arms, config, limits)
        group._loop = loop
        group.start_tolerance_rad = float(start_tolerance_rad)
        group.sync_to_loop()
        return group

    @property
    def loop(self) -> RunningLoop | None:
        """The running loop the group plans from (``for_loop``), else None."""
        return self._loop

    def sync_to_loop(self) -> None:
        """Reference state := the loop's full simulated state with every arm at its owner's
        commanded positions (what scenario plan steps take); only for a ``for_loop`` group."""
        if self._loop is None:
            raise PlannerConfigError("loop", None, "a group made by ArmGroup.for_loop")
        self.set_qpos(self._loop.twin.data.qpos.copy())
        for a in self.arm_names:
            self.set_arm(a, self._loop.commanded(a))

    # ------------------------------------------------------------ commanded state
    def _arm(self, arm: str) -> str:
        """The group's own name (a plain str) of ``arm``: a name or a str-valued enum member
        such as ``rob_twin.models.names.Arm``; GroupNameError for any other."""
        if type(arm) is str and arm in self._arm_set:  # the usual case, without enum equality
            return arm
        if arm not in self.arm_names:
            raise GroupNameError("arm", arm, self.arm_names)
        return self.arm_names[self.arm_names.index(arm)]

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
        self.reference_qpos = self._validated_qpos(qpos)

    def _validated_qpos(self, qpos) -> np.ndarray:
        """A copy of ``qpos`` as nq finite floats; GoalInputError otherwise."""
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
        return qpos.copy()

    def set_arm(self, arm: str, q: Sequence[float] | np.ndarray) -> None:
        """Set ``arm``'s commanded joint positions [rad] (validated against its limits)."""
        arm = self._arm(arm)  # named first: an unknown name is a GroupNameError, not a KeyError
        self.reference_qpos[self._qpos[arm]] = self._validated(arm, q, "commanded")

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
        self,
        goals: Mapping[str, Goal],
        seed: int = 0,
        time_budget_s: float | None = None,
        start: Mapping[str, Sequence[float] | np.ndarray] | np.ndarray | None = None,
    ) -> PlanResult:
        """Plan the arms named in ``goals`` to their goals from the start state.

        goals: arm -> JointGoal, JointGoalSet, a joint vector, or a goal resolver (see
        ``rob_twin.planners.goals``); seed: the search's random seed, an int >= 0 (same seed, same
        plan); time_budget_s: wall time allowed [s] (default ``config.time_budget_s``; None:
        no limit); start: where the plan starts, written into the reference state before
        planning (as ``set_arm``/``set_qpos`` would, so ``full_qpos`` and later plans see it):
        arm -> joint vector [rad] (arms not named keep theirs) or a full model qpos. Without
        ``start`` a plan starts at the reference state: the loop's owners' commanded state
        for a ``for_loop`` group, else what ``set_arm``/``set_qpos`` set, else the model's
        ``qpos0`` (not where a running robot is). Raises GroupNameError / GoalInputError /
        PlannerConfigError for caller mistakes and StartMismatchError for a start a
        ``for_loop`` group's owners are not at; planning failures (TIMEOUT included) come
        back as a PlanResult with a PlanStatus and a reason.
        """
        moving, clock = self._begin(goals, seed, time_budget_s)
        self._take_start(start)
        start = np.concatenate([self._validated(a, self.arm_q(a), "start") for a in moving])
        resolved = resolve_candidates(self, moving, goals, clock.timer)
        if isinstance(resolved, PlanResult):
            return resolved
        if clock.late():
            return clock.timeout("goals")
        plain = self.checker.session(moving, self.reference_qpos)
        meter = self.meter.session(moving, self.reference_qpos)
        picked = self._select_goal(moving, goals, start, resolved, meter, clock)
        if isinstance(picked, PlanResult):
            return picked
        goal, at_start, resamples = picked
        if float(np.max(np.abs(goal - start))) <= 1e-12:
            return self._zero_length(moving, start, at_start, seed, resamples, clock.timer)
        if clock.late():
            return clock.timeout("goals")
        rng = np.random.default_rng(seed)
        box = self._box(moving)
        searched = self._search(moving, start, goal, box, plain, rng, clock)
        if isinstance(searched, PlanResult):
            return searched
        path, session, padded = searched
        path = self._shortcut(path, session, rng, clock)
        if path is None:
            return clock.timeout("shortcut")
        refined = refine(self, moving, path, (padded, plain, meter), rng, box, clock)
        if isinstance(refined, PlanResult):
            return refined
        return self._success(moving, refined, seed, resamples, clock.timer)

    # ------------------------------------------------------------------ plan steps
    def _begin(
        self, goals: Mapping[str, Goal], seed: int, time_budget_s: float | None
    ) -> tuple[tuple[str, ...], PlanClock]:
        """Validate the request; return the moving arms (in group order) and the clock."""
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
        for a in goals:
            self._arm(a)
        return tuple(a for a in self.arm_names if a in goals), PlanClock(budget)

    def _take_start(self, start) -> None:
        """Reference state := the loop's (``for_loop`` groups), then ``start`` written in,
        after it is validated (and, for a ``for_loop`` group, held against the owners'
        commanded state within ``start_tolerance_rad``)."""
        if self._loop is not None:
            self.sync_to_loop()
        if start is None:
            return
        if isinstance(start, Mapping):
            ref, named = self.reference_qpos.copy(), [self._arm(key) for key in start]
            for a, q in zip(named, start.values(), strict=True):
                ref[self._qpos[a]] = self._validated(a, q, "start")
        elif isinstance(start, (np.ndarray, list, tuple)):
            ref = self._validated_qpos(start)
            named = list(self.arm_names)
        else:
            raise GoalInputError(
                "*", "start", start, f"a mapping arm -> joint vector or a ({self.model.nq},) qpos"
            )
        if self._loop is not None:
            for a in named:
                q, commanded = ref[self._qpos[a]], self.arm_q(a)
                err = np.abs(q - commanded)
                j = int(np.argmax(err))
                if not err[j] <= self.start_tolerance_rad:
                    raise StartMismatchError(
                        a,
                        self.checker.arm_joints[a][j],
                        float(q[j]),
                        float(commanded[j]),
                        self.start_tolerance_rad,
                    )
        self.reference_qpos = ref

    def _select_goal(self, moving, goals, start, resolved, meter: CheckSession, clock: PlanClock):
        """(goal, clearance at the start, resample rounds), or the START_IN_COLLISION /
        GOAL_IN_COLLISION / TIMEOUT result (stage ``goals``)."""
        candidates, streams = resolved
        margin = self.config.collision.margin_m
        with clock.timer.stage("goals"):
            at_start = meter.clearance(start)
            start_free = at_start.is_free(margin)
            if start_free:
                goal, failure, resamples = pick_goal(
                    self, moving, goals, candidates, meter, clock.deadline, streams
                )
        if not start_free:
            return PlanResult(
                PlanStatus.START_IN_COLLISION,
                reason=(
                    f"start is {at_start.distance_m * 1e3:.1f} mm from collision "
                    f"(margin {margin * 1e3:.1f} mm): {at_start.pair}"
                ),
                pair=at_start.pair,
                stage_times_s=clock.stages,
            )
        if goal is None:
            if failure is None:
                return clock.timeout("goals")
            failure.stage_times_s.update(clock.stages)
            return failure
        return goal, at_start, resamples

    def _box(self, moving) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) position limits [rad] of the stacked moving arms."""
        lower = np.concatenate([self._limits[a][0] for a in moving])
        upper = np.concatenate([self._limits[a][1] for a in moving])
        return lower, upper

    def _search(self, moving, start, goal, box, plain: CheckSession, rng, clock: PlanClock):
        """RRT-Connect from ``start`` to ``goal`` (stage ``search``), padded first, then
        plain when the padded search fails. Returns (path, the session that found it, the
        padded session), or the NO_PATH / TIMEOUT result.

        The padded search always gets ``search.max_iterations`` rounds, so where the plain
        one takes over does not depend on the clock (same seed, same plan). With two or
        more moving arms, after its first ``search.arms_in_turn_after`` rounds the arms
        are searched one at a time (``_search_in_turn``), and only when that finds nothing
        does the padded search go on with new trees for the rest of its rounds. With a
        wall-time budget the plain search then runs until the deadline (``search.
        budgeted_max_iterations`` only as a safety net), else ``search.max_iterations``."""
        cfg = self.config.search
        budgeted = clock.deadline is not None
        rounds = cfg.budgeted_max_iterations if budgeted else cfg.max_iterations
        in_turn = cfg.arms_in_turn_rounds > 0 and len(moving) > 1
        first = min(cfg.arms_in_turn_after, cfg.max_iterations) if in_turn else None
        with clock.timer.stage("search"):
            padded = self.padded.session(moving, self.reference_qpos)
            session = plain

            def together(check: CheckSession, max_rounds: int | None):
                return search.rrt_connect(
                    start,
                    goal,
                    box[0],
                    box[1],
                    check.is_free,
                    rng,
                    cfg,
                    deadline_s=clock.deadline,
                    prove_free=self._proof(check),
                    max_iterations=max_rounds,
                )

            if first == 0:  # arms in turn first
                found = search.SearchResult(None, 0, 2, "arms in turn first")
            else:
                found = together(padded, first)
            if in_turn and found.path is None and not found.timed_out:
                turns = self._search_in_turn(moving, start, goal, box, padded, rng, clock)
                if turns is not None:
                    return turns, padded, padded
                if clock.late():
                    found = search.SearchResult(None, 0, 0, "deadline", timed_out=True)
                elif cfg.max_iterations > first:
                    found = together(padded, cfg.max_iterations - first)
            if found.path is None and not found.timed_out:
                found = together(plain, rounds)
            elif found.path is not None:
                session = padded
        if found.timed_out:
            return clock.timeout("search")
        if found.path is None:
            return PlanResult(PlanStatus.NO_PATH, reason=found.reason, stage_times_s=clock.stages)
        return found.path, session, padded

    def columns(self, moving) -> dict[str, slice]:
        """Each of ``moving``'s arms: its columns in a stacked configuration of ``moving``."""
        out, col = {}, 0
        for a in moving:
            n = len(self._qpos[a])
            out[a] = slice(col, col + n)
            col += n
        return out

    def _search_in_turn(self, moving, start, goal, box, padded: CheckSession, rng, clock):
        """A stacked path that moves one arm at a time (``SearchConfig.
        arms_in_turn_rounds``), trying the orders of ``moving`` in turn; None when no order
        finds one (or the deadline passed). Each arm's search uses the padded checker with
        only that arm moving and the others at their start (before their turn) or goal
        (after): the states of the stacked path are exactly those states."""
        cfg = self.config.search
        spans = self.columns(moving)
        for order in itertools.permutations(moving):
            stacked = start.copy()
            path = [stacked.copy()]
            for a in order:
                if np.array_equal(stacked[spans[a]], goal[spans[a]]):
                    continue  # this arm does not move
                session = self.padded.session((a,), padded.full_qpos(stacked))
                found = search.rrt_connect(
                    stacked[spans[a]],
                    goal[spans[a]],
                    box[0][spans[a]],
                    box[1][spans[a]],
                    session.is_free,
                    rng,
                    cfg,
                    deadline_s=clock.deadline,
                    prove_free=self._proof(session),
                    max_iterations=cfg.arms_in_turn_rounds,
                )
                if found.path is None:
                    break
                for q in found.path[1:]:
                    stacked = stacked.copy()
                    stacked[spans[a]] = q
                    path.append(stacked)
            else:
                return path
            if clock.late():
                return None
        return None

    def _shortcut(self, path, session: CheckSession, rng, clock: PlanClock):
        """The path shortcut with ``session`` (stage ``shortcut``); None when the deadline
        passed."""
        with clock.timer.stage("shortcut"):
            path = search.shortcut(
                path,
                session.is_free,
                rng,
                self.config.search.shortcut_rounds,
                self.config.search.edge_step_rad,
                deadline_s=clock.deadline,
                min_gain=self.config.search.shortcut_min_gain,
                drop_first=self.config.search.shortcut_drop_first,
                prove_free=self._proof(session),
            )
        return None if clock.late() else path

    def _proof(self, session: CheckSession):
        """The session's batch proof of free states for the search and the shortcutting
        (``CheckSession.prove_free``) when ``config.free_filter``, else None."""
        return session.prove_free if self.config.free_filter else None

    def _success(
        self, moving, refined: Refined, seed: int, resamples: int, timer: StageTimer
    ) -> PlanResult:
        """The SUCCESS result of a certified plan (samples as the final check evaluated them)."""
        fc = refined.check
        times, q, qd, qdd = fc.sampled  # the final check evaluated the path at the samples
        arms = {
            a: ArmTrajectory(a, self.checker.arm_joints[a], q[:, c], qd[:, c], qdd[:, c])
            for a, c in self.columns(moving).items()
        }
        plan = Plan(
            t=times,
            rate_hz=self.config.rate_hz,
            arms=arms,
            waypoints=refined.timed.waypoints,
            min_clearance=fc.record,
            stage_times_s=timer.stages,
            checked_states=fc.measured,
            repairs=refined.repairs,
            seed=seed,
            goal_resamples=resamples,
            colliding_before_repair=refined.colliding_before_repair,
            certificate=refined.certificate,
            proven_samples=fc.proven,
            slowdowns=refined.slowdowns,
        )
        timer.total()
        return PlanResult(PlanStatus.SUCCESS, plan=plan, stage_times_s=timer.stages)

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
        arms = {}
        for a, c in self.columns(moving).items():
            q = start[None, c].copy()
            arms[a] = ArmTrajectory(
                a, self.checker.arm_joints[a], q, np.zeros_like(q), np.zeros_like(q)
            )
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

    # ---------------------------------------------------------------- dense check
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

    def _dense_times(self, duration: float) -> np.ndarray:
        times = sample_times(duration, self.config.rate_hz)
        k = self.config.substeps + 1
        dense = (times[:-1, None] + np.arange(k)[None, :] / (k * self.config.rate_hz)).ravel()
        return np.append(dense, times[-1])
