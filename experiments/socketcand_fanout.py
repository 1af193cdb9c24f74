"""Socketcand fan-out: what one normal client gets while other clients load the server.

A bank-like source puts ROB's feedback on one channel (7 drives x 100 Hz = 700 frames/s,
simulated) and answers pings at once; a normal client (a raw socket in this process)
counts the feedback frames it receives and pings every 10 ms. The other clients run in
their own process (``rob_twin.experiments.socketcand_load``): none, 20 readers, 200
readers, or 20 stalled clients plus a client flooding commands. Every case runs for
``seconds`` on 127.0.0.1 with the same server code, side by side in one run; figures are
simulated load on this (shared) machine, ``hardware_io: false``.

Per case: feedback frames/s received (whole run and worst 0.5 s window), ping round trip
(p50/p99/max), and the server's counts (stalled clients closed, frames dropped for them).
"""

from __future__ import annotations

import select
import subprocess
import sys
import threading
import time

import can
from rob_twin.models.bounded_json import read_bounded_json
from rob_twin.twin.bus.socketcand import SocketcandServer
from rob_twin.twin.bus.timing import percentiles_us

FEEDBACK_IDS = tuple(range(0x91, 0x98))
PERIOD_S = 0.01  # 100 Hz feedback per drive
PING_ID, PONG_ID = 0x7E0, 0x7E1
PING_PERIOD_S = 0.01
WINDOW_S = 0.5
WARMUP_S = 0.2  # past the server's first-frame delay for a new client
CASES = {
    "alone": {},
    "20_readers": {"readers": 20},
    "200_readers": {"readers": 200},
    "20_stalled_plus_flood": {"stalled": 20, "flood_hz": 2000.0},
}


def _source(channel: str, stop: threading.Event, sent: list[int]) -> None:
    """The bank's side: 7 feedback frames every 10 ms, pings answered on arrival."""
    bus = can.Bus(interface="virtual", channel=channel, receive_own_messages=False)
    try:
        next_t = time.monotonic()
        while not stop.is_set():
            while (wait := next_t - time.monotonic()) > 0:
                msg = bus.recv(timeout=wait)
                if msg is not None and msg.arbitration_id == PING_ID:
                    bus.send(
                        can.Message(arbitration_id=PONG_ID, data=msg.data, is_extended_id=False)
                    )
            for ident in FEEDBACK_IDS:
                bus.send(can.Message(arbitration_id=ident, data=bytes(8), is_extended_id=False))
            sent[0] += len(FEEDBACK_IDS)
            next_t += PERIOD_S
    finally:
        bus.shutdown()


def _normal_client(port: int, channel: str, seconds: float) -> dict:
    """A client that reads everything and pings; its feedback rate and ping round trip."""
    from rob_twin.experiments.socketcand_load import handshake

    sock = handshake(port, channel)
    sock.setblocking(False)
    buf, pings, rtts = b"", {}, []
    windows: list[int] = [0] * int(round(seconds / WINDOW_S))
    t0 = time.monotonic() + WARMUP_S
    next_ping, k = t0, 0
    while (now := time.monotonic()) < t0 + seconds:
        if now >= next_ping and now >= t0:
            k = (k + 1) & 0xFFFF
            pings[k] = now
            try:
                sock.send(f"< send {PING_ID:03X} 2 {k >> 8:X} {k & 0xFF:X} >".encode())
            except OSError:
                pass
            next_ping += PING_PERIOD_S
        ready, _, _ = select.select([sock], [], [], max(0.0, min(next_ping - now, 0.005)))
        if not ready:
            continue
        try:
            chunk = sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            continue
        if not chunk:
            break
        arrived = time.monotonic()
        *messages, buf = (buf + chunk).split(b">")
        slot = min(len(windows) - 1, int((arrived - t0) / WINDOW_S))
        if arrived < t0:
            continue
        for m in messages:
            parts = m.split()
            if len(parts) < 4 or parts[1] != b"frame":
                continue
            ident = int(parts[2], 16)
            if ident in FEEDBACK_IDS:
                windows[slot] += 1
            elif ident == PONG_ID and len(parts) > 4 and len(parts[4]) == 4:
                sent_at = pings.pop(int(parts[4], 16), None)
                if sent_at is not None:
                    rtts.append(arrived - sent_at)
    sock.close()
    return {
        "feedback_frames_per_s": round(sum(windows) / seconds, 1),
        "worst_window_frames_per_s": round(min(windows) / WINDOW_S, 1),
        "ping_round_trip": percentiles_us(rtts),
        "pings_sent": len(rtts) + len(pings),
        "pings_unanswered": len(pings),
    }


def run_case(name: str, load: dict, seconds: float) -> dict:
    channel = f"FANOUT_{name}"
    stop, sent = threading.Event(), [0]
    with SocketcandServer([channel], port=0) as srv:
        src = threading.Thread(target=_source, args=(channel, stop, sent), daemon=True)
        src.start()
        proc = None
        try:
            if load:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "rob_twin.experiments.socketcand_load"]
                    + ["--port", str(srv.port), "--channel", channel]
                    + ["--readers", str(load.get("readers", 0))]
                    + ["--stalled", str(load.get("stalled", 0))]
                    + ["--flood-hz", str(load.get("flood_hz", 0.0))],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                )
                if proc.stdout.readline().strip() != "ready":
                    return {"error": f"load clients did not start (exit {proc.wait(10)})"}
                proc.stdin.write("go\n")
                proc.stdin.flush()
            sent0, start = sent[0], time.monotonic()
            out = _normal_client(srv.port, channel, seconds)
            out["offered_frames_per_s"] = round((sent[0] - sent0) / (time.monotonic() - start), 1)
            if proc is not None:
                proc.stdin.close()
                out["load_clients"] = read_bounded_json(
                    proc.stdout.readline() or "{}", what="socketcand load clients' counts"
                )
                proc.wait(timeout=30)
            out["server"] = {
                k: v
                for k, v in srv.report()["channels"][channel].items()
                if k not in ("last_error", "clients")
            }
        finally:
            stop.set()
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
            src.join(timeout=2.0)
    return {"load": load or "none", **out}


def fanout(seconds: float = 4.0) -> dict:
    """Every case side by side; ``within_20pct_of_alone``: the aim for 20 stalled clients."""
    rows = {name: run_case(name, load, seconds) for name, load in CASES.items()}
    alone = rows["alone"].get("feedback_frames_per_s") or 0.0
    for row in rows.values():
        if "feedback_frames_per_s" in row and alone:
            row["ratio_to_alone"] = round(row["feedback_frames_per_s"] / alone, 3)
            row["worst_window_ratio_to_alone"] = round(row["worst_window_frames_per_s"] / alone, 3)
    stalled = rows["20_stalled_plus_flood"]
    return {
        "source": "7 feedback ids x 100 Hz (700 frames/s) + pings every 10 ms from one "
        "normal client; other clients in their own process; 127.0.0.1, shared 2-core machine",
        "seconds_per_case": seconds,
        "window_s": WINDOW_S,
        "cases": rows,
        "aim": "20 stalled + flood: feedback frames/s within 20 % of alone",
        "meets_aim": stalled.get("ratio_to_alone", 0.0) >= 0.8,
        "hardware_io": False,
    }
