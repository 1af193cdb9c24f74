"""Teleop pieces without a network: the wire protocol, the clutch, the safety filter, and
the controller against real owners in lockstep (re-clutching with a still controller)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from rob_twin.models.errors import RobTwinError
from rob_twin.models.names import Arm, group_arms
from rob_twin.planners.collision import CollisionChecker
from rob_twin.twin.sim.closed_loop import ClosedLoop
from rob_twin.twin.teleop.clutch import ClutchEvent, HandClutch
from rob_twin.twin.teleop.controller import TeleopController
from rob_twin.twin.teleop.messages import Hello, InputFrame, TeleopMessageError, parse_message
from rob_twin.twin.teleop.safety import ArmSafetyFilter


def _frame(seq=1, **hands):
    return json.dumps(
        {"v": 1, "type": "input", "session": "s", "seq": seq, "t_ms": 0.0, "hands": hands}
    )


def _hand(pos=(0.0, 1.2, -0.3), grip=0.0, quat=(0.0, 0.0, 0.0, 1.0), tracked=True):
    return {
        "tracked": tracked,
        "position": list(pos),
        "orientation": list(quat),
        "grip": grip,
        "trigger": 0.0,
    }


def test_messages_parse_and_refuse_with_typed_errors():
    msg = parse_message(_frame(7, right=_hand(grip=1.0)))
    assert isinstance(msg, InputFrame) and msg.seq == 7 and msg.hands[Arm.RIGHT].grip == 1.0
    assert parse_message('{"v": 1, "type": "hello", "session": "a", "role": "watcher"}') == Hello(
        "a", "watcher"
    )
    bad = {
        "{oops": "JSON",
        '{"v": 9, "type": "hello", "session": "a", "role": "operator"}': "protocol version 1",
        '{"v": 1, "type": "hello", "session": "a", "role": "king"}': "operator, watcher",
        _frame(right=_hand(quat=(0, 0, 0, 2))): "unit quaternion",
        _frame(middle=_hand()): "right, left",
        _frame(right=_hand(grip=1.5)): "[0.0, 1.0]",
        _frame(seq=True, right=_hand()): "integer",
        _frame(seq=-1, right=_hand()): "integer",
        "x" * 5000: "4096 bytes",
    }
    for text, valid in bad.items():
        with pytest.raises(TeleopMessageError) as err:
            parse_message(text)
        assert isinstance(err.value, RobTwinError) and valid in str(err.value), (
            text[:40],
            str(err.value),
        )


def test_clutch_engages_on_a_fresh_press_and_maps_xr_motion_to_the_robot_frame():
    import pinocchio as pin
    from rob_twin.twin.teleop.messages import HandSample

    anchor = pin.SE3(np.eye(3), np.array([0.4, -0.2, 0.9]))

    def s(pos, grip, tracked=True):
        return HandSample(tracked, np.array(pos, float), np.array([0.0, 0.0, 0.0, 1.0]), grip, 0.0)

    c = HandClutch()
    assert c.step(s((0, 1, 0), 1.0), lambda: anchor).event is ClutchEvent.IDLE  # held at start
    assert c.step(s((0, 1, 0), 0.0), lambda: anchor).event is ClutchEvent.IDLE
    st = c.step(s((0, 1, 0), 1.0), lambda: anchor)
    assert st.event is ClutchEvent.ENGAGED and st.still and st.target == anchor
    st = c.step(s((0, 1, 0), 1.0), lambda: anchor)
    assert st.still and st.target == anchor  # a still controller targets exactly the anchor
    st = c.step(s((0.01, 1.02, -0.03), 1.0), lambda: anchor)  # right 1 cm, up 2 cm, forward 3 cm
    assert np.allclose(st.target.translation - anchor.translation, [0.03, -0.01, 0.02])
    st = c.step(s((0.2, 1.02, -0.03), 1.0), lambda: anchor)  # 19 cm jump
    assert st.event is ClutchEvent.DISENGAGED and "pose jump" in st.reason


def _filter_setup():
    loop = ClosedLoop()
    model = loop.twin.model
    session = CollisionChecker(model, group_arms()).session(
        ("right", "left"), loop.twin.data.qpos.copy()
    )
    accel = np.array(loop.config.owner.max_acceleration)
    filters = {arm: ArmSafetyFilter(arm, session, accel) for arm in Arm}
    return loop, filters


def test_filter_refuses_a_target_pushed_into_the_table_and_keeps_the_last_one():
    loop, filters = _filter_setup()
    f = filters[Arm.RIGHT]
    q = loop.commanded(Arm.RIGHT)
    left = loop.commanded(Arm.LEFT)
    zero = np.zeros(7)
    accepted, refusal = 0, None
    for _ in range(200):  # push the TCP straight down, 1.25 cm (the speed clamp) per step
        pose = f.tcp_pose(q)
        target = type(pose)(pose.rotation, pose.translation - np.array([0.0, 0.0, 0.05]))
        res = f.filter(target, q, zero, 0.05, [left])
        if not res.accepted:
            refusal = res
            break
        assert res.tcp_clamped
        assert float(np.max(np.abs(res.q - q))) <= f.config.max_joint_step_rad + 1e-12
        q, accepted = res.q, accepted + 1
    loop.close()
    assert refusal is not None and accepted > 3
    assert refusal.check in ("goal", "collision", "ik") and refusal.reason
    assert refusal.q is None  # nothing to submit: the arm stays on its last accepted target


def test_filter_checks_arm_against_arm_at_the_target_and_on_the_stopping_path():
    loop, filters = _filter_setup()
    f = filters[Arm.RIGHT]
    q = loop.commanded(Arm.RIGHT)
    loop.close()
    session, rng = f.collision, np.random.default_rng(0)
    lo, hi = f.kin.lower, f.kin.upper
    left = loop.commanded(Arm.LEFT)
    hit_at_target = delta = None
    for _ in range(5000):  # a left-arm configuration that touches the right arm
        other = rng.uniform(lo, hi)
        if not session.is_free(np.concatenate([q, other])):
            hit_at_target = other
            break
    for _ in range(2000):  # a braking displacement that runs the right arm into something
        d = np.clip(q + rng.uniform(-1.0, 1.0, 7), lo, hi) - q
        if not all(session.is_free(np.concatenate([q + d * k / 10, left])) for k in range(1, 11)):
            delta = d
            break
    assert hit_at_target is not None and delta is not None
    res = f.filter(f.tcp_pose(q), q, np.zeros(7), 0.01, [hit_at_target], still=True)
    assert not res.accepted and res.check == "collision" and "on the target" in res.reason
    v = np.sign(delta) * np.sqrt(2.0 * f.accel * np.abs(delta))  # brake distance v|v|/2a = delta
    assert f.filter(f.tcp_pose(q), q, np.zeros(7), 0.01, [left], still=True).accepted
    res = f.filter(f.tcp_pose(q), q, v, 0.01, [left], still=True)
    assert not res.accepted and "stopping path" in res.reason, res.reason


def test_reclutching_with_a_still_controller_moves_nothing():
    loop, filters = _filter_setup()
    owners = {arm: loop.drivers[arm].owner for arm in Arm}
    ctl = TeleopController(owners, filters, now=lambda: loop.time)
    ctl.hello("c", Hello("s", "operator"))
    rng = np.random.default_rng(3)
    seq, worst = 0, 0.0

    def send(pos, quat, grip):
        nonlocal seq
        seq += 1
        ctl.handle_input("c", parse_message(_frame(seq, right=_hand(pos, grip, quat))), loop.time)
        loop.run_for(0.011)
        ctl.poll()

    for k in range(12):
        pos = rng.uniform([-0.3, 0.9, -0.6], [0.3, 1.5, 0.0])
        quat = rng.normal(size=4)
        quat /= np.linalg.norm(quat)
        send(pos, quat, 0.0)
        loop.run_for(0.3)  # settle: the arm is at rest
        before = loop.commanded(Arm.RIGHT)
        for _ in range(5):  # press and hold still
            send(pos, quat, 1.0)
        assert ctl.hands[Arm.RIGHT].clutch.engaged
        worst = max(worst, float(np.max(np.abs(loop.commanded(Arm.RIGHT) - before))))
        if k % 3 == 0:  # now and then a real move, so the next re-clutch starts elsewhere
            for i in range(15):
                send(pos + np.array([0.0, 0.0, -0.002 * i]), quat, 1.0)
        send(pos, quat, 0.0)
    loop.close()
    assert ctl.counts["engagements"] == 12
    assert ctl.counts["targets_at_rest_skipped"] >= 12 * 4  # still frames: checked, nothing to send
    assert ctl.counts["targets_submitted"] >= 30  # the real moves went to the owner
    assert worst <= 1e-9, worst
    assert math.isfinite(worst)


def test_spare_degree_of_freedom_keeps_joints_away_from_their_limits():
    import pinocchio as pin
    from rob_twin.twin.teleop.safety import SafetyConfig

    loop, _ = _filter_setup()
    session = CollisionChecker(loop.twin.model, group_arms()).session(
        ("right", "left"), loop.twin.data.qpos.copy()
    )
    accel = np.array(loop.config.owner.max_acceleration)
    q0, left = loop.commanded(Arm.RIGHT), loop.commanded(Arm.LEFT)
    loop.close()
    margins = {}
    for gain in (0.0, 0.5):  # the same loop of TCP targets, without and with the null-space bias
        f = ArmSafetyFilter(
            Arm.RIGHT, session, accel, config=SafetyConfig(nullspace_rad_per_m=gain)
        )
        q, start, accepted = q0.copy(), f.tcp_pose(q0), 0
        for i in range(60):
            a = 2 * np.pi * i / 60
            offset = 0.08 * np.array([np.cos(a) - 1, np.sin(a), 0.3 * np.sin(2 * a)])
            res = f.filter(
                pin.SE3(start.rotation, start.translation + offset), q, np.zeros(7), 0.05, [left]
            )
            if res.accepted:  # a refused step (IK at a limit) keeps q, as in teleop
                q, accepted = res.q, accepted + 1
        assert accepted > 40
        margins[gain] = float(np.min(np.minimum(q - f.kin.lower, f.kin.upper - q)))
    assert q0[6] == f.kin.lower[6]  # home starts with j7 on its limit
    assert margins[0.5] > margins[0.0] + 0.05, margins
