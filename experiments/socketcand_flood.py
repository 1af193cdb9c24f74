"""One socketcand client floods an unused CAN id; does a well-behaved client survive?

``python -m rob_twin.experiments.socketcand_flood [--flood-hz 30000] [--seconds 2]
[--no-line-limit]``: a socketcand server (this process, ROB's classic 1 Mbit/s bus unless
``--bus``), the in-process side answering pings at once, a python-can socketcand client
pinging every 5 ms (a host's tick) and a flooding client in its own process sending
8-byte frames on id 0x5A5 at ``--flood-hz`` frames/s (0: as fast as it can). Prints one JSON
object: the line rate of the flood's frame, frames the flooder sent, frames admitted onto the
bus and their rate, the server's ``rate_limited`` / ``reads_paused`` / ``stalled_disconnects``,
and whether the python-can client stayed connected with every ping answered (round trip
p50/p99/max, frames it had to read). ``--no-line-limit`` measures the server without its
line-rate limit (as it was before). 127.0.0.1 only; simulated load on this machine,
``hardware_io: false``.
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import threading
import time

import can
from rob_twin.twin.bus.socketcand import SocketcandServer
from rob_twin.twin.bus.socketcand_protocol import parse_send
from rob_twin.twin.bus.timing import parse_bus_spec, percentiles_us

CHANNEL = "FLOOD0"
FLOOD_FRAME = "< send 5A5 8 1 2 3 4 5 6 7 8 >"
PING_ID, PONG_ID = 0x7E0, 0x7E1
PING_PERIOD_S = 0.005

# the flooding client: handshake, then send for SECONDS at HZ (0: unpaced); prints frames sent
FLOODER = r"""
import socket, sys, time
from rob_twin.experiments.socketcand_load import handshake
port, hz, seconds, frame = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
sock = handshake(port, sys.argv[5])
batch = 3000 if hz <= 0 else max(1, round(hz * 0.005))
payload, sent = frame.encode() * batch, 0
print("ready", flush=True)
sys.stdin.readline()
t0 = time.monotonic(); nxt = t0
while time.monotonic() - t0 < seconds:
    try:
        sock.sendall(payload)
    except OSError:
        break
    sent += batch
    if hz > 0:
        nxt += batch / hz
        time.sleep(max(0.0, nxt - time.monotonic()))
print(sent, flush=True)
"""


def measure(flood_hz: float, seconds: float, bus_spec: str, line_limit: bool) -> dict:
    bus = parse_bus_spec(bus_spec)
    server = SocketcandServer([CHANNEL], port=0, bus=bus)
    if not line_limit:  # as before: every frame admitted at once
        server._frame_seconds = lambda msg: 0.0  # type: ignore[method-assign]
    server.start()
    bank = can.Bus(interface="virtual", channel=CHANNEL, receive_own_messages=False)
    stamps: list[float] = []
    stop = threading.Event()

    def answer() -> None:
        while not stop.is_set():
            msg = bank.recv(timeout=0.05)
            if msg is None:
                continue
            if msg.arbitration_id == 0x5A5:
                stamps.append(msg.timestamp)
            elif msg.arbitration_id == PING_ID:
                bank.send(can.Message(arbitration_id=PONG_ID, data=msg.data))

    threading.Thread(target=answer, daemon=True).start()
    host = can.Bus(interface="socketcand", channel=CHANNEL, host="127.0.0.1", port=server.port)
    flooder = subprocess.Popen(
        [sys.executable, "-c", FLOODER, str(server.port), str(flood_hz), str(seconds)]
        + [FLOOD_FRAME, CHANNEL],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert flooder.stdout is not None and flooder.stdin is not None
    if flooder.stdout.readline().strip() != "ready":
        raise RuntimeError("the flooding client did not get through its handshake")
    time.sleep(0.2)  # past the server's first-frame delay
    flooder.stdin.write("go\n")
    flooder.stdin.flush()
    sent_at: dict[int, float] = {}
    rtt: list[float] = []
    received = 0  # every frame the python-can client read (the flood's included)
    error = ""
    k = 0
    end = time.monotonic() + seconds + 0.5
    try:
        while time.monotonic() < end:
            k += 1
            sent_at[k] = time.monotonic()
            host.send(can.Message(arbitration_id=PING_ID, data=k.to_bytes(4, "big")))
            wait_until = time.monotonic() + PING_PERIOD_S
            while (left := wait_until - time.monotonic()) > 0:
                msg = host.recv(timeout=left)
                received += msg is not None
                if msg is not None and msg.arbitration_id == PONG_ID:
                    rtt.append(time.monotonic() - sent_at[int.from_bytes(msg.data, "big")])
    except (can.CanError, OSError) as err:
        error = f"{type(err).__name__}: {err}"
    flooder_sent = int(flooder.communicate(timeout=30)[0].strip() or 0)
    report = server.report()["channels"][CHANNEL]
    stop.set()
    host.shutdown()
    server.close()
    bank.shutdown()
    span = (stamps[-1] - stamps[0]) if len(stamps) > 1 else 0.0
    frame_s = bus.frame_seconds(parse_send(FLOOD_FRAME))
    return {
        "hardware_io": False,
        "evidence_class": "simulated load, real sockets on 127.0.0.1",
        "bus": bus.label(),
        "line_limit": line_limit,
        "flood_frame_line_rate_fps": round(1.0 / frame_s, 1),
        "flood_requested_fps": flood_hz or "unpaced",
        "flood_sent": flooder_sent,
        "flood_sent_fps": round(flooder_sent / seconds, 1),
        "flood_admitted": len(stamps),
        "flood_admitted_fps": round(len(stamps) / span, 1) if span else None,
        "rate_limited": report["rate_limited"],
        "reads_paused": report["reads_paused"],
        "stalled_disconnects": report["stalled_disconnects"],
        "host_error": error,
        "host_frames_received": received,
        "host_pings_sent": k,
        "host_pings_answered": len(rtt),
        "host_round_trip": percentiles_us(rtt),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flood-hz", type=float, default=30000.0, help="0: as fast as it can")
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--bus", default="1M", help="the channel's bus: 1M, 500k, fd:1M/5M ...")
    ap.add_argument("--no-line-limit", action="store_true", help="the server as it was before")
    args = ap.parse_args(argv)
    logging.getLogger("can").setLevel(logging.ERROR)  # python-can warns on every split read
    out = measure(args.flood_hz, args.seconds, args.bus, not args.no_line_limit)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
