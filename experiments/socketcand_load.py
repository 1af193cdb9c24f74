"""Load clients for the socketcand fan-out benchmark, run in their own process.

``python -m rob_twin.experiments.socketcand_load --port P --channel C --readers N
--stalled M --flood-hz F`` opens N reader clients (they read everything, as a monitor or
a second host would), M stalled clients (their receive buffer shrunk to 4 kB, they never
read after the handshake: a hung or suspended client) and, with ``--flood-hz`` > 0, one
flooding client that sends command frames at that rate (frames/s) and reads what it is
sent. It prints ``ready`` once every client is through the handshake, waits for a line on
stdin (the flood starts then), and ends when stdin closes. It prints one JSON line of its
own counts at the end. Standard library only, 127.0.0.1 only; simulated load, no hardware.
"""

from __future__ import annotations

import argparse
import json
import selectors
import socket
import sys
import threading
import time

STALLED_RCVBUF_BYTES = 4096
FLOOD_BATCH_S = 0.005  # a flood burst every 5 ms


def handshake(port: int, channel: str, rcvbuf: int | None = None) -> socket.socket:
    """A client through socketcand's ``hi / open / rawmode`` exchange (blocking, 5 s)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(5.0)
    sock.connect(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    _expect(sock, b"< hi >")
    sock.sendall(f"< open {channel} >".encode())
    _expect(sock, b"< ok >")
    sock.sendall(b"< rawmode >")
    _expect(sock, b"< ok >")
    return sock


def _expect(sock: socket.socket, reply: bytes) -> None:
    got = b""
    while not got.endswith(b">"):
        chunk = sock.recv(64)
        if not chunk:
            raise ConnectionError(f"server closed during the handshake after {got!r}")
        got += chunk
    if got.strip() != reply:
        raise ConnectionError(f"expected {reply!r} from the server, got {got!r}")


def _flood(sock: socket.socket, hz: float, stop: threading.Event, sent: list[int]) -> None:
    per_batch = max(1, round(hz * FLOOD_BATCH_S))
    frame = b"< send 011 3 40 0 80 >"
    next_t = time.monotonic()
    while not stop.is_set():
        try:
            sock.sendall(frame * per_batch)
        except OSError:
            return
        sent[0] += per_batch
        next_t += FLOOD_BATCH_S
        time.sleep(max(0.0, next_t - time.monotonic()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--channel", required=True)
    ap.add_argument("--readers", type=int, default=0)
    ap.add_argument("--stalled", type=int, default=0)
    ap.add_argument("--flood-hz", type=float, default=0.0)
    args = ap.parse_args(argv)
    readers = [handshake(args.port, args.channel) for _ in range(args.readers)]
    stalled = [
        handshake(args.port, args.channel, STALLED_RCVBUF_BYTES) for _ in range(args.stalled)
    ]
    flooder = handshake(args.port, args.channel) if args.flood_hz > 0 else None
    sel = selectors.DefaultSelector()
    for s in readers + ([flooder] if flooder else []):
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    print("ready", flush=True)
    sys.stdin.readline()  # go
    stop, sent = threading.Event(), [0]
    if flooder is not None:
        threading.Thread(
            target=_flood, args=(flooder, args.flood_hz, stop, sent), daemon=True
        ).start()
    closed = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), closed.set()), daemon=True).start()
    received, ended = 0, 0
    while not closed.is_set():
        for key, _ in sel.select(timeout=0.1):
            try:
                data = key.fileobj.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                sel.unregister(key.fileobj)
                ended += 1
                continue
            received += data.count(b"<")
    stop.set()
    stalled_closed = sum(closed_by_server(s) for s in stalled)
    print(
        json.dumps(
            {
                "messages_received_by_readers": received,
                "reader_connections_ended": ended,
                "flood_frames_sent": sent[0],
                "stalled_closed_by_server": stalled_closed,
            }
        ),
        flush=True,
    )
    for s in readers + stalled + ([flooder] if flooder else []):
        s.close()
    return 0


def closed_by_server(sock: socket.socket, timeout_s: float = 0.3, poll_s: float = 0.05) -> bool:
    """Whether the server has closed this (stalled) client: drains what is buffered and
    looks for the end of the stream (or a reset) within ``timeout_s`` seconds, waiting at
    most ``poll_s`` per read."""
    sock.settimeout(poll_s)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if not sock.recv(1 << 20):
                return True
        except TimeoutError:
            continue
        except OSError:
            return True  # reset by the server
    return False


if __name__ == "__main__":
    raise SystemExit(main())
