"""Lazy goal candidates: the group takes a streaming goal's candidates one at a time, and
the IK stream gives the same solutions as ``solve``, seed first, then the seed table."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from planner_fixtures import ROB_ARMS, rob_home_group
from rob_twin.planners import GoalUnreachableError, PlanStatus, PoseGoal, StreamingGoal
from rob_twin.planners.errors import PlannerConfigError
from rob_twin.planners.ik import IKSolver, default_config
from rob_twin.planners.kinematics import ArmKinematics

# The left pose's IK solution nearest home collides with the left mount (as in
# tests/test_pose_goals.py); the right one is free.
RESAMPLE_Q = {
    "right": [2.044, -0.441, -1.456, 0.399, 0.441, -0.785, -1.571],
    "left": [0.847, -1.362, -1.397, 1.445, 1.571, 0.546, -0.33],
}
FREE_Q = {
    "right": [0.3, -0.4, 0.2, 1.1, 0.0, 0.2, 0.0],
    "left": [0.3, -0.4, -0.2, 1.1, 0.0, 0.2, 0.0],
}


@pytest.fixture(scope="module")
def group():
    return rob_home_group()


class CountingStream:
    """A streaming goal over fixed joint vectors that counts how many were taken."""

    def __init__(self, vectors):
        self.vectors = [np.array(v, float) for v in vectors]
        self.taken = 0

    def joint_candidates(self, group, arm, start):
        return list(self.vectors)

    def candidate_stream(self, group, arm, start):
        for v in self.vectors:
            self.taken += 1
            yield v


def _targets():
    return {a: ArmKinematics(a).tcp_pose(np.array(q)) for a, q in FREE_Q.items()}


def test_a_free_first_pair_costs_one_ik_solution_per_arm(group):
    goals = {a: PoseGoal(t) for a, t in _targets().items()}
    assert all(isinstance(g, StreamingGoal) for g in goals.values())
    plan = group.plan(goals, seed=0).unwrap()
    for a, g in goals.items():
        assert g.calls == {"joint_candidates": 0, "more_candidates": 0, "streamed": 1}
        p = ArmKinematics(a).tcp_pose(plan.arms[a].q[-1])
        assert np.linalg.norm(p.translation - _targets()[a].translation) < 1e-5
    assert plan.goal_resamples == 0


def test_a_colliding_first_candidate_pulls_the_next_one_only(group):
    colliding = PoseGoal(ArmKinematics("left").tcp_pose(np.array(RESAMPLE_Q["left"])))
    bad = colliding.joint_candidates(group, "left", group.arm_q("left"))[0]
    assert group.clearance({"left": bad}).distance_m < group.config.collision.margin_m
    free = np.array(FREE_Q["left"])
    assert group.clearance({"left": free}).is_free(group.config.collision.margin_m)
    stream = CountingStream([bad, free, FREE_Q["right"]])
    plan = group.plan({"left": stream}, seed=0).unwrap()
    assert stream.taken == 2  # the third was never asked for
    np.testing.assert_allclose(plan.arms["left"].q[-1], free, atol=1e-9)
    assert plan.goal_resamples == 0


def test_a_spent_stream_ends_in_goal_in_collision_when_nothing_resamples(group):
    colliding = PoseGoal(ArmKinematics("left").tcp_pose(np.array(RESAMPLE_Q["left"])))
    bad = colliding.joint_candidates(group, "left", group.arm_q("left"))[0]
    stream = CountingStream([bad])
    r = group.plan({"left": stream}, seed=0)
    assert r.status is PlanStatus.GOAL_IN_COLLISION and stream.taken == 1
    assert "(1 tried, 0 resample rounds)" in r.reason


def test_pose_goals_stream_before_they_resample(group):
    """With room for 4 candidates per arm, the colliding first pair is replaced from the
    streams (no resample round); the plan ends at the requested poses."""
    kin = {a: ArmKinematics(a) for a in ROB_ARMS}
    targets = {a: kin[a].tcp_pose(np.array(q)) for a, q in RESAMPLE_Q.items()}
    goals = {a: PoseGoal(t, n_candidates=4) for a, t in targets.items()}
    plan = group.plan(goals, seed=0).unwrap()
    assert plan.goal_resamples == 0
    assert sum(g.calls["more_candidates"] for g in goals.values()) == 0
    assert max(g.calls["streamed"] for g in goals.values()) >= 2
    assert all(g.calls["streamed"] <= 4 for g in goals.values())
    for a in ROB_ARMS:
        p = kin[a].tcp_pose(plan.arms[a].q[-1])
        assert np.linalg.norm(p.translation - targets[a].translation) < 1e-5


def test_pose_goal_plans_are_deterministic_for_a_seed(group):
    plans = [
        group.plan({a: PoseGoal(t) for a, t in _targets().items()}, seed=3).unwrap()
        for _ in range(2)
    ]
    for a in ROB_ARMS:
        np.testing.assert_array_equal(plans[0].arms[a].q, plans[1].arms[a].q)


def test_stream_gives_solves_solutions_in_the_order_found():
    kin = ArmKinematics("right")
    target = kin.tcp_pose(np.array([0.4, -0.6, 0.3, 1.2, -0.2, 0.3, 0.5]), 0.2)
    solved = IKSolver(kin).solve(target, 0.2, n_solutions=3)
    stream = IKSolver(ArmKinematics("right")).stream(target, 0.2)
    got = [stream.next_solution() for _ in range(3)]
    assert all(s is not None for s in got)
    for a, b in zip(solved.solutions, got, strict=True):
        np.testing.assert_array_equal(a.q, b.q)
    assert stream.result().solutions == stream.solutions


def test_seeded_stream_starts_at_the_seed_then_the_seed_table(monkeypatch):
    kin = ArmKinematics("right")
    solver = IKSolver(kin)
    target = kin.tcp_pose(np.array([0.8, 0.4, -0.5, 1.0, 0.6, -0.3, 0.2]), 0.1)
    seed = np.array([0.1, -0.2, 0.3, 0.4, 0.0, 0.1, -0.1])
    stream = solver.stream(target, 0.1, seed=seed)
    starts = []

    def record(q0):  # an attempt that never converges
        starts.append(np.array(q0))
        stream.run.attempts += 1

    monkeypatch.setattr(stream.run, "try_local", record)
    assert stream.next_solution() is None  # nothing is ever accepted: every start is used
    n_table = default_config().table_seeds
    assert len(starts) == default_config().max_attempts
    np.testing.assert_array_equal(starts[0], seed)
    assert 0 < np.max(np.abs(starts[1] - seed)) <= default_config().nudge_rad + 1e-12
    for got, want in zip(starts[2 : 2 + n_table], solver._table_starts(target, 0.1), strict=True):
        np.testing.assert_array_equal(got, want)
    assert stream.exhausted and stream.result().status.value == "not_converged"


def test_an_unreachable_pose_goal_fails_on_its_first_candidate(group):
    far = PoseGoal(pin.SE3(np.eye(3), np.array([2.0, 0.0, 1.0])))
    with pytest.raises(GoalUnreachableError, match="unreachable"):
        next(iter(far.candidate_stream(group, "right", group.arm_q("right"))))
    r = group.plan({"right": far}, seed=0)
    assert r.status is PlanStatus.GOAL_UNREACHABLE and far.calls["streamed"] == 0


def test_an_eager_pose_goal_offers_its_nearest_solution_first(group):
    target = ArmKinematics("right").tcp_pose(np.array(RESAMPLE_Q["right"]))
    start = group.arm_q("right")
    eager = PoseGoal(target, n_candidates=3, lazy=False)
    offered = list(eager.candidate_stream(group, "right", start))
    assert eager.calls["joint_candidates"] == 1 and len(offered) >= 2
    dist = [float(np.linalg.norm(q - start)) for q in offered]
    assert dist == sorted(dist)
    plan = group.plan({"right": PoseGoal(target, n_candidates=3, lazy=False)}, seed=0).unwrap()
    np.testing.assert_allclose(plan.arms["right"].q[-1], offered[0], atol=1e-9)
    with pytest.raises(PlannerConfigError, match="lazy"):
        PoseGoal(target, lazy="yes")
