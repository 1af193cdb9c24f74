"""Shared helpers of the teleop tests: a running app on 127.0.0.1 and a scripted client.

The app's teleop clock (input stamps, staleness, operator lease, rate limit) is a
``ManualClock`` unless a test asks for the real one: ``replay`` sends one frame, waits
until the server has handled it, then advances the clock by one period. What the
controller decides then depends on the trace, not on how the two cores were shared.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time

from rob_twin.twin.teleop.app import AppConfig, TeleopApp, with_port
from rob_twin.twin.teleop.controller import TeleopConfig
from rob_twin.twin.teleop.video import VideoConfig

# The tests share 2 loaded cores with other jobs: a client may stall for a few hundred ms.
# Timeouts are relaxed so that only the faults a test injects fire (the dropout test
# waits well past TEST_INPUT_TIMEOUT_S).
TEST_INPUT_TIMEOUT_S = 0.4
TEST_TELEOP = TeleopConfig(
    input_timeout_s=TEST_INPUT_TIMEOUT_S, operator_ttl_s=3.0, owner_lease_s=1.5
)


WAIT_S = 20.0  # bound on every wait for the server (a stalled server fails the test, slowly)


class ManualClock:
    """A time base [s] that moves only when the test advances it; read from any thread."""

    def __init__(self, start_s: float = 1000.0):
        self._t = start_s
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._t

    def advance(self, dt_s: float) -> float:
        with self._lock:
            self._t += dt_s
            return self._t


def start_app(real_clock: bool = False, **overrides) -> TeleopApp:
    """A teleop app on a free 127.0.0.1 port, video off unless asked for; its teleop clock
    is a ``ManualClock`` (``app.clock``) unless ``real_clock``."""
    overrides.setdefault("teleop", TEST_TELEOP)
    overrides.setdefault("video", VideoConfig(fps=0.0))
    cfg = with_port(AppConfig(**overrides), "127.0.0.1", 0)
    return TeleopApp(cfg, clock=time.monotonic if real_clock else ManualClock()).start()


async def handled(app, session: str, seq: int) -> None:
    """Until the server has handled input frame ``seq`` of ``session`` (and so every frame
    sent before it on that socket); the client's event loop keeps running meanwhile."""
    await asyncio.to_thread(app.server.progress.wait_input, session, seq, WAIT_S)


async def closed(app, client_id: str) -> None:
    """Until the server has finished with ``client_id`` (its socket is closed)."""
    await asyncio.to_thread(app.server.progress.wait_closed, client_id, WAIT_S)


def hello(session: str, role: str = "operator") -> str:
    return json.dumps({"v": 1, "type": "hello", "session": session, "role": role})


def hand(
    position,
    grip: float,
    trigger: float = 0.0,
    tracked: bool = True,
    orientation=(0.0, 0.0, 0.0, 1.0),
) -> dict:
    return {
        "tracked": tracked,
        "position": list(position),
        "orientation": list(orientation),
        "grip": grip,
        "trigger": trigger,
    }


def frame(session: str, seq: int, **hands) -> str:
    return json.dumps(
        {
            "v": 1,
            "type": "input",
            "session": session,
            "seq": seq,
            "t_ms": seq * 11.1,
            "hands": hands,
        }
    )


async def recv_until(ws, kind: str, timeout_s: float = WAIT_S) -> dict:
    """The next message of type ``kind``."""

    async def loop():
        while True:
            msg = json.loads(await ws.recv())
            if msg["type"] == kind:
                return msg

    return await asyncio.wait_for(loop(), timeout_s)


async def recv_each(ws, kinds: tuple[str, ...], timeout_s: float = WAIT_S) -> dict[str, dict]:
    """The first message of each type in ``kinds``, in whatever order the server sends them
    (two tasks of the server may each send one, so neither order is guaranteed)."""

    async def loop():
        got: dict[str, dict] = {}
        while len(got) < len(kinds):
            msg = json.loads(await ws.recv())
            if msg["type"] in kinds and msg["type"] not in got:
                got[msg["type"]] = msg
        return got

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
        out.append(
            (
                (center[0] + radius_m * math.cos(a), center[1], center[2] + radius_m * math.sin(a)),
                1.0,
            )
        )
    return out


async def replay(
    app, ws, session: str, trace, seq: int = 0, period_s: float = 1 / 90, arm: str = "right"
) -> int:
    """Send ``trace`` [(position, grip)] as input frames for ``arm``, one per ``period_s``:
    each frame is handled by the server before the (manual) clock moves on by ``period_s``.
    The physics runs in real time, so the frames are paced in wall time too. Returns the
    last seq."""
    for pos, grip in trace:
        seq += 1
        await ws.send(frame(session, seq, **{arm: hand(pos, grip)}))
        await handled(app, session, seq)
        if isinstance(app.clock, ManualClock):
            app.clock.advance(period_s)
        await asyncio.sleep(period_s)
    return seq


def client(url: str, **kwargs):
    """A scripted client; it buffers everything it is sent (a test reads when it wants)."""
    from websockets.asyncio.client import connect

    kwargs.setdefault("max_queue", None)
    kwargs.setdefault("close_timeout", 0.5)
    return connect(url, **kwargs)
