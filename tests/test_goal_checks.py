"""Goal checks: each violation names the limit and the excess; speeds agree with FK differences."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from rob_twin.models import dimensions as D
from rob_twin.models.names import TORSO_JOINT, Arm
from rob_twin.planners.errors import KinematicsInputError, PlannerConfigError
from rob_twin.planners.goal_checks import (
    CheckKind,
    GoalCheckConfig,
    check_goal,
    check_joint_limits,
    check_static_torque,
    check_tcp_speed,
    check_workspace,
    default_config,
)
from rob_twin.planners.kinematics import ArmKinematics, Payload

HOME = np.array(D.HOME_ARM_POSE)


@pytest.fixture(scope="module")
def kin():
    return ArmKinematics(Arm.RIGHT)


def test_joint_limits_name_the_joint_the_side_and_the_excess(kin):
    assert check_joint_limits(kin, HOME, torso=0.0).ok
    q = HOME.copy()
    q[3] = kin.upper[3] + 0.2
    q[5] = kin.lower[5] - 0.05
    res = check_joint_limits(kin, q, torso=2.9)
    assert res.kind is CheckKind.JOINT_POSITION and not res.ok
    found = {v.limit: v for v in res.violations}
    assert set(found) == {"right/j4 upper", "right/j6 lower", f"{TORSO_JOINT} upper"}
    assert found["right/j4 upper"].excess == pytest.approx(0.2)
    assert found["right/j6 lower"].excess == pytest.approx(0.05)
    assert found[f"{TORSO_JOINT} upper"].excess == pytest.approx(0.3)
    assert res.worst.limit == f"{TORSO_JOINT} upper" and res.margin == pytest.approx(-0.3)
    assert "right/j4 upper: 2.643 rad is beyond 2.443 rad by 0.2 rad" in res.message
    # A margin shrinks the limits.
    q = HOME.copy()
    q[0] = kin.upper[0] - 0.01
    assert check_joint_limits(kin, q).ok
    assert check_joint_limits(kin, q, margin_rad=0.05).violations[0].excess == pytest.approx(0.04)


def test_static_torque_uses_rnea_with_payload_against_the_effort_limits(kin):
    q = np.array([1.57, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])  # arm stretched out horizontally
    light = check_static_torque(kin, q)
    assert light.ok and light.kind is CheckKind.STATIC_TORQUE
    tau = kin.gravity_torques(q, 0.0, Payload(6.0))
    heavy = check_static_torque(kin, q, payload=Payload(6.0))
    over = {v.limit.rsplit(" ", 1)[0]: v for v in heavy.violations}  # "right/j4 effort upper"
    assert not heavy.ok and {"right/j4 effort", "right/j7 effort"} <= set(over)
    for j, name in enumerate(kin.joint_names):
        if abs(tau[j]) > kin.effort_limit[j]:
            v = over[f"{name} effort"]
            assert v.excess == pytest.approx(abs(tau[j]) - kin.effort_limit[j]) and v.unit == "Nm"
        else:
            assert f"{name} effort" not in over
    # The fraction scales the limit.
    frac = check_static_torque(kin, q, fraction=0.1)
    assert not frac.ok and max(v.bound for v in frac.violations) <= 0.1 * 40.0 + 1e-12


def test_workspace_checks_table_clearance_and_reach_box():
    cfg = default_config()
    above = np.array([0.7, -0.2, cfg.table_top_z_m + 0.10])
    assert check_workspace(above, cfg).ok
    low = np.array([0.7, -0.2, cfg.table_top_z_m + 0.01])
    res = check_workspace(low, cfg)
    assert [v.limit for v in res.violations] == ["table clearance z lower"]
    assert res.violations[0].excess == pytest.approx(cfg.table_margin_m - 0.01)
    beside = np.array([0.1, -0.7, cfg.table_top_z_m - 0.2])  # low, but not over the table
    assert check_workspace(beside, cfg).ok
    out = check_workspace(np.array([1.5, 0.0, 0.1]), cfg)
    assert {v.limit for v in out.violations} == {"reach box x upper", "reach box z lower"}
    custom = dataclasses.replace(cfg, table_margin_m=0.0)
    assert check_workspace(low, custom).ok


def test_tcp_speed_matches_finite_differences_of_fk_and_names_the_sample(kin):
    dt = 1.0 / 125
    t = np.arange(0.0, 0.5, dt)
    amp = np.array([0.3, 0.2, -0.3, 0.2, 0.4, 0.2, -0.4])
    q = HOME + amp * np.sin(3 * t)[:, None]
    qd = amp * 3 * np.cos(3 * t)[:, None]
    torso, rate = 0.2 * t, np.full(t.shape, 0.2)
    res = check_tcp_speed(kin, q, qd, torso, rate, max_speed_m_s=10.0)
    assert res.ok
    # Speed from the Jacobian agrees with central differences of FK positions.
    h = 1e-6
    for i in (0, 20, 50):
        p = [
            kin.tcp_pose(q[i] + s * h * qd[i], torso[i] + s * h * rate[i]).translation
            for s in (1, -1)
        ]
        fd = np.linalg.norm(p[0] - p[1]) / (2 * h)
        one = check_tcp_speed(
            kin, q[i : i + 1], qd[i : i + 1], torso[i], rate[i], max_speed_m_s=1e-9
        )
        assert one.violations[0].value == pytest.approx(fd, rel=1e-6)
    limit = 0.5 * (10.0 - res.margin)  # half the peak speed: some samples must fail
    slow = check_tcp_speed(kin, q, qd, torso, rate, max_speed_m_s=limit)
    assert not slow.ok and all(
        v.value > limit and v.excess == pytest.approx(v.value - limit) for v in slow.violations
    )
    assert all(v.sample is not None and 0 <= v.sample < len(t) for v in slow.violations)
    assert "at sample" in slow.message
    # The torso turning alone moves the TCP.
    spin = check_tcp_speed(kin, HOME[None], np.zeros((1, 7)), 0.0, 1.0, max_speed_m_s=1e-3)
    assert spin.violations[0].value > 0.1


def test_check_goal_reports_every_kind(kin):
    report = check_goal(kin, HOME, 0.0)
    assert report.ok, report.message
    assert [r.kind for r in report.results] == [
        CheckKind.JOINT_POSITION,
        CheckKind.STATIC_TORQUE,
        CheckKind.WORKSPACE,
    ]
    bad = HOME.copy()
    bad[3] = 2.6
    report = check_goal(kin, bad, 0.0, payload=Payload(4.0))
    assert not report.ok and any(v.limit == "right/j4 upper" for v in report.violations)


def test_bad_inputs_and_configs_raise_typed_errors(kin):
    with pytest.raises(KinematicsInputError, match="3 finite coordinates"):
        check_workspace(np.array([0.0, np.nan, 1.0]))
    with pytest.raises(KinematicsInputError, match=r"\(T, 7\)"):
        check_tcp_speed(kin, np.zeros((3, 7)), np.zeros((2, 7)))
    with pytest.raises(PlannerConfigError, match="max_speed_m_s"):
        check_tcp_speed(kin, np.zeros((1, 7)), np.zeros((1, 7)), max_speed_m_s=0.0)
    with pytest.raises(PlannerConfigError, match="torque_fraction=1.5"):
        GoalCheckConfig(torque_fraction=1.5)
    with pytest.raises(PlannerConfigError, match="min < max"):
        GoalCheckConfig(box_min_m=(1.0, 0.0, 0.0), box_max_m=(0.0, 1.0, 1.0))
