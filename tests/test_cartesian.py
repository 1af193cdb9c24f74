"""Lockstep Cartesian paths: straight TCP lines on one 125 Hz time base, limits held,
every sample checked; typed failures name the sample and the arm."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from planner_fixtures import ROB_ARMS, rob_home_group
from rob_twin.planners import CartesianConfig, CartesianStatus, PlanFailedError, plan_cartesian
from rob_twin.planners.cartesian import interpolate
from rob_twin.planners.kinematics import ArmKinematics
from rob_twin.planners.retime import JointLimits, limit_report


@pytest.fixture(scope="module")
def group():
    return rob_home_group()


def _targets(group, dx, dy, dz, yaw=0.2):
    out = {}
    for a, sign in (("right", -1.0), ("left", 1.0)):
        p = ArmKinematics(a).tcp_pose(group.arm_q(a))
        rot = p.rotation @ pin.exp3(np.array([0.0, 0.0, yaw * sign]))
        out[a] = pin.SE3(rot, p.translation + np.array([dx, sign * dy, dz]))
    return out


def test_lockstep_lines_on_one_time_base(group):
    targets = _targets(group, 0.08, 0.05, 0.1)
    r = plan_cartesian(group, targets)
    plan = r.unwrap()
    assert plan.rate_hz == 125.0 and set(plan.moving) == {"right", "left"}
    np.testing.assert_allclose(np.diff(plan.t), 1 / 125.0, atol=1e-12)
    assert r.max_line_deviation_m < 1e-3
    limits = JointLimits.stack([group.motion_limits(a) for a in plan.moving])
    rep = limit_report(plan.stacked(), plan.stacked("qd"), plan.stacked("qdd"), 1 / 125.0, limits)
    assert rep.respected(1e-6), rep
    assert plan.min_clearance.distance_m >= 0.005
    assert plan.checked_states >= 2 * (plan.t.size - 1)
    # lockstep: at every sample both TCPs are at the same fraction of their lines
    kin = {a: ArmKinematics(a) for a in ROB_ARMS}
    start = {a: kin[a].tcp_pose(plan.arms[a].q[0]) for a in ROB_ARMS}
    frac = {}
    for a in ROB_ARMS:
        d = targets[a].translation - start[a].translation
        frac[a] = np.array(
            [
                (kin[a].tcp_pose(q).translation - start[a].translation) @ d / (d @ d)
                for q in plan.arms[a].q[::5]
            ]
        )
    np.testing.assert_allclose(frac["right"], frac["left"], atol=0.01)
    for a in ROB_ARMS:  # ends at the targets, orientation included
        end = kin[a].tcp_pose(plan.arms[a].q[-1])
        assert np.linalg.norm(end.translation - targets[a].translation) < 1e-5
        assert np.linalg.norm(pin.log3(end.rotation.T @ targets[a].rotation)) < 1e-5


def test_line_from_home_with_j7_on_its_limit_stays_in_range(group):
    # ROB's home has J7 on its lower limit and this line wants it further: the IK pins it on
    # the bound, and a C2 spline through the kinked samples can overshoot a bound; the IK
    # samples keep limit_inset_rad from every bound so the retimed path stays in range.
    targets = _targets(group, 0.05, 0.04, 0.11, yaw=0.0)
    lo = np.concatenate([group.joint_limits(a)[0] for a in ROB_ARMS])
    hi = np.concatenate([group.joint_limits(a)[1] for a in ROB_ARMS])
    q0 = np.concatenate([group.arm_q(a) for a in ROB_ARMS])
    assert np.isclose(q0[6], lo[6]) and np.isclose(q0[13], lo[13])  # both J7 on the bound
    pinned = plan_cartesian(group, targets, CartesianConfig(limit_inset_rad=0.0))
    assert pinned.status is CartesianStatus.LIMITS and "j7 by" in pinned.reason, pinned
    r = plan_cartesian(group, targets)
    plan = r.unwrap()
    inset = CartesianConfig().limit_inset_rad
    w = plan.waypoints[1:]
    assert (w >= lo + inset - 1e-9).all() and (w <= hi - inset + 1e-9).all()
    q = plan.stacked()
    assert (q >= lo).all() and (q <= hi).all()
    limits = JointLimits.stack([group.motion_limits(a) for a in plan.moving])
    rep = limit_report(q, plan.stacked("qd"), plan.stacked("qdd"), 1 / 125.0, limits)
    assert rep.respected(1e-6), rep
    assert r.max_line_deviation_m < 1e-3 and plan.min_clearance.distance_m >= 0.005


def test_interpolate_is_lerp_and_slerp():
    a = pin.SE3(np.eye(3), np.zeros(3))
    b = pin.SE3(pin.exp3(np.array([0.0, 0.0, 1.0])), np.array([1.0, 2.0, 3.0]))
    mid = interpolate(a, b, 0.5)
    np.testing.assert_allclose(mid.translation, [0.5, 1.0, 1.5])
    np.testing.assert_allclose(pin.log3(mid.rotation), [0.0, 0.0, 0.5], atol=1e-12)


def test_unreachable_line_names_sample_and_arm(group):
    r = plan_cartesian(group, {"right": pin.SE3(np.eye(3), np.array([0.3, -0.2, 0.3]))})
    assert r.status in (CartesianStatus.IK_FAILED, CartesianStatus.JOINT_JUMP)
    f = r.failure
    assert f.arm == "right" and 0 < f.sample < f.samples and f"sample {f.sample}" in f.reason
    with pytest.raises(PlanFailedError):
        r.unwrap()


def test_colliding_line_is_refused_with_the_pair(group):
    # both TCPs to the chest midline, 0.5 m in front: the hands meet
    targets = {}
    for a in ROB_ARMS:
        p = ArmKinematics(a).tcp_pose(group.arm_q(a))
        targets[a] = pin.SE3(p.rotation, np.array([p.translation[0], 0.0, p.translation[2]]))
    r = plan_cartesian(group, targets)
    assert r.status is CartesianStatus.COLLISION, r
    assert r.failure.pair is not None and str(r.failure.pair) in r.failure.reason
    assert 0 < r.failure.sample < r.failure.samples


def test_a_joint_jump_is_refined_until_the_failure_is_named_where_it_is(group):
    """A line toward the edge of the right arm's workspace: at the default step its IK
    seems to jump (j4 beyond 0.1 rad between samples); with the samples doubled it is
    named for what it is, no solution from s = 0.87 on (the line leaves the workspace)."""
    p = ArmKinematics("right").tcp_pose(group.arm_q("right"))
    target = {"right": pin.SE3(p.rotation, p.translation + np.array([0.09, -0.32, 0.01]))}
    coarse = plan_cartesian(group, target, CartesianConfig(jump_refinements=0))
    assert coarse.status is CartesianStatus.JOINT_JUMP, coarse.failure
    refined = plan_cartesian(group, target)
    assert refined.status is CartesianStatus.IK_FAILED, refined.failure
    assert refined.failure.samples > coarse.failure.samples
    assert refined.failure.s > coarse.failure.s - 0.1


@pytest.mark.parametrize("bad", [-1, 5, 1.5])
def test_jump_refinements_outside_0_to_4_is_a_config_error(bad):
    from rob_twin.planners.errors import PlannerConfigError

    with pytest.raises(PlannerConfigError, match="jump_refinements"):
        CartesianConfig(jump_refinements=bad)
