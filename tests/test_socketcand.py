"""The socketcand-compatible server against python-can's own socketcand client (127.0.0.1 only)."""

from __future__ import annotations

import threading
import time

import can
import pytest
from rob_twin.twin.bus.socketcand import SocketcandError, SocketcandServer, format_frame, parse_send


def test_send_and_frame_messages_round_trip():
    msg = parse_send("< send 011 3 40 0 80 >")
    assert (msg.arbitration_id, bytes(msg.data), msg.is_extended_id) == (
        0x11,
        b"\x40\x00\x80",
        False,
    )
    ext = parse_send("< send 12345678 1 ff >")
    assert ext.is_extended_id and ext.arbitration_id == 0x12345678
    text = format_frame(
        can.Message(
            arbitration_id=0x91, data=bytes([1, 0x22, 0x43]), timestamp=1.5, is_extended_id=False
        )
    )
    assert text == "< frame 091 1.500000 012243 >"


@pytest.mark.parametrize(
    "bad, what",
    [
        ("< send 011 4 40 0 80 >", "length=4 is invalid; valid: 0..8 and equal to the 3"),
        ("< send 011 3 40 zz 80 >", "data='zz' is invalid; valid: 1..2 hex digits"),
        ("< send 800 0 >", "id='0x800' is invalid; valid: 0x0..0x7FF"),
        ("< open can0 >", "not a socketcand send"),
    ],
)
def test_malformed_send_is_a_typed_error_naming_it(bad, what):
    with pytest.raises(SocketcandError, match=what):
        parse_send(bad)


def _recv(bus: can.BusABC, timeout_s: float = 3.0) -> can.Message | None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        msg = bus.recv(timeout=0.1)
        if msg is not None:
            return msg
    return None


def test_python_can_client_talks_to_the_server_both_ways():
    with SocketcandServer(["CANT1"], port=0) as srv:
        assert srv.host == "127.0.0.1"
        bank_side = can.Bus(interface="virtual", channel="CANT1", receive_own_messages=False)
        client = can.Bus(interface="socketcand", channel="CANT1", host="127.0.0.1", port=srv.port)
        monitor = can.Bus(interface="socketcand", channel="CANT1", host="127.0.0.1", port=srv.port)
        try:
            time.sleep(0.1)  # past the server's first-frame delay for new clients
            client.send(
                can.Message(arbitration_id=0x13, data=b"\x40\xff\x7f", is_extended_id=False)
            )
            got = _recv(bank_side)
            assert got is not None and (got.arbitration_id, bytes(got.data)) == (
                0x13,
                b"\x40\xff\x7f",
            )
            seen = _recv(monitor)  # every other client sees the host's frame, as on a bus
            assert seen is not None and seen.arbitration_id == 0x13
            bank_side.send(
                can.Message(
                    arbitration_id=0x93, data=bytes(range(8)), is_extended_id=False, timestamp=2.0
                )
            )
            back = _recv(client)
            assert back is not None and (back.arbitration_id, bytes(back.data)) == (
                0x93,
                bytes(range(8)),
            )
            stats = srv.report()["channels"]["CANT1"]
            assert stats["frames_from_clients"] == 1 and stats["clients"] == 2
        finally:
            for bus in (client, monitor, bank_side):
                bus.shutdown()


def test_unknown_channel_is_refused_with_the_served_list():
    with SocketcandServer(["CANT2"], port=0) as srv:
        with pytest.raises(can.CanError, match="unknown channel CANX; served: CANT2"):
            can.Bus(interface="socketcand", channel="CANX", host="127.0.0.1", port=srv.port)


def test_a_taken_port_is_a_typed_error():
    with SocketcandServer(["CANT3"], port=0) as srv:
        with pytest.raises(SocketcandError, match="cannot bind"):
            SocketcandServer(["CANT4"], port=srv.port).start()


class _StalledServer(SocketcandServer):
    """A server whose reading thread stalls on the first client frame until ``gate`` opens
    (a bank process starved of CPU)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.gate = threading.Event()

    def _from_client(self, client, text):
        self.gate.wait(10.0)
        super()._from_client(client, text)


@pytest.mark.parametrize("graceful", [True, False])
def test_closing_a_client_loses_no_frame_the_server_has_not_read_yet(graceful):
    from rob_twin.twin.bus.host_process import close_bus

    frames = 600  # ~15 kB: more than the server takes in one read
    with _StalledServer(["CANT3"], port=0) as srv:
        bank_side = can.Bus(interface="virtual", channel="CANT3", receive_own_messages=False)
        client = can.Bus(interface="socketcand", channel="CANT3", host="127.0.0.1", port=srv.port)
        stats = srv.stats["CANT3"]
        try:
            time.sleep(0.1)  # past the server's first-frame delay for new clients
            for _ in range(5):  # frames for the client that it never reads
                bank_side.send(
                    can.Message(arbitration_id=0x93, data=bytes(8), is_extended_id=False)
                )
            deadline = time.monotonic() + 10.0
            while stats.frames_to_clients < 5 and time.monotonic() < deadline:
                time.sleep(0.01)
            for k in range(frames):
                client.send(
                    can.Message(
                        arbitration_id=0x11, data=k.to_bytes(2, "big"), is_extended_id=False
                    )
                )
            if graceful:
                threading.Timer(
                    0.3, srv.gate.set
                ).start()  # the server resumes while the client closes
                close_bus(client)
            else:
                client.shutdown()  # closed with unread input: the kernel resets the connection
                time.sleep(0.1)
                srv.gate.set()
            while stats.clients and time.monotonic() < deadline:
                time.sleep(0.01)
        finally:
            srv.gate.set()
            bank_side.shutdown()
        assert stats.clients == 0
        if graceful:
            assert stats.frames_from_clients == frames
        else:  # the failure close_bus prevents: the reset dropped what the server had not read
            assert stats.frames_from_clients < frames
