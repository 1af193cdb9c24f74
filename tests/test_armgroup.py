"""ArmGroup: traps proven to be traps, locked idle arm, determinism, limits, typed errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from planner_fixtures import (
    ROB_ARMS,
    STAND_ARMS,
    STAND_START,
    load_stand,
    rob_home_group,
    stand_at_start,
    straight,
)
from rob_twin.models.loading import load_scene
from rob_twin.planners.errors import GoalInputError, GroupNameError, PlanFailedError
from rob_twin.planners.geom_pairs import GeomPairTable
from rob_twin.planners.goals import JointGoal, JointGoalSet
from rob_twin.planners.group import ArmGroup
from rob_twin.planners.oracle import CoalOracle, judge_states
from rob_twin.planners.plan import PlanStatus
from rob_twin.planners.retime import (
    JointLimits,
    ScalarProfile,
    limit_report,
    sample_times,
    time_path,
)
from ruckig import InputParameter, Result, Ruckig, Trajectory

MARGIN = 0.005
TOL = 1e-4

# Found once by a seeded search and frozen here; the tests below prove they are traps.
STAND_CROSS_GOAL = {"a": [0.28, -0.25, -0.54, -0.25], "b": [-0.9, 0.31, -0.76, -1.61]}
ROB_UNDER_TABLE_GOAL = [0.532, -1.012, -0.35, 0.0, 1.027, -0.785, -0.301]


def _full_states(group: ArmGroup, moving, stacked: np.ndarray) -> np.ndarray:
    out = np.repeat(group.reference_qpos[None, :], len(stacked), axis=0)
    col = 0
    for a in moving:
        idx = group.checker.arm_qpos[a]
        out[:, idx] = stacked[:, col : col + idx.size]
        col += idx.size
    return out


def _judge(fresh_model, arms, states, threshold):
    """Independent verdict: coal on a fresh copy of the model."""
    return judge_states(
        CoalOracle(fresh_model), GeomPairTable(fresh_model, arms), states, threshold
    )


@pytest.fixture(scope="module")
def stand_group():
    return stand_at_start()


@pytest.fixture(scope="module")
def rob_group():
    return rob_home_group()


def test_crossing_trap_on_a_model_that_is_not_rob(stand_group):
    g = stand_group
    start = np.concatenate([STAND_START[a] for a in ("a", "b")])
    goal = np.concatenate([STAND_CROSS_GOAL[a] for a in ("a", "b")])
    naive = _judge(
        load_stand(), STAND_ARMS, _full_states(g, ("a", "b"), straight(start, goal)), 0.0
    )
    assert naive and any(
        p.startswith("a/") and " b/" in p for _, p, _ in naive
    )  # a trap: arm vs arm
    plan = g.plan(STAND_CROSS_GOAL, seed=0).unwrap()
    assert _judge(load_stand(), STAND_ARMS, g.full_qpos(plan), MARGIN - TOL) == []
    assert plan.min_clearance.distance_m >= MARGIN
    np.testing.assert_allclose(plan.stacked()[0], start, atol=1e-12)
    np.testing.assert_allclose(plan.stacked()[-1], goal, atol=1e-9)


def test_obstacle_trap_and_locked_idle_arm_on_rob(rob_group):
    g = rob_group
    start = g.arm_q("right")
    goal = np.array(ROB_UNDER_TABLE_GOAL)
    naive = _judge(load_scene(), ROB_ARMS, _full_states(g, ("right",), straight(start, goal)), 0.0)
    assert naive and any("table/top" in p for _, p, _ in naive)  # a trap: through the table
    result = g.plan({"right": JointGoal(goal)}, seed=0)
    plan = result.unwrap()
    assert plan.moving == ("right",) and set(plan.arms) == {"right"}
    states = g.full_qpos(plan)
    assert _judge(load_scene(), ROB_ARMS, states[::2], MARGIN - TOL) == []
    left = g.checker.arm_qpos["left"]
    assert (states[:, left] == g.reference_qpos[left]).all()  # bit-identical, every sample
    other = np.setdiff1d(np.arange(states.shape[1]), g.checker.arm_qpos["right"])
    assert (states[:, other] == g.reference_qpos[other]).all()
    assert set(plan.stage_times_s) >= {"goals", "search", "shortcut", "retime", "check", "total"}


def test_same_seed_same_plan(stand_group):
    p1 = stand_group.plan(STAND_CROSS_GOAL, seed=3).unwrap()
    p2 = stand_group.plan(STAND_CROSS_GOAL, seed=3).unwrap()
    assert np.array_equal(p1.waypoints, p2.waypoints) and np.array_equal(p1.stacked(), p2.stacked())


def test_shared_time_base_and_limits_respected(stand_group):
    plan = stand_group.plan(STAND_CROSS_GOAL, seed=0).unwrap()
    assert plan.rate_hz == 125.0
    np.testing.assert_allclose(np.diff(plan.t), 1 / 125.0, atol=1e-12)
    for traj in plan.arms.values():
        assert traj.q.shape[0] == plan.t.size
    limits = JointLimits.stack([stand_group.motion_limits(a) for a in plan.moving])
    report = limit_report(
        plan.stacked("q"), plan.stacked("qd"), plan.stacked("qdd"), 1 / 125.0, limits
    )
    assert report.respected(1e-6), report
    assert report.discrete_jerk > 0.3  # the limit is really used, not trivially far away
    # every sample is measured or proven free from a measured one; both ends are measured
    assert plan.checked_states + plan.proven_samples == plan.t.size
    assert plan.checked_states >= 2 and plan.certificate.measured_samples == plan.checked_states


def test_scalar_profile_matches_ruckig():
    rng = np.random.default_rng(0)
    for _ in range(50):
        V, A, J = rng.uniform(0.1, 5), rng.uniform(0.1, 10), rng.uniform(0.5, 50)
        otg, inp, traj = Ruckig(1), InputParameter(1), Trajectory(1)
        inp.current_position, inp.target_position = [0.0], [1.0]
        inp.max_velocity, inp.max_acceleration, inp.max_jerk = [V], [A], [J]
        assert otg.calculate(inp, traj) == Result.Working
        p = ScalarProfile(V, A, J)
        assert p.duration == pytest.approx(traj.duration, rel=1e-9)
        assert abs(p.end_error) < 1e-9


def test_a_timed_path_evaluates_each_sample_on_its_own_segments_profile():
    """All segments at once give, bit for bit, what each segment's own profile gives at
    the time since its start, at samples, segment boundaries, and before and after."""
    rng = np.random.default_rng(3)
    limits = JointLimits.uniform(5, 1.5, 3.0, 20.0)
    for n_points in (2, 3, 6):
        pts = [rng.normal(0.0, 1.0, 5) for _ in range(n_points)]
        timed = time_path(pts, limits)
        t = np.concatenate(
            [sample_times(timed.duration, 125.0), timed.segment_starts, [-0.3, timed.duration + 1]]
        )
        q, qd, qdd = timed.evaluate(t)
        for i, ti in enumerate(t):
            k = int(timed.segment_of(np.array([ti]))[0])
            s, sd, sdd = timed.profiles[k].evaluate(np.array([ti - timed.segment_starts[k]]))
            dq = timed.waypoints[k + 1] - timed.waypoints[k]
            np.testing.assert_array_equal(q[i], timed.waypoints[k] + s[0] * dq)
            np.testing.assert_array_equal(qd[i], sd[0] * dq)
            np.testing.assert_array_equal(qdd[i], sdd[0] * dq)
        np.testing.assert_allclose(q[-1], pts[-1], rtol=0, atol=1e-12)  # at rest at the end


def test_goal_in_collision_names_the_pair(stand_group):
    r = stand_group.plan({"a": [0.7, 0, 0, 0], "b": [-0.7, 0, 0, 0]})
    assert r.status is PlanStatus.GOAL_IN_COLLISION and not r.ok
    assert {r.pair.name1, r.pair.name2} <= {
        "a/l2_geom",
        "a/l3_geom",
        "a/tip",
        "b/l2_geom",
        "b/l3_geom",
        "b/tip",
    }
    assert str(r.pair) in r.reason
    with pytest.raises(PlanFailedError, match="GOAL_IN_COLLISION"):
        r.unwrap()


def test_goal_set_takes_the_first_free_candidate(stand_group):
    bad, good = [0.7, 0, 0, 0], [0.0, 0.3, 0.2, 0.0]
    plan = stand_group.plan({"a": JointGoalSet([bad, good]), "b": [-0.7, 0, 0, 0]}, seed=0).unwrap()
    np.testing.assert_allclose(plan.arms["a"].q[-1], good, atol=1e-9)


def test_typed_input_errors(stand_group):
    g = stand_group
    with pytest.raises(GroupNameError, match="valid: a, b"):
        g.plan({"c": [0, 0, 0, 0]})
    with pytest.raises(GoalInputError, match=r"shape.*\(4,\)"):
        g.plan({"a": [0, 0, 0]})
    with pytest.raises(GoalInputError, match="a/elbow.*finite"):
        g.plan({"a": [0, 0, math.nan, 0]})
    with pytest.raises(GoalInputError, match=r"a/shoulder.*3\.0.*\[-0\.5, 2\.2\] rad"):
        g.plan({"a": [0, 3.0, 0, 0]})
    with pytest.raises(GoalInputError, match="at least one"):
        g.plan({})
