"""Scripted teleop clients for the benchmark, run in their own process so that their
work does not share the server's interpreter lock.

``python -m rob_twin.experiments.teleop_clients URL SECONDS [--watchers N] [--stalled]``: one
operator streams both hands at 90 Hz (grip held after 5 frames), N watchers record the
telemetry latency (publish stamp to receive, both ``time.monotonic``, one clock per
machine on Linux) and the video frames they get (count per watcher, and the age from the
state copy a frame shows to its receipt, both ``time.time``), and optionally one watcher
with a tiny receive window never reads.
Prints one JSON object. 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import socket
import time

from websockets.asyncio.client import connect

RATE_HZ = 90.0


def input_frame(session: str, seq: int, t: float, grip: float) -> str:
    hands = {}
    for name, cx in (("right", 0.2), ("left", -0.2)):
        a = 2 * math.pi * 0.5 * t
        hands[name] = {
            "tracked": True,
            "orientation": [0.0, 0.0, 0.0, 1.0],
            "grip": grip,
            "trigger": 0.0,
            "position": [cx + 0.03 * math.cos(a), 1.2, -0.3 + 0.03 * math.sin(a)],
        }
    return json.dumps(
        {"v": 1, "type": "input", "session": session, "seq": seq, "t_ms": t * 1e3, "hands": hands}
    )


async def operate(url: str, seconds: float, session: str = "bench") -> int:
    async with connect(url, max_queue=None, close_timeout=0.5) as ws:
        await ws.send(json.dumps({"v": 1, "type": "hello", "session": session, "role": "operator"}))
        t0, seq = time.perf_counter(), 0
        while (t := time.perf_counter() - t0) < seconds:
            seq += 1
            await ws.send(input_frame(session, seq, t, 0.0 if seq <= 5 else 1.0))
            await asyncio.sleep(max(0.0, seq / RATE_HZ - (time.perf_counter() - t0)))
        seq += 1
        await ws.send(input_frame(session, seq, seconds, 0.0))
        return seq


async def watch(url: str, seconds: float, lat: list, video: dict | None = None) -> None:
    """Record telemetry latencies into ``lat``; with ``video``, frames (``frames``), their
    sizes (``bytes``) and ages (``ages_ms``: state copy to receipt) after a 1 s warm-up."""
    async with connect(url, max_queue=None, close_timeout=0.5) as ws:
        await ws.send(json.dumps({"v": 1, "type": "hello", "session": "w", "role": "watcher"}))
        start = time.monotonic()
        end = start + seconds
        while time.monotonic() < end:
            try:
                msg = json.loads(await asyncio.wait_for(ws.recv(), 0.5))
            except TimeoutError:
                continue
            if msg["type"] == "telemetry":
                lat.append((time.monotonic() - msg["stamp_s"]) * 1e3)
            elif msg["type"] == "welcome" and video is not None and msg.get("camera"):
                view = {"v": 1, "type": "view", "session": "w", "camera": msg["camera"]}
                await ws.send(json.dumps(view))  # the default camera, as the pages ask for it
            elif msg["type"] == "camera" and video is not None and time.monotonic() > start + 1.0:
                video["frames"] += 1
                video["bytes"] += len(msg["jpeg_base64"]) * 3 // 4
                video["ages_ms"].append(time.time() * 1e3 - msg["state_stamp_ms"])
        if video is not None:
            video["seconds"] = seconds - 1.0


async def stalled(url: str, seconds: float) -> None:
    host, port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)  # a tiny window: writes to it block
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (host, int(port)))
    ws = await connect(url, sock=sock, max_queue=1, close_timeout=0.2)
    await ws.send(json.dumps({"v": 1, "type": "hello", "session": "stalled", "role": "watcher"}))
    await asyncio.sleep(seconds)  # never reads
    ws.transport.abort()


async def main(url: str, seconds: float, watchers: int, stall: bool) -> dict:
    lat: list[float] = []
    video = [{"frames": 0, "bytes": 0, "ages_ms": []} for _ in range(watchers)]
    jobs = [operate(url, seconds)] + [watch(url, seconds, lat, v) for v in video]
    if stall:
        jobs.append(stalled(url, seconds + 0.2))
    out = await asyncio.gather(*jobs)
    return {"frames_sent": out[0], "telemetry_latencies_ms": lat, "video": video}


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("seconds", type=float)
    p.add_argument("--watchers", type=int, default=0)
    p.add_argument("--stalled", action="store_true")
    a = p.parse_args()
    print(json.dumps(asyncio.run(main(a.url, a.seconds, a.watchers, a.stalled))))
