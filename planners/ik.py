"""IK for a TCP pose that a user can trust: restarts, goal sets, seeded and continuity modes.

Every solution is re-checked against the true FK before it is returned: position error
<= ``position_tolerance_m`` [m], orientation error <= ``orientation_tolerance_rad`` [rad],
every joint inside its limits. Anything else is a failed ``IKResult`` with a status that
says why (never an exception for a pose the arm cannot reach, never a wrong pose).

Modes:

- ``solve(target, torso, seed=None, n_solutions=1)``: the seed (the current commanded
  configuration) is tried first, then a slightly nudged seed (an exact singular seed such
  as a straight elbow can leave the error orthogonal to every column of the Jacobian;
  seed 002's fix for the analytical solver is the same idea: solve a hair-perturbed
  problem, refine against the true FK), then random restarts in the joint limits.
  ``n_solutions > 1`` keeps restarting until that many solutions at least
  ``distinct_min_rad`` apart (max-norm) exist: a goal set for the planner. Solutions are
  sorted by distance to the seed when one is given.
- ``solve_continuous(target, seed, torso)``: for streaming (teleop, Cartesian paths).
  Only local solves from the seed, directly and then along a straight SE3 path from the
  seed's pose to the target in 4 and 16 sub-steps (a homotopy that stays on the seed's
  branch). Success needs every joint within ``max_joint_step_rad`` of the seed;
  otherwise the status is JOINT_JUMP (a branch flip is refused, not returned).
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin
from rob_twin.planners.errors import PlannerConfigError
from rob_twin.planners.kinematics import (
    TORSO_INDEX,
    ArmKinematics,
    joint_vector,
    torso_angle,
)
from rob_twin.planners.lm import LMSettings, LocalResult, solve_local
from rob_twin.planners.pose import as_pose, pose_error


@dataclass(frozen=True)
class IKConfig:
    """Acceptance tolerances and search budget of the IK solver.

    position_tolerance_m [m], orientation_tolerance_rad [rad]: final FK check;
    max_attempts: local solves per ``solve`` call (seed, nudged seed, random restarts);
    distinct_min_rad: two solutions are distinct when some joint differs by more [rad];
    max_joint_step_rad: continuity mode's default bound on |q - seed| per joint [rad];
    continuity_substeps: SE3 sub-step counts tried in turn by ``solve_continuous``;
    nudge_rad: size of the deterministic nudge of an exact seed towards mid-range [rad];
    rng_seed: seed of the solver's random restarts (reproducible runs); lm: local solve;
    seed_table_size: joint vectors (seeded, uniform within the limits, shared by solvers of
    the same arm) whose TCP poses in the torso frame are tabled; table_seeds: how many of
    the tabled vectors nearest the target (position [m] plus ``TABLE_ROTATION_WEIGHT_M``
    x rotation-matrix difference) start the local solves of an unseeded ``solve`` before
    the random restarts (0: random restarts only).
    """

    position_tolerance_m: float = 1e-6
    orientation_tolerance_rad: float = 1e-6
    max_attempts: int = 60
    distinct_min_rad: float = 0.1
    max_joint_step_rad: float = 0.25
    continuity_substeps: tuple[int, ...] = (1, 4, 16)
    nudge_rad: float = 1e-3
    rng_seed: int = 0
    lm: LMSettings = field(default_factory=LMSettings)
    seed_table_size: int = 4096
    table_seeds: int = 4

    def __post_init__(self) -> None:
        for name in ("seed_table_size", "table_seeds"):
            if getattr(self, name) < 0:
                raise PlannerConfigError(name, getattr(self, name), ">= 0")
        for name in ("position_tolerance_m", "orientation_tolerance_rad"):
            if not 0.0 < getattr(self, name) <= 1e-2:
                raise PlannerConfigError(name, getattr(self, name), "0 < tolerance <= 1e-2")
        if self.max_attempts < 1:
            raise PlannerConfigError("max_attempts", self.max_attempts, ">= 1")
        if not self.distinct_min_rad > 0.0:
            raise PlannerConfigError("distinct_min_rad", self.distinct_min_rad, "> 0 rad")
        if not self.max_joint_step_rad > 0.0:
            raise PlannerConfigError("max_joint_step_rad", self.max_joint_step_rad, "> 0 rad")
        if not self.continuity_substeps or min(self.continuity_substeps) < 1:
            raise PlannerConfigError("continuity_substeps", self.continuity_substeps, "counts >= 1")
        if not 0.0 < self.nudge_rad < 0.1:
            raise PlannerConfigError("nudge_rad", self.nudge_rad, "0 < nudge < 0.1 rad")


def default_config() -> IKConfig:
    """1e-6 m / 1e-6 rad acceptance, 60 attempts, 0.25 rad continuity bound."""
    return IKConfig()


class IKStatus(enum.Enum):
    SOLVED = "solved"
    UNREACHABLE = "unreachable"  # farther from the shoulder than the arm can reach at all
    NOT_CONVERGED = "not_converged"  # no attempt met the tolerances inside the joint limits
    JOINT_JUMP = "joint_jump"  # continuity: only solutions beyond the joint-step bound


@dataclass(frozen=True)
class IKSolution:
    """One verified solution: q [rad], its FK errors [m], [rad], and |q - seed|_inf [rad]."""

    q: np.ndarray
    position_error_m: float
    orientation_error_rad: float
    max_joint_step_rad: float | None = None


@dataclass(frozen=True)
class IKResult:
    """What a solve returns: a status, verified solutions (empty unless SOLVED), effort.

    best_position_error_m / best_orientation_error_rad: of the closest attempt (for a
    failure: how far it got); solve_time_s [s] wall time of the call.
    """

    status: IKStatus
    solutions: tuple[IKSolution, ...]
    attempts: int
    iterations: int
    solve_time_s: float
    best_position_error_m: float
    best_orientation_error_rad: float
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status is IKStatus.SOLVED

    @property
    def q(self) -> np.ndarray | None:
        """The first (nearest-to-seed) solution, or None when the solve failed."""
        return self.solutions[0].q if self.solutions else None


class IKSolver:
    """IK of one arm's TCP; owns an arm kinematics (one thread, DESIGN.md): ROB's Pinocchio
    ``ArmKinematics`` or a robot's own ``rob_twin.planners.mj_kinematics.MjArmKinematics``
    (``rob_twin.planners.robot_kinematics.arm_kinematics`` picks). What it asks of one: the
    full-q ``pose_of`` / ``jacobian_of`` (torso first, then the N arm joints), ``lower`` /
    ``upper``, ``n_joints``, ``joint_names``, ``within_limits``, ``mount_pose`` (the frame
    the seed table is in), ``shoulder_origin`` and ``reach_bound_m`` (the reach check) and
    ``key`` (which model, for the seed table's cache)."""

    def __init__(self, kin: ArmKinematics, config: IKConfig | None = None):
        self.kin = kin
        self.config = config or default_config()
        self.rng = np.random.default_rng(self.config.rng_seed)
        self._reach = kin.reach_bound_m()
        if self.config.table_seeds and self.config.seed_table_size:
            _seed_table(kin, self.config.seed_table_size)  # built once per arm and process

    # ---------------------------------------------------------------- public
    def solve(
        self,
        target: pin.SE3 | np.ndarray,
        torso: float = 0.0,
        seed: np.ndarray | None = None,
        n_solutions: int = 1,
    ) -> IKResult:
        """Up to ``n_solutions`` distinct verified solutions for ``target`` at ``torso`` [rad]."""
        t0 = time.perf_counter()
        target, torso = as_pose(target), torso_angle(torso)
        seed = None if seed is None else joint_vector(seed, "seed", self.kin.n_joints)
        if n_solutions < 1:
            raise PlannerConfigError("n_solutions", n_solutions, ">= 1")
        stream = IKStream(self, target, torso, seed, t0)
        if stream.unreachable is not None:
            return stream.unreachable
        while len(stream.run.found) < n_solutions and stream.next_solution() is not None:
            pass
        return stream.result(sort_by_seed=True)

    def stream(
        self, target: pin.SE3 | np.ndarray, torso: float = 0.0, seed: np.ndarray | None = None
    ) -> IKStream:
        """Distinct verified solutions of ``target`` one at a time (``IKStream``), in the
        order ``solve`` finds them: a caller that needs only the first pays only for it."""
        t0 = time.perf_counter()
        target, torso = as_pose(target), torso_angle(torso)
        seed = None if seed is None else joint_vector(seed, "seed", self.kin.n_joints)
        return IKStream(self, target, torso, seed, t0)

    def solve_continuous(
        self,
        target: pin.SE3 | np.ndarray,
        seed: np.ndarray,
        torso: float = 0.0,
        max_joint_step: float | np.ndarray | None = None,
    ) -> IKResult:
        """The solution nearest the seed, with every |q_j - seed_j| <= ``max_joint_step`` [rad]."""
        t0 = time.perf_counter()
        target, torso = as_pose(target), torso_angle(torso)
        seed = joint_vector(seed, "seed", self.kin.n_joints)
        bound = np.broadcast_to(
            np.asarray(
                self.config.max_joint_step_rad if max_joint_step is None else max_joint_step, float
            ),
            seed.shape,
        )
        if not np.all(bound > 0.0):
            raise PlannerConfigError("max_joint_step", bound.tolist(), "> 0 rad per joint")
        run = _Run(self, target, torso, seed, t0)
        if (early := run.reach_check()) is not None:
            return early
        start = self.kin.pose_of(_full(torso, np.clip(seed, self.kin.lower, self.kin.upper)))
        jumps: list[IKSolution] = []
        for substeps in self.config.continuity_substeps:
            for q0 in (seed, self._nudged(seed)):
                sol = run.track(q0, start, substeps)
                if sol is None:
                    continue
                if np.all(np.abs(sol.q - seed) <= bound):
                    run.found = [sol]
                    return run.result(IKStatus.SOLVED)
                jumps.append(sol)
                break
        if jumps:
            best = min(jumps, key=lambda s: s.max_joint_step_rad)
            j = int(np.argmax(np.abs(best.q - seed) - bound))
            msg = (
                f"nearest solution moves {self.kin.joint_names[j]} by "
                f"{abs(best.q[j] - seed[j]):.4g} rad; bound {bound[j]:.4g} rad"
            )
            return run.result(IKStatus.JOINT_JUMP, msg)
        return run.result(IKStatus.NOT_CONVERGED)

    # --------------------------------------------------------------- helpers
    def _table_starts(self, target: pin.SE3, torso: float) -> list[np.ndarray]:
        """The ``table_seeds`` tabled joint vectors whose TCP pose (torso frame) is nearest
        ``target`` at ``torso`` (the table is in the arm's mount frame: ``kin.mount_pose``)."""
        cfg = self.config
        if cfg.table_seeds == 0 or cfg.seed_table_size == 0:
            return []
        qs, pos, rot = _seed_table(self.kin, cfg.seed_table_size)
        local = self.kin.mount_pose(torso).actInv(target)
        w = TABLE_ROTATION_WEIGHT_M
        score = ((pos - local.translation) ** 2).sum(axis=1) + (w * w) * (
            (rot - local.rotation.reshape(9)) ** 2
        ).sum(axis=1)
        k = min(cfg.table_seeds, len(qs))
        best = np.argpartition(score, k - 1)[:k]
        return [qs[i].copy() for i in best[np.argsort(score[best])]]

    def _nudged(self, seed: np.ndarray) -> np.ndarray:
        """The seed moved ``nudge_rad`` towards the middle of every joint's range."""
        mid = 0.5 * (self.kin.lower + self.kin.upper)
        return np.clip(
            seed + self.config.nudge_rad * np.sign(mid - seed), self.kin.lower, self.kin.upper
        )


class IKStream:
    """One target's distinct verified solutions, found lazily by ``next_solution``.

    Starts, in order: with a seed, the seed, the nudged seed, then the seed table's
    vectors nearest the target; without one, the table's vectors; then random restarts
    (the solver's rng). At most ``max_attempts`` local solves in all. ``unreachable`` is
    the UNREACHABLE result when the target is out of reach (then nothing is solved).
    """

    def __init__(self, solver: IKSolver, target: pin.SE3, torso: float, seed, t0: float):
        self.solver = solver
        self.run = _Run(solver, target, torso, seed, t0)
        self.unreachable = self.run.reach_check()
        self._starts = self._fixed_starts()

    def _fixed_starts(self):
        solver, run = self.solver, self.run
        if run.seed is not None:
            yield run.seed
            yield solver._nudged(run.seed)
        yield from solver._table_starts(run.target, run.torso)

    @property
    def solutions(self) -> tuple[IKSolution, ...]:
        """The solutions found so far, in the order found."""
        return tuple(self.run.found)

    @property
    def exhausted(self) -> bool:
        return self.unreachable is not None or self.run.attempts >= self.solver.config.max_attempts

    def next_solution(self) -> IKSolution | None:
        """The next verified solution distinct (``distinct_min_rad``) from those found so
        far, or None when the attempt budget is spent (or the target is out of reach)."""
        run, kin = self.run, self.solver.kin
        have = len(run.found)
        while not self.exhausted:
            q0 = next(self._starts, None)
            run.try_local(self.solver.rng.uniform(kin.lower, kin.upper) if q0 is None else q0)
            if len(run.found) > have:
                return run.found[-1]
        return None

    def result(self, sort_by_seed: bool = False) -> IKResult:
        """The IKResult of what was found so far (nearest the seed first when
        ``sort_by_seed``); UNREACHABLE when out of reach."""
        if self.unreachable is not None:
            return self.unreachable
        run = self.run
        if sort_by_seed and run.seed is not None:
            run.found.sort(key=lambda s: float(np.linalg.norm(s.q - run.seed)))
        return run.result(IKStatus.SOLVED if run.found else IKStatus.NOT_CONVERGED)


TABLE_ROTATION_WEIGHT_M = 0.1  # metres per unit of rotation-matrix difference in the table score
TABLE_RNG_SEED = 12345
_SEED_TABLES: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


def _seed_table(kin: ArmKinematics, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(joint vectors, TCP positions, TCP rotations as 9-vectors) in the arm's mount frame
    (ROB: the torso frame) for ``size`` seeded uniform joint vectors of ``kin``'s arm; built
    once per model, arm and limits."""
    key = (kin.key, kin.arm, size, kin.lower.tobytes(), kin.upper.tobytes())
    table = _SEED_TABLES.get(key)
    if table is None:
        rng = np.random.default_rng(TABLE_RNG_SEED)
        qs = rng.uniform(kin.lower, kin.upper, (size, kin.lower.size))
        pos, rot = np.empty((size, 3)), np.empty((size, 9))
        mount = kin.mount_pose(0.0)
        for i, q in enumerate(qs):
            local = mount.actInv(kin.pose_of(_full(0.0, q)))
            pos[i], rot[i] = local.translation, local.rotation.reshape(9)
        table = _SEED_TABLES[key] = (qs, pos, rot)
    return table


def _full(torso: float, q: np.ndarray) -> np.ndarray:
    q8 = np.zeros(1 + q.size)
    q8[TORSO_INDEX], q8[1 : 1 + q.size] = torso, q
    return q8


class _Run:
    """Book-keeping of one solve call: attempts, verified solutions, the best failure."""

    def __init__(self, solver: IKSolver, target: pin.SE3, torso: float, seed, t0: float):
        self.solver, self.kin, self.cfg = solver, solver.kin, solver.config
        self.target, self.torso, self.seed, self.t0 = target, torso, seed, t0
        self.found: list[IKSolution] = []
        self.attempts = self.iterations = 0
        self.best = (np.inf, np.inf)

    def reach_check(self) -> IKResult | None:
        j1 = self.kin.shoulder_origin(self.torso)
        dist = float(np.linalg.norm(self.target.translation - j1))
        if dist <= self.solver._reach:
            return None
        reach = self.solver._reach
        msg = f"target is {dist:.4g} m from the J1 origin; the arm reaches at most {reach:.4g} m"
        return self.result(IKStatus.UNREACHABLE, msg)

    def verify(self, local: LocalResult) -> IKSolution | None:
        """The independent acceptance check: true FK, tolerances, joint limits."""
        dp, dr = pose_error(self.kin.pose_of(_full(self.torso, local.q)), self.target)
        if (dp, dr) < self.best:
            self.best = (dp, dr)
        if dp > self.cfg.position_tolerance_m or dr > self.cfg.orientation_tolerance_rad:
            return None
        if not self.kin.within_limits(local.q):
            return None
        step = None if self.seed is None else float(np.max(np.abs(local.q - self.seed)))
        return IKSolution(local.q, dp, dr, step)

    def try_local(self, q0: np.ndarray) -> None:
        local = self._local(q0, self.target)
        sol = self.verify(local)
        if sol is not None and all(
            np.max(np.abs(sol.q - other.q)) > self.cfg.distinct_min_rad for other in self.found
        ):
            self.found.append(sol)

    def track(self, q0: np.ndarray, start: pin.SE3, substeps: int) -> IKSolution | None:
        """Local solves along the SE3 path start -> target in ``substeps`` equal steps."""
        twist = pin.log6(start.actInv(self.target))
        q = q0
        for k in range(1, substeps + 1):
            goal = self.target if k == substeps else start * pin.exp6(twist * (k / substeps))
            local = self._local(q, goal)
            if not local.converged and k < substeps:
                return None
            q = local.q
        return self.verify(local)

    def _local(self, q0: np.ndarray, goal: pin.SE3) -> LocalResult:
        local = solve_local(self.kin, self.torso, goal, q0, self.cfg.lm)
        self.attempts += 1
        self.iterations += local.iterations
        return local

    def result(self, status: IKStatus, message: str = "") -> IKResult:
        if not message:
            message = {
                IKStatus.SOLVED: f"{len(self.found)} verified solution(s)",
                IKStatus.NOT_CONVERGED: (
                    f"no solution within {self.cfg.position_tolerance_m} m / "
                    f"{self.cfg.orientation_tolerance_rad} rad inside the joint limits after "
                    f"{self.attempts} attempts; best {self.best[0]:.3g} m / {self.best[1]:.3g} rad"
                ),
            }.get(status, status.value)
        return IKResult(
            status,
            tuple(self.found) if status is IKStatus.SOLVED else (),
            self.attempts,
            self.iterations,
            time.perf_counter() - self.t0,
            float(self.best[0]),
            float(self.best[1]),
            message,
        )
