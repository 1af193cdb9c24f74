"""No socketcand client can crowd out or lock out another (127.0.0.1 only).

A client flooding frames as fast as it can is held to its bus's line rate: its extra frames
wait in its own queue (``rate_limited``), then in its own socket while the server stops reading
it (``reads_paused``: nothing dropped), while a second
client (python-can's socketcand interface) keeps exchanging frames with the in-process bus
and is never closed. Hundreds of connections that never handshake close the oldest of
themselves, not the newest real client. A host whose connection is closed gets the
project's typed one-line error, not a bare BrokenPipeError. Every wait is a bounded deadline.
"""

from __future__ import annotations

import math
import selectors
import socket
import threading
import time

import can
import pytest
from rob_twin.experiments.socketcand_load import handshake
from rob_twin.models.errors import InvalidValueError
from rob_twin.twin.bus.host_process import BankConnectionError, HostConfig, PongTap, open_bus
from rob_twin.twin.bus.socketcand import SocketcandLimits, SocketcandServer
from rob_twin.twin.bus.socketcand_protocol import SocketcandError, parse_send
from rob_twin.twin.bus.timing import parse_bus_spec

DEADLINE_S = 10.0  # bound on any wait (a loaded 2-core machine), never a speed figure
FLOOD_S = 1.0
FLOOD_FRAME = b"< send 011 3 40 0 80 >"
PING_ID, PONG_ID = 0x7E0, 0x7E1


def _python_can_client(port: int, channel: str) -> can.BusABC:
    return can.Bus(interface="socketcand", channel=channel, host="127.0.0.1", port=port)


class _Bank(threading.Thread):
    """The in-process side: answers each ping at once and notes when each flood frame came."""

    def __init__(self, channel: str):
        super().__init__(name="fairness-bank", daemon=True)
        self.bus = can.Bus(interface="virtual", channel=channel, receive_own_messages=False)
        self.flood_stamps: list[float] = []  # when the server admitted each flood frame [s]
        self.pings: list[int] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            msg = self.bus.recv(timeout=0.05)
            if msg is None:
                continue
            if msg.arbitration_id == 0x011:
                self.flood_stamps.append(msg.timestamp)  # stamped when the server parsed it
            elif msg.arbitration_id == PING_ID:
                self.pings.append(int.from_bytes(msg.data, "big"))
                self.bus.send(can.Message(arbitration_id=PONG_ID, data=msg.data))


def _flood(sock: socket.socket, seconds: float, sent: list[int]) -> None:
    payload = FLOOD_FRAME * 3000  # ~66 kB per write
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            sock.sendall(payload)
        except OSError:
            return
        sent[0] += 3000


def _pong(client: can.BusABC, k: int) -> bool:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        msg = client.recv(timeout=0.1)
        if msg is not None and msg.arbitration_id == PONG_ID:
            if int.from_bytes(msg.data, "big") == k:
                return True
    return False


def test_a_flooding_client_is_held_to_the_line_rate_and_the_other_client_is_served():
    bus = parse_bus_spec("125k")  # a slow bus: the line rate is far below what a flood sends
    limits = SocketcandLimits(sender_queue_frames=256)
    frame_s = bus.frame_seconds(parse_send(FLOOD_FRAME.decode()))
    with SocketcandServer(["FAIR1"], port=0, limits=limits, bus=bus) as srv:
        bank = _Bank("FAIR1")
        bank.start()
        good = _python_can_client(srv.port, "FAIR1")
        flooder = handshake(srv.port, "FAIR1")
        sent = [0]
        try:
            time.sleep(0.1)  # past the server's first-frame delay for new clients
            flood = threading.Thread(target=_flood, args=(flooder, FLOOD_S, sent), daemon=True)
            flood.start()
            pings, k = 0, 0
            while flood.is_alive():  # the other client exchanges frames through the flood
                k += 1
                good.send(can.Message(arbitration_id=PING_ID, data=k.to_bytes(2, "big")))
                assert _pong(good, k), f"ping {k} unanswered during the flood: {srv.report()}"
                pings += 1
                time.sleep(0.02)
            flood.join(DEADLINE_S)
            k += 1  # and after it, on the same connection
            good.send(can.Message(arbitration_id=PING_ID, data=k.to_bytes(2, "big")))
            assert _pong(good, k)
            stamps = list(bank.flood_stamps)
            report = srv.report()["channels"]["FAIR1"]
        finally:
            bank.stop.set()
            bank.join(DEADLINE_S)
            good.shutdown()
            flooder.close()
            bank.bus.shutdown()
    # pinged during the flood (each waits for its answer: few on a loaded machine), and every
    # ping reached the bank, in order
    assert pings >= 2 and bank.pings == list(range(1, k + 1)), (pings, k, bank.pings[-5:])
    assert report["stalled_disconnects"] == 0, report
    assert report["clients"] == 2, report  # nobody was closed during the flood
    admitted = len(stamps)
    span = stamps[-1] - stamps[0]
    # at most the line rate (plus the burst a transmit queue holds), and not starved either
    most = (span + limits.line_burst_s) / frame_s + 2
    assert admitted <= most, (admitted, span, frame_s)
    assert admitted >= 0.5 * span / frame_s, (admitted, span, frame_s)
    assert sent[0] > 4 * admitted, (sent, admitted)  # the flood was far beyond the line rate
    assert report["rate_limited"] > 0 and report["reads_paused"] > 0, report
    assert "not read" in report["last_error"]
    # nothing dropped: every frame the server read from the flooder went on the bus, and it
    # read no more than its queue beyond what was admitted
    assert report["malformed"] == 0
    assert report["frames_from_clients"] - k <= admitted + limits.sender_queue_frames + 3000


