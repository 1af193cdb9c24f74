"""No frame is dropped around a client's handshake (127.0.0.1 only; every wait is a bounded
deadline, never a speed figure).

python-can's socketcand client reads rawmode's ``< ok >`` with one ``recv`` and fails when a
frame arrived in the same read, so the server once dropped every frame for a new client's
first 50 ms: a host that sent at once never saw the answer. Now frames for a new client are
held until it speaks (or 50 ms pass) and then sent, in order.
"""

from __future__ import annotations

import socket
import threading
import time

import can
import pytest
from rob_twin.twin.bus.socketcand import SocketcandServer

DEADLINE_S = 10.0


def _recv(bus: can.BusABC, timeout_s: float = DEADLINE_S) -> can.Message | None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        msg = bus.recv(timeout=0.1)
        if msg is not None:
            return msg
    return None


def _echo_bank(channel: str, stop: threading.Event) -> threading.Thread:
    """A bank on the in-process bus answering every frame on id + 0x10 (the Amber way).

    Its bus joins the channel before this returns: a virtual bus sees only frames sent after
    it exists, so a bus opened inside the thread could miss the first client's frame."""
    bus = can.Bus(interface="virtual", channel=channel, receive_own_messages=False)

    def run() -> None:
        try:
            while not stop.is_set():
                msg = bus.recv(timeout=0.05)
                if msg is not None:
                    bus.send(
                        can.Message(
                            arbitration_id=msg.arbitration_id + 0x10,
                            data=bytes(msg.data),
                            is_extended_id=False,
                        )
                    )
        finally:
            bus.shutdown()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def _echo(channel: str, msg: can.Message) -> list[can.Message]:
    """A responder answering every frame on id + 0x10 at once (the Damiao way)."""
    return [
        can.Message(
            arbitration_id=msg.arbitration_id + 0x10, data=bytes(msg.data), is_extended_id=False
        )
    ]


@pytest.mark.parametrize("answered_by", ["bus", "responder"])
def test_a_client_that_sends_right_after_open_gets_every_reply(answered_by):
    """20 connections, each sending within a millisecond of its open: every frame reaches
    the bus and every reply comes back (the first-frame delay once dropped all of them)."""
    channel = f"CANF{answered_by}"
    stop = threading.Event()
    responder = _echo if answered_by == "responder" else None
    with SocketcandServer([channel], port=0, responder=responder) as srv:
        bank = _echo_bank(channel, stop) if responder is None else None
        monitor = can.Bus(interface="virtual", channel=channel, receive_own_messages=False)
        try:
            for k in range(20):
                client = can.Bus(
                    interface="socketcand", channel=channel, host="127.0.0.1", port=srv.port
                )
                try:
                    client.send(
                        can.Message(arbitration_id=0x01, data=bytes([k]), is_extended_id=False)
                    )
                    reply = _recv(client)
                finally:
                    client.shutdown()
                assert reply is not None, f"connection {k}: no reply"
                assert (reply.arbitration_id, bytes(reply.data)) == (0x11, bytes([k]))
                # the client's frame reached the in-process bus, and so did the reply
                seen = [_recv(monitor), _recv(monitor)]
                assert [m.arbitration_id for m in seen if m is not None] == [0x01, 0x11]
            stats = srv.report()["channels"][channel]
            assert stats["frames_from_clients"] == 20
            assert stats["replies"] == (20 if responder is not None else 0)
        finally:
            stop.set()
            if bank is not None:
                bank.join(DEADLINE_S)
            monitor.shutdown()


def test_frames_for_a_client_that_only_listens_are_held_then_sent_in_order():
    """A client that never speaks gets the frames sent right after its rawmode, after the
    hold, in order; its handshake replies arrive alone (python-can's client needs that)."""
    with SocketcandServer(["CANF2"], port=0) as srv:
        bank = can.Bus(interface="virtual", channel="CANF2", receive_own_messages=False)
        sock = socket.create_connection(("127.0.0.1", srv.port), timeout=DEADLINE_S)
        try:
            assert sock.recv(256) == b"< hi >"
            sock.sendall(b"< open CANF2 >")
            assert sock.recv(256) == b"< ok >"
            sock.sendall(b"< rawmode >")
            ok = sock.recv(6)
            for k in range(5):  # at once: the client has not read the '< ok >' yet
                bank.send(can.Message(arbitration_id=0x91, data=bytes([k]), is_extended_id=False))
            assert ok == b"< ok >"
            got = b""
            deadline = time.monotonic() + DEADLINE_S
            while got.count(b"frame") < 5 and time.monotonic() < deadline:
                got += sock.recv(4096)
            frames = [m for m in got.split(b">") if b"frame" in m]
            assert [int(m.split()[4], 16) for m in frames] == list(range(5))
            assert srv.stats["CANF2"].frames_to_clients == 5
        finally:
            sock.close()
            bank.shutdown()


def test_a_responder_that_fails_is_counted_and_the_server_serves_on():
    calls = []

    def flaky(channel: str, msg: can.Message) -> list[can.Message]:
        calls.append(msg.arbitration_id)
        if msg.arbitration_id == 0x02:
            raise RuntimeError("drive model bug")
        return _echo(channel, msg)

    with SocketcandServer(["CANF3"], port=0, responder=flaky) as srv:
        client = can.Bus(interface="socketcand", channel="CANF3", host="127.0.0.1", port=srv.port)
        try:
            for ident in (0x01, 0x02, 0x03):
                client.send(can.Message(arbitration_id=ident, data=b"\x00", is_extended_id=False))
            replies = [_recv(client), _recv(client)]
        finally:
            client.shutdown()
        assert [r.arbitration_id for r in replies if r is not None] == [0x11, 0x13]
        stats = srv.report()["channels"]["CANF3"]
        assert stats["responder_errors"] == 1 and "drive model bug" in stats["last_error"]
        assert srv.failure == ""


def test_the_foreign_reply_ids_are_the_ones_the_bank_passes():
    """A client frame on a reply id the bank names is a foreign reply; Amber's ids are not
    when the bank says its drives answer elsewhere."""
    with SocketcandServer(["CANF4"], port=0, reply_ids={0x11, 0x18}) as srv:
        client = can.Bus(interface="socketcand", channel="CANF4", host="127.0.0.1", port=srv.port)
        bank = can.Bus(interface="virtual", channel="CANF4", receive_own_messages=False)
        try:
            for ident in (0x91, 0x11, 0x18, 0x01):
                client.send(can.Message(arbitration_id=ident, data=b"\x00", is_extended_id=False))
            for _ in range(4):
                assert _recv(bank) is not None
        finally:
            client.shutdown()
            bank.shutdown()
        stats = srv.report()["channels"]["CANF4"]
        assert stats["frames_from_clients"] == 4 and stats["foreign_feedback"] == 2
        assert "0x18" in stats["last_error"]
