"""The frozen hard problem sets: every straight motion collides, every end is free; the
baseline planner solves one and its trajectory ends at the goal."""

from __future__ import annotations

import numpy as np
import pytest
from rob_twin.experiments.hard_problems import (
    KINDS,
    MIN_END_CLEARANCE_M,
    groups,
    load,
    straight_collides,
)
from rob_twin.experiments.rrt_baseline import plan_baseline


@pytest.fixture(scope="module")
def sets():
    return groups()


@pytest.mark.parametrize("name", ["rob", "stand"])
def test_frozen_problems_are_hard_and_well_posed(sets, name):
    group = sets[name]
    problems = load(name)
    assert len(problems) >= 30
    assert {p.kind for p in problems} == set(KINDS)
    moving = tuple(group.arm_names)
    session = group.checker.session(moving, group.reference_qpos)
    meter = group.meter.session(moving, group.reference_qpos)
    for p in problems[::4]:  # a sample keeps the test fast; the generator checked all
        qs = np.concatenate([p.start[a] for a in moving])
        qg = np.concatenate([p.goal[a] for a in moving])
        assert meter.clearance(qs).distance_m >= MIN_END_CLEARANCE_M
        assert meter.clearance(qg).distance_m >= MIN_END_CLEARANCE_M
        assert straight_collides(session, qs, qg)
        if p.kind == "parked":
            assert any(np.array_equal(p.start[a], p.goal[a]) for a in moving)


def test_baseline_solves_a_stand_problem(sets):
    group = sets["stand"]
    p = load("stand")[0]
    moving = tuple(group.arm_names)
    session = group.checker.session(moving, group.reference_qpos)
    qs = np.concatenate([p.start[a] for a in moving])
    qg = np.concatenate([p.goal[a] for a in moving])
    lo = np.concatenate([group.joint_limits(a)[0] for a in moving])
    hi = np.concatenate([group.joint_limits(a)[1] for a in moving])
    r = plan_baseline(session, qs, qg, lo, hi, 1.0, 2.5, seed=0)
    assert r.ok, r.reason
    assert r.waypoints >= 3  # the straight motion collides, so the path bends
    assert r.duration_s > 0