def test_frames_within_the_line_rate_are_admitted_at_once_and_none_dropped():
    with SocketcandServer(["FAIR2"], port=0) as srv:  # classic 1 Mbit/s
        bank = can.Bus(interface="virtual", channel="FAIR2", receive_own_messages=False)
        sock = handshake(srv.port, "FAIR2")
        try:
            time.sleep(0.1)
            sock.sendall(b"< send 012 8 1 2 3 4 5 6 7 8 >" * 7)  # one host sample: 7 frames
            got = []
            deadline = time.monotonic() + DEADLINE_S
            while len(got) < 7 and time.monotonic() < deadline:
                msg = bank.recv(timeout=0.1)
                if msg is not None:
                    got.append(msg)
            report = srv.report()["channels"]["FAIR2"]
        finally:
            sock.close()
            bank.shutdown()
    assert len(got) == 7
    assert report["rate_limited"] == 0 and report["reads_paused"] == 0  # within the burst


def test_a_client_that_closes_with_frames_waiting_loses_none_of_them():
    limits = SocketcandLimits(line_burst_s=0.0)
    with SocketcandServer(["FAIR3"], port=0, limits=limits, bus=parse_bus_spec("125k")) as srv:
        bank = can.Bus(interface="virtual", channel="FAIR3", receive_own_messages=False)
        sock = handshake(srv.port, "FAIR3")
        stats = srv.stats["FAIR3"]
        try:
            time.sleep(0.1)
            sock.sendall(b"".join(f"< send 013 2 0 {k:X} >".encode() for k in range(100)))
            sock.close()  # ~100 x 0.5 ms of line time still to go
            deadline = time.monotonic() + DEADLINE_S
            while stats.clients and time.monotonic() < deadline:
                time.sleep(0.01)
            got = []
            while (msg := bank.recv(timeout=0.2)) is not None:
                got.append(msg.data[1])
        finally:
            bank.shutdown()
    assert stats.clients == 0 and stats.rate_limited > 0
    assert got == list(range(100))


def test_idle_connections_cannot_keep_a_real_client_out():
    limits = SocketcandLimits(max_clients=200)  # fewer places than idle sockets
    with SocketcandServer(["FAIR4"], port=0, limits=limits) as srv:
        bank = can.Bus(interface="virtual", channel="FAIR4", receive_own_messages=False)
        idle = [socket.create_connection(("127.0.0.1", srv.port), timeout=5.0) for _ in range(300)]
        client = None
        try:
            started = time.monotonic()
            client = _python_can_client(srv.port, "FAIR4")  # open + rawmode, newest of all
            took = time.monotonic() - started
            client.send(can.Message(arbitration_id=0x14, data=b"\x01"))
            msg = bank.recv(timeout=DEADLINE_S)
            conns = srv.report()["connections"]
        finally:
            for s in idle:
                s.close()
            if client is not None:
                client.shutdown()
            bank.shutdown()
    assert took < 1.0, took  # the handshake timeout (5 s) never had to free a place
    assert msg is not None and msg.arbitration_id == 0x14
    assert conns["accepted"] == 301 and conns["refused_full"] == 0
    assert conns["handshakes_evicted"] >= 300 - limits.max_pending_handshakes, conns


def _idle_from(port: int, source: str) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=5.0, source_address=(source, 0))
    s.settimeout(5.0)
    assert s.recv(6) == b"< hi >"
    return s


