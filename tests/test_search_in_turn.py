"""ArmGroup's search with the arms in turn (``SearchConfig.arms_in_turn_after`` /
``arms_in_turn_rounds``): when the search of both arms together has found nothing after a
few rounds, each arm is searched alone in its own joints while the other holds still, in
every order of the arms.

- the path it returns moves one arm at a time, starts at the start, ends at the goal, and
  every waypoint and every edge is free for both arms together (the stacked check);
- a problem the search together cannot solve in its rounds is solved that way, certified;
- a plan found within ``arms_in_turn_after`` rounds is bit-identical to the plan of the
  search without arms in turn (the random draws are the same up to there);
- bad settings are typed errors naming the field.

The two-arm stand (tests/models/two_arm_stand.xml). Units: radians.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from planner_fixtures import STAND_ARMS, STAND_START, load_stand
from rob_twin.planners.errors import PlannerConfigError
from rob_twin.planners.group import ArmGroup, GroupConfig
from rob_twin.planners.plan import PlanStatus
from rob_twin.planners.search import SearchConfig, motion_is_free
from rob_twin.planners.timing import PlanClock

STAND_GOAL = {"a": [0.28, -0.25, -0.54, -0.25], "b": [-0.9, 0.31, -0.76, -1.61]}  # [rad]


def _stand(search_cfg: SearchConfig) -> ArmGroup:
    g = ArmGroup(load_stand(), STAND_ARMS, GroupConfig(search=search_cfg))
    for a, q in STAND_START.items():
        g.set_arm(a, q)
    return g


def test_the_path_moves_one_arm_at_a_time_and_is_free_for_both_arms():
    g = _stand(SearchConfig())
    moving = tuple(g.arm_names)
    start = np.concatenate([np.asarray(STAND_START[a], float) for a in moving])
    goal = np.concatenate([np.asarray(STAND_GOAL[a], float) for a in moving])
    padded = g.padded.session(moving, g.reference_qpos)
    rng = np.random.default_rng(3)
    path = g._search_in_turn(moving, start, goal, g._box(moving), padded, rng, PlanClock(None))
    assert path is not None
    np.testing.assert_array_equal(path[0], start)
    np.testing.assert_array_equal(path[-1], goal)
    n = len(STAND_START["a"])
    movers = []
    for p, q in zip(path, path[1:], strict=False):
        moved = [bool(np.any(p[:n] != q[:n])), bool(np.any(p[n:] != q[n:]))]
        assert sum(moved) == 1, "each edge moves exactly one arm"
        movers.append(moved.index(True))
    assert movers == sorted(movers) or movers == sorted(movers, reverse=True), (
        "one arm's whole turn, then the other's"
    )
    both = g.padded.session(moving, g.reference_qpos)
    assert all(both.is_free(q) for q in path)
    step = g.config.search.edge_step_rad
    assert all(
        motion_is_free(p, q, both.is_free, step) for p, q in zip(path, path[1:], strict=False)
    )


def test_a_problem_the_search_together_cannot_solve_in_its_rounds_is_solved_in_turn():
    """One round together finds no path for the stand's crossing arms; with the arms in
    turn after that round the plan succeeds, certified, and the same twice."""
    alone = replace(SearchConfig(), max_iterations=1, arms_in_turn_rounds=0)
    assert _stand(alone).plan(dict(STAND_GOAL), seed=2).status is PlanStatus.NO_PATH
    in_turn = replace(SearchConfig(), max_iterations=1, arms_in_turn_after=1)
    first = _stand(in_turn).plan(dict(STAND_GOAL), seed=2).unwrap()
    again = _stand(in_turn).plan(dict(STAND_GOAL), seed=2).unwrap()
    assert first.certificate is not None and first.certificate.certified
    np.testing.assert_array_equal(first.stacked(), again.stacked())
    # arms in turn first (after 0 rounds together) plans too
    at_once = replace(SearchConfig(), arms_in_turn_after=0)
    assert _stand(at_once).plan(dict(STAND_GOAL), seed=2).unwrap().certificate.certified


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_plan_found_before_the_turn_is_the_plan_without_it(seed):
    with_turn = _stand(SearchConfig()).plan(dict(STAND_GOAL), seed=seed).unwrap()
    without = _stand(replace(SearchConfig(), arms_in_turn_rounds=0))
    plain = without.plan(dict(STAND_GOAL), seed=seed).unwrap()
    np.testing.assert_array_equal(with_turn.t, plain.t)
    np.testing.assert_array_equal(with_turn.stacked(), plain.stacked())


@pytest.mark.parametrize("field", ["arms_in_turn_after", "arms_in_turn_rounds"])
def test_negative_settings_are_refused_by_name(field):
    with pytest.raises(PlannerConfigError, match=field):
        SearchConfig(**{field: -1})


@pytest.mark.parametrize(("seed", "joints"), [(2, 6), (4, 5)])
def test_arms_in_turn_plans_on_generated_robots_with_short_arms(tmp_path, seed, joints):
    """Robots nobody tuned for, with five- and six-joint arms: arms in turn first (after 0
    rounds together), from home to a drawn free goal per arm; the plan is certified and
    moves both arms from their start to their goal."""
    from rob_twin.experiments.robot_factory import generate_robot
    from rob_twin.models.robot import robot_of

    made = generate_robot(tmp_path, seed, family="ideal", joints=joints)
    robot = robot_of(str(made.robot_file))
    config = GroupConfig(search=replace(SearchConfig(), arms_in_turn_after=0))
    group = ArmGroup(robot.model(), robot.group_arms(), config)
    start = {a: robot.home(a) for a in group.arm_names}
    session = group.checker.session(tuple(group.arm_names), group.reference_qpos)
    rng = np.random.default_rng(seed)
    for _ in range(200):  # a free goal for both arms together, well away from home
        goal = {a: rng.uniform(*group.joint_limits(a)) for a in group.arm_names}
        stacked = np.concatenate([goal[a] for a in group.arm_names])
        if session.is_free(stacked) and group.clearance(goal).distance_m > 0.02:
            break
    else:
        pytest.fail("no free goal drawn")
    plan = group.plan(goal, seed=seed, start=start).unwrap()
    assert plan.certificate is not None and plan.certificate.certified
    for a in group.arm_names:
        assert len(group.joint_names(a)) == joints
        np.testing.assert_allclose(plan.arms[a].q[0], start[a], atol=1e-9)
        np.testing.assert_allclose(plan.arms[a].q[-1], goal[a], atol=1e-9)
