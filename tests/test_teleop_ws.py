"""Scripted clients replay controller traces over the real websocket on 127.0.0.1, with
faults: dropouts, jumps, stale sequences, a second operator, a client that stops reading,
malformed and oversized frames, floods."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
from rob_twin.controllers.owner_types import Mode
from rob_twin.models.names import Arm
from rob_twin.twin.teleop.server import ServerConfig
from rob_twin.twin.teleop.video import VideoConfig
from teleop_support import (
    TEST_INPUT_TIMEOUT_S,
    WAIT_S,
    circle_trace,
    client,
    closed,
    frame,
    hand,
    handled,
    hello,
    recv_until,
    replay,
    run,
    start_app,
)
from websockets.asyncio.client import connect


def _cmd(app, arm=Arm.RIGHT):
    return app.controller.owners[arm].commanded_state()[0]


def test_trace_moves_arm_release_holds_with_fresh_generation():
    with start_app() as app:
        owner = app.controller.owners[Arm.RIGHT]
        q0, gen0 = _cmd(app), owner.generation

        async def go():
            async with client(app.server.ws_url) as ws:
                await ws.send(hello("trace"))
                assert (await recv_until(ws, "welcome"))["role"] == "operator"
                seq = await replay(app, ws, "trace", circle_trace(95))
                assert app.controller.hands[Arm.RIGHT].clutch.engaged
                moved = float(np.max(np.abs(_cmd(app) - q0)))
                await replay(app, ws, "trace", [((0.23, 1.2, -0.3), 0.0)] * 3, seq)  # grip released
                return moved

        moved = run(go())
        assert moved > 0.01
        c = app.controller.counts
        assert c["engagements"] == 1 and c["targets_submitted"] > 60 and c["disengaged_grip"] == 1
        assert owner.generation == gen0 + 1  # release -> fresh generation
        assert owner.mode in (Mode.BRAKING, Mode.HOLD)
        assert not app.controller.hands[Arm.RIGHT].clutch.engaged


def test_stale_and_out_of_order_frames_are_dropped_and_counted():
    with start_app() as app:

        async def go():
            async with client(app.server.ws_url) as ws:
                await ws.send(hello("seq"))
                await recv_until(ws, "welcome")
                seq = await replay(app, ws, "seq", circle_trace(20))
                q = _cmd(app)
                # a replayed old frame with a far-away pose would be a jump if it were applied
                await ws.send(frame("seq", seq - 5, right=hand((0.9, 0.2, 0.4), 1.0)))
                await ws.send(frame("seq", seq, right=hand((0.9, 0.2, 0.4), 1.0)))
                refused = await recv_until(ws, "refused")
                await handled(app, "seq", seq)
                assert app.controller.hands[
                    Arm.RIGHT
                ].clutch.engaged  # the stale jump was not applied
                return q, refused

        q, refused = run(go())
        assert "stale frame" in refused["reason"]
        assert app.controller.counts["stale_dropped"] == 2
        assert app.controller.counts["pose_jumps"] == 0


def test_pose_jump_and_tracking_loss_disengage_until_fresh_press():
    with start_app() as app:
        owner = app.controller.owners[Arm.RIGHT]

        async def go():
            async with client(app.server.ws_url) as ws:
                await ws.send(hello("jump"))
                await recv_until(ws, "welcome")
                seq = await replay(app, ws, "jump", circle_trace(15))
                assert app.controller.hands[Arm.RIGHT].clutch.engaged
                gen = owner.generation
                seq = await replay(
                    app, ws, "jump", [((0.4, 1.2, -0.3), 1.0)], seq
                )  # 17 cm teleport
                hand_state = app.controller.hands[Arm.RIGHT]
                assert (
                    not hand_state.clutch.engaged and "pose jump" in hand_state.clutch.last_reason
                )
                assert owner.generation == gen + 1
                seq = await replay(
                    app, ws, "jump", [((0.4, 1.2, -0.3), 1.0)] * 5, seq
                )  # still held
                assert not hand_state.clutch.engaged
                seq = await replay(
                    app, ws, "jump", [((0.4, 1.2, -0.3), 0.0), ((0.4, 1.2, -0.3), 1.0)], seq
                )
                assert hand_state.clutch.engaged  # fresh press
                await ws.send(
                    frame("jump", seq + 1, right=hand((0.4, 1.2, -0.3), 1.0, tracked=False))
                )
                await handled(app, "jump", seq + 1)
                assert (
                    not hand_state.clutch.engaged
                    and "tracking lost" in hand_state.clutch.last_reason
                )
                await replay(app, ws, "jump", [((0.4, 1.2, -0.3), 1.0)] * 3, seq + 1)
                assert not hand_state.clutch.engaged

        run(go())
        assert app.controller.counts["pose_jumps"] == 1
        assert app.controller.counts["tracking_losses"] == 1


@pytest.mark.realtime
def test_dropout_brakes_the_arm_and_needs_a_fresh_press(machine_jitter):
    # the staleness brake is a wall-clock bound: the real clock here, and the bound is
    # measured on the server's own stamps (last input handled -> brake), not the test's;
    # its 0.3 s slack is widened by the measured jitter on a busy machine
    slack_s = machine_jitter.widen(0.3)
    with start_app(real_clock=True) as app:
        owner, ctl = app.controller.owners[Arm.RIGHT], app.controller

        async def go():
            async with client(app.server.ws_url) as ws:
                await ws.send(hello("drop"))
                await recv_until(ws, "welcome")
                seq = 0
                for pos, grip in circle_trace(5, grip_after=1):  # open, press, move: back to back
                    seq += 1
                    await ws.send(frame("drop", seq, right=hand(pos, grip)))
                await handled(app, "drop", seq)
                gen = owner.generation
                assert ctl.hands[Arm.RIGHT].clutch.engaged and ctl.counts["engagements"] == 1
                last_input_s = ctl.hands[Arm.RIGHT].last_input_s
                # a dropout: nothing more is sent until the server brakes on its own
                await asyncio.to_thread(
                    app.server.progress.wait_for,
                    lambda: ctl.counts["staleness_brakes"] >= 1,
                    "a staleness brake",
                    WAIT_S,
                )
                assert owner.generation == gen + 1 and owner.mode in (Mode.BRAKING, Mode.HOLD)
                await replay(
                    app, ws, "drop", circle_trace(10, grip_after=0), seq
                )  # grip still held
                assert not ctl.hands[Arm.RIGHT].clutch.engaged
                return last_input_s

        last_input_s = run(go())
        assert ctl.counts["staleness_brakes"] == 1
        arm, reason, _ = ctl.brake_log[0]
        assert arm is Arm.RIGHT and "input stale" in reason
        [(arm, stale_from_s, brake_s)] = ctl.staleness_log
        assert (
            arm is Arm.RIGHT and stale_from_s == last_input_s
        )  # braked on the dropout after the last frame
        # never before the timeout; within 0.3 s after it (the server polls at 200 Hz)
        assert TEST_INPUT_TIMEOUT_S < brake_s - stale_from_s <= TEST_INPUT_TIMEOUT_S + slack_s, (
            brake_s - stale_from_s,
            str(machine_jitter),
        )


def test_second_operator_is_a_watcher_until_the_lease_is_free():
    with start_app() as app:

        async def go():
            async with client(app.server.ws_url) as first:
                await first.send(hello("one"))
                assert (await recv_until(first, "welcome"))["role"] == "operator"
                seq = await replay(app, first, "one", circle_trace(10))
                async with client(app.server.ws_url) as second:
                    await second.send(hello("two"))
                    assert (await recv_until(second, "welcome"))["role"] == "watcher"
                    await second.send(frame("two", 1, right=hand((0.5, 1.0, -0.2), 1.0)))
                    assert "watcher" in (await recv_until(second, "refused"))["reason"]
                    telemetry = await recv_until(second, "telemetry")  # watchers get telemetry
                    assert telemetry["teleop"]["hands"]["right"]["engaged"]
                    await replay(app, first, "one", circle_trace(5, grip_after=0), seq)
                    await first.close()  # operator socket lost: both hands brake, lease free
                    await closed(app, "client-1")
                    assert not app.controller.hands[Arm.RIGHT].clutch.engaged
                    assert app.controller.counts["operator_socket_losses"] == 1
                    await second.send(hello("two"))
                    assert (await recv_until(second, "welcome"))["role"] == "operator"

        run(go())
        c = app.controller.counts
        assert c["not_operator"] == 1 and c["operator_grants"] == 2


def test_client_that_stops_reading_does_not_stall_control_and_is_closed():
    cfg = ServerConfig(host="127.0.0.1", port=0, ping_interval_s=0.3, ping_timeout_s=0.8)
    with start_app(server=cfg) as app:

        async def go():
            stalled = await connect(
                app.server.ws_url, max_queue=1, close_timeout=0.5
            )  # never read: reading pauses
            await stalled.send(hello("stall", "watcher"))
            async with client(app.server.ws_url) as op, client(app.server.ws_url) as good:
                await op.send(hello("op"))
                await recv_until(op, "welcome")
                await good.send(hello("good", "watcher"))
                await recv_until(good, "welcome")
                frames = 0

                async def read_good():
                    nonlocal frames
                    async for raw in good:
                        frames += json.loads(raw)["type"] == "telemetry"

                reader = asyncio.create_task(read_good())
                before = app.controller.counts["targets_submitted"]
                seq = await replay(app, op, "op", circle_trace(140))  # 1.5 s of input
                submitted = app.controller.counts["targets_submitted"] - before
                reader.cancel()
                await replay(app, op, "op", [((0.2, 1.2, -0.3), 0.0)], seq)
                await closed(
                    app, "client-1"
                )  # the keepalive timeout closed the client that stopped reading
                closed_while_others_open = list(app.server.progress.closed)
            await stalled.close()
            return submitted, frames, closed_while_others_open

        submitted, frames, closed_ids = run(go())
        assert submitted >= 100  # control went on: the applied frames became targets
        assert frames >= 10
        assert closed_ids == [
            "client-1"
        ]  # only the stalled client; the operator and the reader stayed


def test_malformed_oversize_and_flooding_frames_are_dropped_and_counted():
    with start_app() as app:

        async def go():
            async with client(app.server.ws_url) as ws:
                await ws.send(hello("bad"))
                await recv_until(ws, "welcome")
                await ws.send("{not json")
                assert "JSON" in (await recv_until(ws, "error"))["reason"]
                await ws.send(json.dumps({"v": 2, "type": "input", "session": "bad"}))
                assert "protocol version" in (await recv_until(ws, "error"))["reason"]
                nan = frame("bad", 1, right=hand((0.2, 1.2, -0.3), 1.0)).replace("1.2", "NaN", 1)
                await ws.send(nan)
                assert "finite" in (await recv_until(ws, "error"))["reason"]
                await ws.send("x" * 5000)
                assert "5000 bytes" in (await recv_until(ws, "error"))["reason"]
                for i in range(200):  # a flood at one instant of the server's clock
                    await ws.send(frame("bad", 10 + i, right=hand((0.2, 1.2, -0.3), 0.0)))
                progress = app.server.progress
                await asyncio.to_thread(
                    progress.wait_for,
                    lambda: progress.messages_handled >= 204,
                    "204 messages",
                    WAIT_S,
                )
                app.clock.advance(1.0)  # the bucket refills
                await ws.send(hello("bad"))
                return (await recv_until(ws, "welcome"))["role"]

        assert run(go()) == "operator"  # still connected, still the operator
        c = app.controller.counts
        assert c["malformed"] == 3 and c["oversize_dropped"] == 1
        # the burst of 30 tokens: 4 spent on the bad frames above, 26 on the flood, the rest dropped
        assert c["rate_dropped"] == 200 - 26 and c["frames_applied"] == 26


def test_tls_with_a_generated_certificate(tmp_path):
    import ssl

    from rob_twin.twin.teleop.app import AppConfig, TeleopApp, with_port
    from rob_twin.twin.teleop.certs import ensure_certificate, server_ssl_context

    cert = ensure_certificate(tmp_path, addresses=[])
    again = ensure_certificate(tmp_path, addresses=[])
    assert (
        cert.created and not again.created and again.fingerprint_sha256 == cert.fingerprint_sha256
    )
    assert len(cert.fingerprint_sha256.split(":")) == 32
    trust = ssl.create_default_context(cafile=str(cert.cert_path))
    app = TeleopApp(
        with_port(AppConfig(video=VideoConfig(fps=0)), "127.0.0.1", 0), server_ssl_context(cert)
    ).start()
    try:
        assert app.server.url.startswith("https://127.0.0.1:")

        async def go():
            async with client(app.server.ws_url, ssl=trust) as ws:
                await ws.send(hello("tls"))
                return (await recv_until(ws, "welcome"))["role"]

        assert run(go()) == "operator"
    finally:
        app.stop()


def test_pages_are_served_from_the_package_without_external_urls():
    import re
    import urllib.request

    from rob_twin.twin.teleop.server import STATIC_DIR

    with start_app() as app:
        page = urllib.request.urlopen(app.server.url, timeout=5).read().decode()
        assert "<title>ROB teleop</title>" in page and "/static/teleop.js" in page
        js = urllib.request.urlopen(app.server.url + "static/teleop.js", timeout=5)
        assert js.headers["Content-Type"].startswith("text/javascript")
        assert "immersive-ar" in js.read().decode()
        assert (
            "live telemetry"
            in urllib.request.urlopen(app.server.url + "watch", timeout=5).read().decode()
        )
        try:
            urllib.request.urlopen(app.server.url + "static/../server.py", timeout=5)
            raise AssertionError("path traversal served a file")
        except urllib.error.HTTPError as err:
            assert err.code == 404
    for f in STATIC_DIR.iterdir():  # no CDN: nothing the pages load comes from elsewhere
        assert not re.search(r"(src|href)=\"https?://", f.read_text()), f.name
        assert "import(" not in f.read_text() and "cdn" not in f.read_text().lower(), f.name


def test_an_owner_fault_while_engaged_disengages_and_needs_a_reset():
    from rob_twin.controllers.owner_types import FaultKind

    with start_app() as app:
        owner = app.controller.owners[Arm.RIGHT]

        async def go():
            async with client(app.server.ws_url) as ws:
                await ws.send(hello("fault"))
                await recv_until(ws, "welcome")
                seq = await replay(app, ws, "fault", circle_trace(12))
                gen = owner.generation
                owner.latch_fault(FaultKind.TRACKING_ERROR, "injected by the test")
                seq = await replay(app, ws, "fault", circle_trace(3, grip_after=0), seq)
                h = app.controller.hands[Arm.RIGHT]
                assert not h.clutch.engaged and "faulted" in h.last_reject
                seq = await replay(
                    app, ws, "fault", [((0.2, 1.2, -0.3), 0.0), ((0.2, 1.2, -0.3), 1.0)], seq
                )
                assert (
                    not h.clutch.engaged and "reset needed" in h.last_reject
                )  # no engage while faulted
                await ws.send(
                    json.dumps({"v": 1, "type": "reset", "session": "fault", "arm": "right"})
                )
                assert (await recv_until(ws, "reset"))["ok"]
                assert owner.generation > gen and owner.mode is not Mode.FAULTED
                await replay(
                    app, ws, "fault", [((0.2, 1.2, -0.3), 0.0), ((0.2, 1.2, -0.3), 1.0)], seq
                )
                assert h.clutch.engaged

        run(go())
