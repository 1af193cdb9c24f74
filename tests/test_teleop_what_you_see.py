"""What the operator reads (issue 46): a refused target in plain words, a far pair not
painted as limiting, a role badge that agrees with the operator lease, and a first engage
that is not lost to a lapsed lease or a grip held from the start. Everything is read
back from the teleop session's own records (the controller's status, the telemetry and
the messages the server sends a page)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from rob_twin.models.names import Arm, group_arms
from rob_twin.planners.collision import CollisionChecker
from rob_twin.planners.ik import IKResult, IKStatus
from rob_twin.twin.sim.closed_loop import ClosedLoop
from rob_twin.twin.teleop.app import AppConfig, TeleopApp
from rob_twin.twin.teleop.clutch import HELD_AT_START, ClutchConfig
from rob_twin.twin.teleop.controller import TeleopConfig, TeleopController
from rob_twin.twin.teleop.messages import Hello, parse_message
from rob_twin.twin.teleop.refusal_words import geom_words, ik_refusal, pair_words
from rob_twin.twin.teleop.safety import ArmSafetyFilter, SafetyConfig
from rob_twin.twin.teleop.telemetry import ClearanceWarningError, TelemetrySource
from rob_twin.twin.teleop.video import VideoConfig
from teleop_support import (
    TEST_TELEOP,
    frame,
    hand,
    handled,
    hello,
    recv_each,
    recv_until,
    replay,
    run,
    start_app,
)
from teleop_support import client as ws_client

SOLVER_WORDS = ("not_converged", "unreachable", "joint_jump", "1e-06", "J1 origin", "attempts")


def _input(seq: int, pos, grip: float) -> object:
    sample = hand(pos, grip)
    return parse_message(
        json.dumps({"v": 1, "type": "input", "session": "s", "seq": seq, "t_ms": 0.0,
                    "hands": {"right": sample}})
    )  # fmt: skip


def test_an_out_of_reach_target_is_refused_in_plain_words():
    """The hand jumps 1.2 m forward in one frame (speed clamp and jump guard opened wide so
    the IK sees the target as asked): the refusal the page shows says what was asked, why
    the arm cannot, and that it holds; the solver's own line is kept apart."""
    loop = ClosedLoop()
    session = CollisionChecker(loop.twin.model, group_arms()).session(
        ("right", "left"), loop.twin.data.qpos.copy()
    )
    accel = np.array(loop.config.owner.max_acceleration)
    wide = SafetyConfig(max_tcp_speed_m_s=100.0, max_tcp_angular_speed_rad_s=100.0)
    filters = {arm: ArmSafetyFilter(arm, session, accel, config=wide) for arm in Arm}
    owners = {arm: loop.drivers[arm].owner for arm in Arm}
    cfg = TeleopConfig(clutch=ClutchConfig(jump_m=5.0))
    ctl = TeleopController(owners, filters, cfg, now=lambda: loop.time)
    ctl.hello("c", Hello("s", "operator"))
    q0 = loop.commanded(Arm.RIGHT)
    try:
        ctl.handle_input("c", _input(1, (0.0, 1.2, -0.3), 0.0), loop.time)
        loop.run_for(0.02)
        ctl.handle_input("c", _input(2, (0.0, 1.2, -0.3), 1.0), loop.time)  # engage
        loop.run_for(0.02)
        ctl.handle_input("c", _input(3, (0.0, 1.2, -1.5), 1.0), loop.time)  # 1.2 m forward
        loop.run_for(0.05)
        shown = ctl.status()["hands"]["right"]
        q1 = loop.commanded(Arm.RIGHT)
    finally:
        loop.close()
    assert ctl.counts["rejected_ik"] == 1 and ctl.counts["engagements"] == 1
    words = shown["last_reject"]
    assert words.startswith("target out of reach: your right hand asks for"), words
    assert "1200 mm from where the hand is" in words and "the arm reaches 0.74 m" in words
    assert "the arm holds its last pose" in words, words
    assert not any(w in words for w in SOLVER_WORDS), words
    assert shown["last_reject_detail"].startswith("IK unreachable"), shown
    assert np.allclose(q1, q0, atol=1e-9)  # and it did hold


@pytest.mark.parametrize(
    ("status", "expect"),
    [
        (IKStatus.NOT_CONVERGED, "cannot put the hand there in that orientation"),
        (IKStatus.JOINT_JUMP, "would swing a joint by more than 0.2 rad"),
    ],
)
def test_each_ik_failure_reads_as_asked_why_and_what_happens(status, expect):
    result = IKResult(status, (), 12, 300, 0.01, 0.0123, 0.4, "no solution within 1e-06 m")
    words = ik_refusal(
        "left",
        np.array([0.5, 0.3, 0.9]),
        np.array([0.45, 0.3, 0.9]),
        np.array([0.1, 0.2, 1.0]),
        0.74,
        result,
        0.2,
    )
    assert "your left hand asks for (0.50, 0.30, 0.90) m, 50 mm from where" in words, words
    assert expect in words and "the arm holds its last pose" in words, words
    assert not any(w in words for w in SOLVER_WORDS), words
    if status is IKStatus.NOT_CONVERGED:
        assert "closest: 12 mm off" in words


