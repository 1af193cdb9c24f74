"""A request-reply bank (Damiao: every frame answered at once) keeps a client that sends a
burst and reads everything: the replies to one read's worth of commands go out while they are
made, not all queued behind the read. Before, one 64 kB read of commands (about 1,800 frames,
what a socketcand client's backlog is after the bank's process was not scheduled for a
moment) made more than ``send_queue_bytes`` (64 kB) of replies before the first write, and the
server closed the client as stalled although it read every byte (a 1 kHz, 16-drive load on a
loaded 2-core machine: ``stalled client closed: send queue full (65520 bytes, limit 65536)``).
127.0.0.1 only."""

from __future__ import annotations

import time

import can
from rob_twin.experiments.socketcand_load import handshake
from rob_twin.twin.bus.socketcand import SocketcandServer

BURST = 6000  # command frames sent in one write: ~200 kB, several 64 kB reads


def _echo_reply(channel: str, msg: can.Message) -> list[can.Message]:
    return [can.Message(arbitration_id=0x11, data=bytes(msg.data), is_extended_id=False)]


def test_a_client_reading_everything_gets_every_reply_to_a_burst_and_stays_connected():
    server = SocketcandServer(["burst0"], port=0, reply_ids=[0x11], responder=_echo_reply)
    server.start()
    sock = handshake(server.port, "burst0")
    try:
        sock.sendall(b"< send 001 8 1 2 3 4 5 6 7 8 >" * BURST)
        sock.settimeout(0.2)
        got, buf, closed = 0, b"", False
        deadline = time.monotonic() + 30.0
        while got < BURST and time.monotonic() < deadline:
            try:
                data = sock.recv(65536)
            except TimeoutError:
                continue
            except ConnectionResetError:  # the server closed it with replies unread
                closed = True
                break
            if not data:
                closed = True
                break
            buf += data
            end = buf.rfind(b">") + 1  # count whole frames only: a frame cut by the read
            got += buf[:end].count(b"< frame 011 ")  # is counted when its end arrives
            buf = buf[end:]
        report = server.report()["channels"]["burst0"]
    finally:
        sock.close()
        server.close()
    assert not closed and report["stalled_disconnects"] == 0, report
    assert got == BURST == report["replies"], (got, report)
