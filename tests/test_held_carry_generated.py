"""A held-box carry on a generated Amber robot nobody tuned (seed 21, seven joints): the left
arm's carry is fast (0.74 rad/s, 2 rad/s^2 on its elbow) yet inside the owners' limits. The
targets streamed to its owner must be states its jerk-limited Ruckig reaches in one period:
linearly interpolated (p, v, a) between the plan's 125 Hz samples were not, and the owner fell
0.32 rad behind the plan while the right arm kept to it, squeezing the box with 194 N."""

from __future__ import annotations

import numpy as np
import pytest
from rob_twin.models.names import Arm
from rob_twin.twin.rehearsal.gates import RehearsalConfig
from rob_twin.twin.rehearsal.held_gate import HeldGateConfig, gate_held_object
from rob_twin.twin.sim.held_carry import (
    carry_duration,
    carry_plan,
    carry_trajectory,
    dispatch_carry,
    sample,
)
from rob_twin.twin.sim.held_object import HeldBoxConfig, held_closed_loop
from rob_twin.twin.sim.loops import loop_config

CARRY_M = (0.05, 0.0, 0.0)  # the first carry the planner allows on this robot


@pytest.fixture(scope="module")
def robot_file(tmp_path_factory):
    from rob_twin.experiments.robot_factory import generate_robot

    made = generate_robot(tmp_path_factory.mktemp("g21"), 21, family="amber", joints=7)
    return str(made.robot_file)


@pytest.fixture(scope="module")
def carried(robot_file):
    """The carry streamed on the closed loop: the plan, each arm's largest distance of its
    owner's commanded state from the plan [rad], the largest internal force [N]."""
    loop, held = held_closed_loop(loop_config(robot_file), HeldBoxConfig())
    with loop:
        loop.run_for(0.2)
        held.grasp()
        loop.run_for(0.2)
        plan = carry_plan(loop, CARRY_M)
        traj = carry_trajectory(plan)
        start = loop.time
        dispatch_carry(loop, plan, start)
        lag = {arm: 0.0 for arm in Arm}
        internal = 0.0
        while loop.time < start + carry_duration(plan) + 0.2:
            loop.twin.step(5)
            for arm in Arm:
                ref = traj.sample(arm, loop.time - start)[0]
                lag[arm] = max(lag[arm], float(np.abs(loop.commanded(arm) - ref).max()))
            internal = max(internal, float(np.linalg.norm(held.wrench().internal_n)))
        faults = [d.owner.fault for d in loop.drivers.values()]
    return plan, lag, internal, faults


def test_the_left_arm_is_the_fast_one_yet_inside_the_owners_limits(carried):
    plan, *_ = carried
    peak = {a: np.abs(plan.arms[a.value].qd).max() for a in Arm}
    assert peak[Arm.LEFT] > 2 * peak[Arm.RIGHT]
    assert peak[Arm.LEFT] < 1.0 and np.abs(plan.arms["left"].qdd).max() < 3.0


def test_both_owners_follow_the_streamed_carry(carried):
    _, lag, internal, faults = carried
    assert faults == [None, None]
    assert lag[Arm.LEFT] < 0.01 and lag[Arm.RIGHT] < 0.01, lag  # was 0.32 rad on the left
    assert internal < 10.0  # was 194 N


def test_streamed_positions_velocities_and_accelerations_agree(carried):
    """Between the plan's samples the streamed position's rate is the streamed velocity, and the
    velocity's rate the acceleration: linear interpolation of each broke this by a * h / 2."""
    plan, *_ = carried
    h = float(plan.t[1] - plan.t[0])
    eps = 1e-5
    for k in range(0, len(plan.t) - 1, 7):
        t = float(plan.t[k]) + 0.3 * h
        p0, v0, a0 = sample(plan, Arm.LEFT, t - eps)
        p1, v1, a1 = sample(plan, Arm.LEFT, t + eps)
        _, v, a = sample(plan, Arm.LEFT, t)
        assert np.abs((p1 - p0) / (2 * eps) - v).max() < 1e-4
        assert np.abs((v1 - v0) / (2 * eps) - a).max() < 1e-2
    p, v, a = sample(plan, Arm.LEFT, carry_duration(plan) + 0.1)
    assert np.array_equal(p, plan.arms["left"].q[-1]) and not v.any() and not a.any()


def test_the_held_object_gate_passes_on_the_generated_robot(robot_file):
    res = gate_held_object(
        RehearsalConfig(base=loop_config(robot_file)),
        HeldGateConfig(translation_m=CARRY_M, other_translations_m=()),
    )
    assert res.passed, res.detail
    assert res.figures["carry_m"] == list(CARRY_M)
    assert res.figures["carry_peak_internal_force_n"] < 10.0