def test_geoms_and_pairs_read_as_parts_of_the_robot():
    assert geom_words("right/link2_geom") == "the right arm's link 2"
    assert geom_words("torso/shell") == "the torso"
    assert geom_words("room/wall_north") == "the north wall"
    assert geom_words("table/leg0") == "the table's leg 0"
    assert pair_words("torso/shell", "right/link2_geom") == "the right arm's link 2 and the torso"


def test_a_far_pair_is_not_painted_as_limiting_a_near_one_is():
    """At the demo's home pose the nearest pair that matters (the torso and the right arm's
    link 2) is 112 mm apart: not limiting, nothing amber. The same pair within a (here
    raised) warning distance is highlighted and named in words."""
    app = TeleopApp(AppConfig(video=VideoConfig(fps=0.0), teleop=TEST_TELEOP))
    app._build()  # built, not started: this thread is the only one touching it
    try:
        far = json.loads(app.source.telemetry())
        assert 0.03 < far["clearance_m"] < 0.2, far["clearance_m"]  # 112 mm at home
        assert app._overlay().highlight == ()  # nothing amber in the video
        assert far["clearance_limiting"] is False
        text = far["clearance_text"]
        assert text.startswith("clear: the nearest pair, the right arm's link 2"), text
        assert "limits" not in text, text
        near_source = TelemetrySource(app.loop, app.controller, app.source.clearance, None, 0.2)
        near = json.loads(near_source.telemetry())
        with pytest.raises(ClearanceWarningError, match="warning_m"):
            TelemetrySource(app.loop, app.controller, None, None, 0.0)
    finally:
        app.loop.close()
    assert near["clearance_limiting"] is True
    assert near_source.limiting_geoms == tuple(near["clearance_geoms"])
    assert near["clearance_text"].startswith(
        f"only {near['clearance_m'] * 1000:.0f} mm between the right arm's link 2 and the torso"
    ), near["clearance_text"]


def test_a_lapsed_lease_turns_the_badge_to_watcher_and_the_page_gets_it_back():
    """The page falls silent past the operator TTL (a stalled tab or a busy machine): the
    server tells the page it is a watcher now (the badge reads the same lease the
    not_operator counter does), the page asks again, and the first engage then works."""
    with start_app() as app:

        async def go():
            async with ws_client(app.server.ws_url) as ws:
                await ws.send(hello("lapse"))
                assert (await recv_until(ws, "welcome"))["role"] == "operator"
                seq = await replay(app, ws, "lapse", [((0.2, 1.2, -0.3), 0.0)] * 3)
                app.clock.advance(TEST_TELEOP.operator_ttl_s + 0.1)  # the page stalls
                told = await recv_until(ws, "role", timeout_s=10.0)  # no frame needed
                counts_then = dict(app.controller.counts)
                await ws.send(hello("lapse"))  # what the page does on "watcher"
                again = await recv_until(ws, "welcome")
                seq = await replay(
                    app, ws, "lapse", [((0.2, 1.2, -0.3), 0.0)] + [((0.2, 1.2, -0.3), 1.0)] * 3, seq
                )
                await handled(app, "lapse", seq)
                return told, counts_then, again, app.controller.hands[Arm.RIGHT].clutch.engaged

        told, counts_then, again, engaged = run(go())
        c = app.controller.counts
    assert told["role"] == "watcher" and "lapsed" in told["reason"], told
    assert counts_then["operator_lease_lapses"] == 1
    assert again["role"] == "operator"
    assert c.get("not_operator", 0) == 0  # no frame was sent under a wrong badge
    assert engaged and c["engagements"] == 1, dict(c)
    assert c["role_changes_to_watcher"] == 1


def test_a_frame_in_flight_after_a_lapse_is_refused_with_the_reason_and_the_role():
    with start_app() as app:

        async def go():
            async with ws_client(app.server.ws_url) as ws:
                await ws.send(hello("fly"))
                await recv_until(ws, "welcome")
                seq = await replay(app, ws, "fly", [((0.2, 1.2, -0.3), 0.0)] * 2)
                app.clock.advance(TEST_TELEOP.operator_ttl_s + 0.1)
                await ws.send(frame("fly", seq + 1, right=hand((0.2, 1.2, -0.3), 0.0)))
                # the poll task may tell the lapse (role) before the frame is refused
                got = await recv_each(ws, ("refused", "role"), timeout_s=10.0)
                return got["refused"], got["role"]

        refused, role = run(go())
    assert "operator lease lapsed" in refused["reason"], refused
    assert role["role"] == "watcher"


def test_a_grip_held_from_the_start_says_why_it_does_not_engage():
    with start_app() as app:

        async def go():
            async with ws_client(app.server.ws_url) as ws:
                await ws.send(hello("held"))
                await recv_until(ws, "welcome")
                seq = await replay(app, ws, "held", [((0.2, 1.2, -0.3), 1.0)] * 3)
                waiting = app.controller.status()["hands"]["right"]
                seq = await replay(
                    app, ws, "held", [((0.2, 1.2, -0.3), 0.0), ((0.2, 1.2, -0.3), 1.0)], seq
                )
                return waiting, app.controller.status()["hands"]["right"]

        waiting, after = run(go())
    assert not waiting["engaged"] and waiting["reason"] == HELD_AT_START, waiting
    assert after["engaged"] and after["reason"] == "", after
