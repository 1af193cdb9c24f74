"""Shared helpers of the teleop tests: a running app on 127.0.0.1 and a scripted client."""

from __future__ import annotations

import asyncio
import json

from twin.teleop.app import AppConfig, TeleopApp, with_port
from twin.teleop.controller import TeleopConfig

# The tests share 2 loaded cores with other jobs: a client may stall for a few hundred ms.
# Timeouts are relaxed so that only the faults a test injects fire (the dropout test
# waits well past TEST_INPUT_TIMEOUT_S).
TEST_INPUT_TIMEOUT_S = 0.4
TEST_TELEOP = TeleopConfig(input_timeout_s=TEST_INPUT_TIMEOUT_S, operator_ttl_s=3.0, owner_lease_s=1.5)


def start_app(**overrides) -> TeleopApp:
    """A teleop app on a free 127.0.0.1 port, camera off unless asked for."""
    overrides.setdefault("teleop", TEST_TELEOP)
    cfg = with_port(AppConfig(camera_hz=overrides.pop("camera_hz", 0.0), **overrides), "127.0.0.1", 0)
    return TeleopApp(cfg).start()


def hello(session: str, role: str = "operator") -> str:
    return json.dumps({"v": 1, "type": "hello", "session": session, "role": role})


def hand(position, grip: float, trigger: float = 0.0, tracked: bool = True,
         orientation=(0.0, 0.0, 0.0, 1.0)) -> dict:
    return {"tracked": tracked, "position": list(position), "orientation": list(orientation),
            "grip": grip, "trigger": trigger}


def frame(session: str, seq: int, **hands) -> str:
    return json.dumps({"v": 1, "type": "input", "session": session, "seq": seq,
                       "t_ms": seq * 11.1, "hands": hands})


async def recv_until(ws, kind: str, timeout_s: float = 2.0) -> dict:
    """The next message of type ``kind``."""
    async def loop():
        while True:
            msg = json.loads(await ws.recv())
            if msg["type"] == kind:
                return msg
    return await asyncio.wait_for(loop(), timeout_s)


def run(coro):
    return asyncio.run(coro)


def circle_trace(n: int, center=(0.2, 1.2, -0.3), radius_m: float = 0.03, grip_after: int = 5):
    """A controller trace: still for ``grip_after`` samples (grip open), then grip held while
    the controller draws a horizontal circle; (position, grip) per sample at 90 Hz."""
    import math

    out = []
    for i in range(n):
        if i < grip_after:
            out.append(((center[0] + radius_m, center[1], center[2]), 0.0))
            continue
        a = 2 * math.pi * (i - grip_after) / 180.0
        out.append(((center[0] + radius_m * math.cos(a), center[1], center[2] + radius_m * math.sin(a)), 1.0))
    return out


async def replay(ws, session: str, trace, seq: int = 0, period_s: float = 1 / 90, arm: str = "right") -> int:
    """Send ``trace`` [(position, grip)] as input frames for ``arm``; returns the last seq."""
    for pos, grip in trace:
        seq += 1
        await ws.send(frame(session, seq, **{arm: hand(pos, grip)}))
        await asyncio.sleep(period_s)
    return seq


def client(url: str, **kwargs):
    """A scripted client; it buffers everything it is sent (a test reads when it wants)."""
    from websockets.asyncio.client import connect

    kwargs.setdefault("max_queue", None)
    kwargs.setdefault("close_timeout", 0.5)
    return connect(url, **kwargs)
