"""Shared helpers of the teleop tests: a running app on 127.0.0.1 and a scripted client."""

from __future__ import annotations

import asyncio
import json

from twin.teleop.app import AppConfig, TeleopApp, with_port


def start_app(**overrides) -> TeleopApp:
    """A teleop app on a free 127.0.0.1 port, camera off unless asked for."""
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