def _closed_with(sock: socket.socket, wait_s: float) -> bytes:
    """What the server sent before closing (b"" if it keeps the connection for ``wait_s``)."""
    sock.settimeout(wait_s)
    got = b""
    try:
        while chunk := sock.recv(256):
            got += chunk
    except TimeoutError:
        return b""
    return got


def test_one_address_in_its_handshake_closes_its_own_oldest_not_another_address():
    limits = SocketcandLimits(max_pending_handshakes=16, max_pending_per_address=3)
    with SocketcandServer(["FAIR5"], port=0, limits=limits) as srv:
        try:
            other = [_idle_from(srv.port, "127.0.0.2") for _ in range(2)]
        except OSError as err:
            pytest.skip(f"no second loopback address here: {err}")
        mine = [_idle_from(srv.port, "127.0.0.1") for _ in range(5)]
        try:
            evicted = [_closed_with(s, DEADLINE_S) for s in mine[:2]]
            kept = [_closed_with(s, 0.1) for s in mine[2:] + other]  # evictions were done
            conns = srv.report()["connections"]
        finally:
            for s in mine + other:
                s.close()
    for reply in evicted:
        assert b"closed for a newer connection" in reply and b"at most 3" in reply, reply
    assert kept == [b""] * 5  # the newest three of 127.0.0.1 and both of 127.0.0.2 stay
    assert conns["handshakes_evicted"] == 2


@pytest.mark.parametrize(
    "name, value",
    [
        ("sender_queue_frames", 0),
        ("line_burst_s", -0.001),
        ("line_burst_s", 2.0),
        ("max_pending_handshakes", True),
        ("max_pending_per_address", 0),
    ],
)
def test_fairness_limits_out_of_range_are_typed_errors(name, value):
    with pytest.raises(InvalidValueError, match=f"{name}=") as err:
        SocketcandLimits(**{name: value})
    assert isinstance(err.value, SocketcandError) and "valid:" in str(err.value)


def test_a_host_whose_connection_is_closed_gets_a_typed_one_line_error():
    srv = SocketcandServer(["FAIR6"], port=0).start()
    bus = PongTap(open_bus(HostConfig(port=srv.port), "FAIR6"), "FAIR6 at test")
    try:
        srv.close()  # the bank ends: the server closes every client
        with pytest.raises(BankConnectionError) as err:
            for _ in range(200):  # the first writes may still land in the kernel's buffer
                bus.send(can.Message(arbitration_id=0x7E0, data=b"\x00\x01"))
                time.sleep(0.005)
    finally:
        bus.shutdown()
    text = str(err.value)
    assert "\n" not in text and "FAIR6 at test" in text and "0x7E0" in text, text
    assert isinstance(err.value, ConnectionError)  # a transport still calls the frame uncertain


def _reset_pair() -> tuple[socket.socket, socket.socket]:
    """A connected TCP pair on 127.0.0.1: (the server's end, non-blocking; the client's)."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        ours, _ = listener.accept()
    ours.setblocking(False)
    return ours, client


def test_a_client_that_resets_with_replies_unread_still_gets_its_last_frames_on_the_bus():
    """LeRobot's disconnect sends a disable frame per drive and closes with the drives'
    replies unread, which resets the connection: the server's next send to it fails. The
    frames it sent before are still in the server's receive buffer and go on the bus, as a
    SocketCAN bus carries every frame written before its sender closed (they were lost when
    the failed send closed the client at once)."""
    from rob_twin.twin.bus.socketcand import _Client
    from rob_twin.twin.bus.socketcand_protocol import CommandStream

    srv = SocketcandServer(["RESET1"], port=0)
    srv._sel = selectors.DefaultSelector()  # the loop's selector; the loop is not started
    bank = can.Bus(interface="virtual", channel="RESET1", receive_own_messages=False)
    ours, client = _reset_pair()
    try:
        ours.sendall(b"< frame 011 0.0 00 >")  # a reply the client will never read
        client.sendall(b"".join(f"< send 013 2 0 {k:X} >".encode() for k in range(8)))
        client.close()  # with unread data: the kernel resets the connection
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:  # the reset has arrived once a send fails
            try:
                ours.send(b"")
                time.sleep(0.01)
            except OSError:
                break
        c = _Client(ours, CommandStream(), deadline=math.inf, state="raw", channel="RESET1")
        c.out += b"< frame 011 0.0 01 >"
        srv._flush(c)  # the send fails: the server reads the rest, then ends the client
        got = []
        while (msg := bank.recv(timeout=0.2)) is not None:
            got.append(msg.data[1])
    finally:
        bank.shutdown()
        srv.close()
    assert c.closed
    assert got == list(range(8))
