"""What the operator page is told: the clearance pair that matters (never a self pair inside
one arm), where each hand's TCP is (so the pad labels follow the hand), and plain words
for clamped or refused targets (which limit, how often, why)."""

from __future__ import annotations

import time

import numpy as np
from rob_twin.models.names import Arm
from rob_twin.twin.teleop.plain_words import status_lines
from rob_twin.twin.teleop.safety import SafetyConfig
from teleop_support import circle_trace, client, hello, recv_until, replay, run, start_app


def test_telemetry_names_the_nearest_pair_that_matters_and_each_tcp():
    with start_app() as app:

        async def go():
            async with client(app.server.ws_url) as ws:
                await ws.send(hello("honest"))
                await recv_until(ws, "welcome")
                first = await recv_until(ws, "telemetry")
                await replay(app, ws, "honest", circle_trace(60, radius_m=0.05))
                moved_at = time.monotonic()
                while True:  # the client buffers: skip telemetry published before the move
                    t = await recv_until(ws, "telemetry")
                    if t["stamp_s"] > moved_at:
                        return first, t

        first, moved = run(go())
    for t in (first, moved):
        # the demo pose has a self pair (right/mount_geom vs right/link3_geom) closest:
        # telemetry names the nearest arm-arm / arm-body / arm-world pair instead
        assert t["clearance_class"] in ("arm-arm", "arm-body", "arm-world", None), t
        # ... and not an arm against its own mount (right/mount_geom vs right/link3_geom
        # is an arm-body pair whose distance the arm's own joints fix)
        pair = t["clearance_pair"] or " vs "
        a, b = pair.split(" vs ")
        assert a.split("/")[0] != b.split("/")[0], t
        if t["clearance_m"] is not None:
            assert len(t["clearance_geoms"]) == 2
        for arm in ("left", "right"):
            assert len(t["arms"][arm]["tcp_m"]) == 3
    # the right TCP moved with the circle, the left one did not
    right0, right1 = (
        np.array(first["arms"]["right"]["tcp_m"]),
        np.array(moved["arms"]["right"]["tcp_m"]),
    )
    assert float(np.linalg.norm(right1 - right0)) > 0.01
    assert first["arms"]["left"]["tcp_m"] == moved["arms"]["left"]["tcp_m"]
    assert moved["teleop"]["hands"]["right"]["target_tcp_m"] is not None
    assert app.controller.counts["targets_checked"] >= app.controller.counts["targets_submitted"]
    assert Arm.RIGHT in app.controller.hands


def test_status_lines_name_the_limit_and_how_often():
    safety = SafetyConfig()
    counts = {"targets_checked": 109, "tcp_clamped": 107, "targets_submitted": 109}
    lines = status_lines(counts, safety, input_timeout_s=0.1, margin_m=0.01)
    text = " ".join(lines)
    assert "107 of 109" in text and "0.25 m/s" in text and "TCP speed" in text
    counts = {
        "targets_checked": 40,
        "rejected_collision": 3,
        "rejected_ik": 2,
        "joint_clamped": 5,
        "staleness_brakes": 1,
    }
    lines = status_lines(counts, safety, input_timeout_s=0.1, margin_m=0.01)
    joined = "\n".join(lines)
    assert "3 of 40" in joined and "collision" in joined and "10 mm" in joined
    assert "2 of 40" in joined and "IK" in joined
    assert "5 of 40" in joined and "0.05 rad" in joined
    assert "0.1 s" in joined
    assert status_lines({}, safety, input_timeout_s=0.1, margin_m=0.01) == []


def test_a_longer_input_timeout_is_not_cut_short_by_the_owner_lease():
    """``--input-timeout 1.0`` (for a loaded machine) used to keep the 0.3 s owner lease: a
    0.3 s pause in the page's input ended the engagement ("owner lease lapsed") long before
    the staleness brake could speak. A lease or an operator TTL that is not longer than the
    input timeout is now refused, and the CLI's config lengthens both with the timeout."""
    import pytest
    from rob_twin.twin.teleop.app import teleop_config
    from rob_twin.twin.teleop.controller import TeleopConfig, TeleopConfigError

    with pytest.raises(TeleopConfigError, match="owner_lease_s"):
        TeleopConfig(input_timeout_s=1.0)
    with pytest.raises(TeleopConfigError, match="operator_ttl_s"):
        TeleopConfig(input_timeout_s=0.4, owner_lease_s=1.0, operator_ttl_s=0.4)
    cfg = teleop_config(1.0)
    assert cfg.input_timeout_s == 1.0
    assert cfg.owner_lease_s > 1.0 and cfg.operator_ttl_s > 1.0
    assert teleop_config(None) == TeleopConfig()
    assert teleop_config(0.05).owner_lease_s == TeleopConfig().owner_lease_s  # never shorter
