"""PoseGoal: a TCP pose goal of one arm, resolved by the IK into a resampling goal set.

Frames: ``target`` is a TCP pose in the arm kinematics' base frame: ROB's *base* frame
(``rob_twin.planners.kinematics``: the reduced Pinocchio model with the base free joint at
identity), or, with ``robot`` naming another robot, that robot's own MuJoCo kinematics
(``rob_twin.planners.mj_kinematics``: the world frame of a robot fixed to it). The IK returns joint
angles, which do not depend on where the base stands, so they go straight into the
group's MuJoCo qpos; the base frame equals MuJoCo's world frame when the base free joint
is at its qpos0 (origin, identity), as in ``load_scene()`` (tests/test_pose_goals.py
checks FK against MuJoCo's site there). The torso angle is the group's reference torso
(``torso/yaw`` of its reference qpos) unless given.

Candidates: up to ``n_candidates`` distinct IK solutions, the first from the arm's start
as the IK seed (the nearest branch). The group takes them lazily through
``candidate_stream``: one IK solution per arm, and the next only when no combination of
those so far passes the combined check (``joint_candidates`` gives them all at once,
nearest to the start first). When every combination of the ``n_candidates`` fails, the
group calls ``more_candidates`` and gets up to ``resample_count`` new solutions from
fresh restarts (the seed table's vectors nearest the pose, then random ones).

Units: metres, radians.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import mujoco
import numpy as np
import pinocchio as pin
from rob_twin.models import names as N
from rob_twin.planners.errors import GoalInputError, GoalUnreachableError, PlannerConfigError
from rob_twin.planners.ik import IKConfig, IKSolver
from rob_twin.planners.pose import as_pose
from rob_twin.planners.robot_kinematics import arm_kinematics

if TYPE_CHECKING:
    from rob_twin.models.robot import Robot
    from rob_twin.planners.group import ArmGroup


def group_torso(group: ArmGroup) -> float:
    """The torso yaw [rad] of the group's reference state (0 when the model has none)."""
    jid = mujoco.mj_name2id(group.model, mujoco.mjtObj.mjOBJ_JOINT, N.TORSO_JOINT)
    if jid < 0:
        return 0.0
    return float(group.reference_qpos[group.model.jnt_qposadr[jid]])


class PoseGoal:
    """TCP pose ``target`` (pinocchio.SE3 or 4x4, base frame) of one arm.

    n_candidates: IK solutions offered first; resample_count: new solutions per resample
    round; torso: torso yaw [rad] (None: the group's reference); ik_config: IKConfig
    (``rob_twin.planners.ik.default_config()``; its ``rng_seed`` makes the candidates reproducible);
    lazy: True (default) gives the group one IK solution at a time, the one seeded from the
    start first (fast: usually one IK solve per arm); False solves all ``n_candidates``
    before the first is tried and offers them nearest to the start first (tens of ms more
    per arm, a motion a few per cent shorter on the planner benchmark's pairs).
    robot: the robot whose arm kinematics the IK uses (a ``Robot``, name or robot file;
    None: ROB's), ``rob_twin.planners.robot_kinematics.arm_kinematics``.
    One PoseGoal belongs to one thread (it owns IK solvers).
    """

    def __init__(
        self,
        target: pin.SE3 | np.ndarray,
        n_candidates: int = 4,
        resample_count: int = 4,
        torso: float | None = None,
        ik_config: IKConfig | None = None,
        lazy: bool = True,
        robot: Robot | str | None = None,
    ):
        self.target = as_pose(target)
        self.robot = robot
        if not isinstance(lazy, bool):
            raise PlannerConfigError("lazy", lazy, "True or False")
        self.lazy = lazy
        if n_candidates < 1 or resample_count < 1:
            raise PlannerConfigError(
                "n_candidates/resample_count", (n_candidates, resample_count), ">= 1"
            )
        self.n_candidates, self.resample_count = n_candidates, resample_count
        self.torso = torso
        self.ik_config = ik_config
        self._solvers: dict[str, IKSolver] = {}
        self.calls = {"joint_candidates": 0, "more_candidates": 0, "streamed": 0}

    def solver(self, group: ArmGroup, arm: str) -> IKSolver:
        if arm not in self._solvers:
            kin = arm_kinematics(self.robot, arm)
            if tuple(group.joint_names(arm)) != kin.joint_names:
                raise GoalInputError(
                    arm, "joints", group.joint_names(arm), f"the IK chain {kin.joint_names}"
                )
            self._solvers[arm] = IKSolver(kin, self.ik_config)
        return self._solvers[arm]

    def _torso(self, group: ArmGroup) -> float:
        return group_torso(group) if self.torso is None else float(self.torso)

    def joint_candidates(self, group: ArmGroup, arm: str, start: np.ndarray) -> list[np.ndarray]:
        """Up to ``n_candidates`` verified IK solutions, nearest to ``start`` first."""
        self.calls["joint_candidates"] += 1
        result = self.solver(group, arm).solve(
            self.target, self._torso(group), seed=start, n_solutions=self.n_candidates
        )
        if not result.ok:
            raise GoalUnreachableError(
                arm, f"IK of the TCP pose: {result.status.value}: {result.message}"
            )
        return [s.q.copy() for s in result.solutions]

    def candidate_stream(
        self, group: ArmGroup, arm: str, start: np.ndarray
    ) -> Iterator[np.ndarray]:
        """Up to ``n_candidates`` verified distinct IK solutions, one per ``next``, each
        solved only when asked for: the first seeded from ``start`` (its branch), the next
        from the seed table's vectors nearest the pose, then random restarts (the IK's
        budget of ``max_attempts`` local solves in all). GoalUnreachableError on the
        first ``next`` when the IK finds none. ``calls["streamed"]`` counts those given.
        Not ``lazy``: the ``joint_candidates`` (all solved first, nearest first)."""
        if not self.lazy:
            for q in self.joint_candidates(group, arm, start):
                self.calls["streamed"] += 1
                yield q
            return
        stream = self.solver(group, arm).stream(self.target, self._torso(group), seed=start)
        for k in range(self.n_candidates):
            sol = stream.next_solution()
            if sol is None:
                if k == 0:
                    r = stream.result()
                    raise GoalUnreachableError(
                        arm, f"IK of the TCP pose: {r.status.value}: {r.message}"
                    )
                return
            self.calls["streamed"] += 1
            yield sol.q.copy()

    def more_candidates(
        self, group: ArmGroup, arm: str, start: np.ndarray, have: Sequence[np.ndarray]
    ) -> list[np.ndarray]:
        """Up to ``resample_count`` new solutions (fresh unseeded restarts: the seed
        table's vectors nearest the pose, then random ones), each farther than the IK's
        ``distinct_min_rad`` from every one in ``have``; nearest to ``start`` first. The
        restarts stop as soon as ``resample_count`` new ones are found (or the IK's
        ``max_attempts`` are spent)."""
        self.calls["more_candidates"] += 1
        solver = self.solver(group, arm)
        gap = solver.config.distinct_min_rad
        stream = solver.stream(self.target, self._torso(group), seed=None)
        new: list[np.ndarray] = []
        while len(new) < self.resample_count and (s := stream.next_solution()) is not None:
            if all(np.max(np.abs(s.q - h)) > gap for h in [*have, *new]):
                new.append(s.q.copy())
        new.sort(key=lambda q: float(np.linalg.norm(q - start)))
        return new
