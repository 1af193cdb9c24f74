"""ArmGroup hardening: zero-length plans, a honoured wall-time budget, typed errors for
malformed arm definitions, goals and seeds."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from planner_fixtures import STAND_ARMS, STAND_START, load_stand, rob_home_group, stand_at_start
from rob_twin.controllers.trajectory import MultiArmTrajectory
from rob_twin.models.errors import RobTwinError
from rob_twin.planners.errors import GoalInputError, GroupNameError, PlannerConfigError
from rob_twin.planners.goals import JointGoal
from rob_twin.planners.group import ArmGroup, GroupConfig
from rob_twin.planners.plan import PlanStatus

STAND_GOAL = {"a": [0.28, -0.25, -0.54, -0.25], "b": [-0.9, 0.31, -0.76, -1.61]}
ROB_UNDER_TABLE_GOAL = [0.532, -1.012, -0.35, 0.0, 1.027, -0.785, -0.301]


@pytest.fixture(scope="module")
def stand():
    return stand_at_start()


@pytest.fixture(scope="module")
def rob():
    return rob_home_group()


# ------------------------------------------------------------------ zero-length plans


@pytest.mark.parametrize(
    "goals", [dict(STAND_START), {"a": STAND_START["a"]}], ids=["both arms", "one arm"]
)
def test_goal_equal_to_start_is_a_zero_length_plan(stand, goals):
    result = stand.plan(goals, seed=3)
    plan = result.unwrap()
    assert plan.duration_s == 0.0 and plan.t.tolist() == [0.0]
    assert plan.moving == tuple(goals) and plan.repairs == 0 and plan.checked_states == 1
    for a, traj in plan.arms.items():
        np.testing.assert_array_equal(traj.q, [STAND_START[a]])
        assert not traj.qd.any() and not traj.qdd.any()
    assert plan.waypoints.shape == (1, 4 * len(goals))
    assert plan.min_clearance.distance_m >= stand.config.collision.margin_m
    # the executor's trajectory type takes it: a one-sample, zero-duration trajectory
    traj = MultiArmTrajectory.from_arrays(
        {"right": (plan.t, np.zeros((1, 7)), np.zeros((1, 7)), np.zeros((1, 7)))}
    )
    assert traj.duration_s == 0.0


def test_zero_length_plan_carries_its_certificate(stand):
    g = ArmGroup(load_stand(), STAND_ARMS, GroupConfig())
    for a, q in STAND_START.items():
        g.set_arm(a, q)
    plan = g.plan(dict(STAND_START)).unwrap()
    cert = plan.certificate
    assert cert is not None and cert.certified
    assert cert.certified_min_m >= g.config.collision.margin_m


def test_a_goal_that_moves_one_arm_is_not_zero_length(stand):
    goals = {"a": STAND_START["a"], "b": STAND_GOAL["b"]}
    plan = stand.plan(goals, seed=0).unwrap()
    assert plan.duration_s > 0.1
    np.testing.assert_allclose(
        plan.arms["a"].q, np.repeat([STAND_START["a"]], plan.t.size, 0), atol=1e-12
    )


# ------------------------------------------------------------------ wall-time budget


def test_tiny_budget_on_a_hard_problem_times_out_promptly(rob):
    """ROB's right arm under the table: a trap (the straight motion crosses the table top)
    that takes about 15-30 ms to plan (unloaded); a 3 ms budget must end in a typed TIMEOUT
    soon after."""
    budget = 0.003
    t0 = time.perf_counter()
    result = rob.plan({"right": JointGoal(ROB_UNDER_TABLE_GOAL)}, seed=0, time_budget_s=budget)
    spent = time.perf_counter() - t0
    assert result.status is PlanStatus.TIMEOUT and result.plan is None
    assert f"budget {budget} s" in result.reason and "exhausted during" in result.reason
    assert spent < budget + 0.25  # checks run every sampling round / 32 states
    with pytest.raises(RobTwinError):
        result.unwrap()


def test_budget_from_the_config_and_a_generous_budget_changes_nothing(rob):
    free = rob.plan({"right": JointGoal(ROB_UNDER_TABLE_GOAL)}, seed=0).unwrap()
    roomy = rob.plan(
        {"right": JointGoal(ROB_UNDER_TABLE_GOAL)}, seed=0, time_budget_s=60.0
    ).unwrap()
    np.testing.assert_array_equal(free.t, roomy.t)  # same seed, same plan, bit for bit
    np.testing.assert_array_equal(free.stacked(), roomy.stacked())
    g = ArmGroup(
        rob.model, {a: rob.joint_names(a) for a in rob.arm_names}, GroupConfig(time_budget_s=0.001)
    )
    g.set_qpos(rob.reference_qpos)
    assert g.plan({"right": JointGoal(ROB_UNDER_TABLE_GOAL)}).status is PlanStatus.TIMEOUT


@pytest.mark.parametrize("budget", [0.0, -1.0, math.nan, math.inf, True, "1"])
def test_invalid_budgets_are_typed_errors(stand, budget):
    with pytest.raises(PlannerConfigError, match="time_budget_s"):
        stand.plan(dict(STAND_GOAL), time_budget_s=budget)
    with pytest.raises(PlannerConfigError, match="time_budget_s"):
        GroupConfig(time_budget_s=budget)


# ------------------------------------------------------------------ malformed input

ARM_ROWS = [
    ("empty joint list", {"a": []}, PlannerConfigError, "at least one joint"),
    ("joint list is a str", {"a": "a/yaw"}, PlannerConfigError, "not a str"),
    ("joint list is a set", {"a": {"a/yaw"}}, PlannerConfigError, "chain order"),
    (
        "joint in two arms",
        {"a": ["a/yaw", "a/shoulder"], "b": ["b/yaw", "a/shoulder"]},
        PlannerConfigError,
        "already in arm 'a'",
    ),
    ("joint twice in one arm", {"a": ["a/yaw", "a/yaw"]}, PlannerConfigError, "twice"),
    ("joint name not a str", {"a": ["a/yaw", 3]}, PlannerConfigError, "joint name"),
    ("arm name not a str", {1: ["a/yaw"]}, PlannerConfigError, "arm name"),
    ("no arm", {}, GroupNameError, "at least one arm"),
    ("not a mapping", [("a", ["a/yaw"])], PlannerConfigError, "mapping"),
    ("unknown joint", {"a": ["a/elbow", "a/knee"]}, GroupNameError, "a/knee"),
]


@pytest.mark.parametrize("name,arms,error,fragment", ARM_ROWS, ids=[r[0] for r in ARM_ROWS])
def test_malformed_arm_definitions_are_typed_errors(name, arms, error, fragment):
    with pytest.raises(error) as info:
        ArmGroup(load_stand(), arms)
    assert fragment in str(info.value) and isinstance(info.value, RobTwinError)


@pytest.mark.parametrize(
    "goals,seed,error",
    [
        ([STAND_GOAL["a"]], 0, GoalInputError),
        ("a", 0, GoalInputError),
        (STAND_GOAL, 1.5, PlannerConfigError),
        (STAND_GOAL, -1, PlannerConfigError),
        (STAND_GOAL, True, PlannerConfigError),
        (STAND_GOAL, "0", PlannerConfigError),
    ],
)
def test_malformed_goals_and_seeds_are_typed_errors(stand, goals, seed, error):
    with pytest.raises(error):
        stand.plan(goals, seed=seed)


@pytest.mark.parametrize(
    "q", [["0.1"] * 4, [True, 0.0, 0.0, 0.0], np.zeros(4, complex), [None] * 4]
)
def test_goal_vectors_of_str_bool_complex_are_typed_errors(stand, q):
    with pytest.raises(GoalInputError):
        stand.plan({"a": q})
    with pytest.raises(GoalInputError):
        stand.set_arm("a", q)


@pytest.mark.parametrize("bad", [math.nan, math.inf, "0"])
def test_reference_qpos_must_be_finite_numbers(stand, bad):
    qpos = (
        stand.reference_qpos.astype(object) if isinstance(bad, str) else stand.reference_qpos.copy()
    )
    qpos[0] = bad
    before = stand.reference_qpos.copy()
    with pytest.raises(GoalInputError):
        stand.set_qpos(qpos)
    np.testing.assert_array_equal(stand.reference_qpos, before)
