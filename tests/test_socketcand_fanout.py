"""The socketcand server serves everyone: a stalled client is closed without holding the
others up, and a connection's stream parser resynchronises after garbage (127.0.0.1 only;
no timing thresholds: every wait is a bounded deadline for an event that must happen)."""

from __future__ import annotations

import random
import socket
import time

import can
import pytest
from rob_twin.experiments.socketcand_load import closed_by_server
from rob_twin.models.errors import InvalidValueError
from rob_twin.twin.bus.socketcand import SocketcandLimits, SocketcandServer
from rob_twin.twin.bus.socketcand_protocol import (
    CommandStream,
    SocketcandError,
    parse_command,
    parse_open,
    parse_send,
)

DEADLINE_S = 10.0


def _parse(text: str) -> None:
    """Every check the server makes on one message."""
    cmd = parse_command(text)
    if cmd.verb == "send":
        parse_send(text)
    elif cmd.verb == "open":
        parse_open(cmd)


def _client(port: int, channel: str, rcvbuf: int | None = None) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(5.0)
    sock.connect(("127.0.0.1", port))
    for send, reply in (
        (None, b"< hi >"),
        (f"< open {channel} >", b"< ok >"),
        ("< rawmode >", b"< ok >"),
    ):
        if send:
            sock.sendall(send.encode())
        got = b""
        while not got.endswith(b">"):
            got += sock.recv(1)
        assert got == reply
    return sock


class _Reader:
    """Reads frames from a client socket; ``frames(n)`` returns the next n frame messages."""

    def __init__(self, sock: socket.socket):
        self.sock, self.buf = sock, b""

    def frames(self, n: int) -> list[bytes]:
        out: list[bytes] = []
        deadline = time.monotonic() + DEADLINE_S
        while len(out) < n:
            assert time.monotonic() < deadline, f"only {len(out)} of {n} frames arrived"
            *done, self.buf = (self.buf + self.sock.recv(65536)).split(b">")
            out += [m.strip() + b" >" for m in done if b"frame" in m]
        return out


def _bank_recv(bus: can.BusABC, ident: int) -> can.Message:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        msg = bus.recv(timeout=0.1)
        if msg is not None and msg.arbitration_id == ident:
            return msg
    raise AssertionError(f"the bank never received id 0x{ident:X}")


def _closed_by_peer(sock: socket.socket) -> bool:
    """Drain what is buffered; True when the stream ends (or is reset) before the deadline."""
    return closed_by_server(sock, timeout_s=DEADLINE_S, poll_s=0.2)


def test_a_stalled_client_is_closed_and_the_normal_client_gets_every_frame_and_its_pings():
    with SocketcandServer(["CANS1"], port=0) as srv:
        bank = can.Bus(interface="virtual", channel="CANS1", receive_own_messages=False)
        stalled = _client(srv.port, "CANS1", rcvbuf=4096)  # never reads again
        normal = _client(srv.port, "CANS1")
        reader = _Reader(normal)
        time.sleep(0.1)  # past the server's first-frame delay for new clients
        stats = srv.stats["CANS1"]
        try:
            sent = 0
            for batch in range(400):  # at most 400 x 100 frames (~1.4 MB per client)
                for _ in range(100):
                    bank.send(
                        can.Message(
                            arbitration_id=0x91, data=sent.to_bytes(8, "big"), is_extended_id=False
                        )
                    )
                    sent += 1
                got = reader.frames(100)  # every frame, in order
                assert [int(m.split()[4], 16) for m in got] == list(range(sent - 100, sent))
                normal.sendall(f"< send 7E0 2 {batch >> 8:X} {batch & 0xFF:X} >".encode())
                ping = _bank_recv(bank, 0x7E0)  # the normal client's ping reaches the bank
                assert int.from_bytes(ping.data, "big") == batch
                if stats.clients == 1:
                    break
            assert stats.clients == 1, "the stalled client was never disconnected"
            assert stats.stalled_disconnects == 1
            assert _closed_by_peer(stalled), "the stalled client's socket was left open"
            bank.send(can.Message(arbitration_id=0x7E1, data=b"\x00\x01", is_extended_id=False))
            (pong,) = reader.frames(1)  # the normal client is still served
            assert pong.split()[2] == b"7E1"
        finally:
            for s in (stalled, normal):
                s.close()
            bank.shutdown()


@pytest.mark.parametrize(
    "garbage",
    [b">", b"> > >", b"<junk ", b"\xff\xfe\x00", b"<" + b"x" * 5000, b"< send 011 >>"],
)
def test_the_connection_recovers_after_garbage(garbage):
    with SocketcandServer(["CANS2"], port=0) as srv:
        bank = can.Bus(interface="virtual", channel="CANS2", receive_own_messages=False)
        sock = _client(srv.port, "CANS2")
        try:
            sock.sendall(garbage)
            sock.sendall(b"< send 011 2 AB CD >")
            msg = _bank_recv(bank, 0x11)
            assert bytes(msg.data) == b"\xab\xcd"
            sock.sendall(b"< send 012 1 EF >")  # and its later commands stay in step
            assert bytes(_bank_recv(bank, 0x12).data) == b"\xef"
            assert srv.stats["CANS2"].clients == 1
        finally:
            sock.close()
            bank.shutdown()


def test_the_stream_splits_messages_and_counts_what_it_discards():
    stream = CommandStream()
    assert stream.feed(b"> junk < send 011 1 AA >< se") == ["< send 011 1 AA >"]
    assert stream.feed(b"nd 012 0 >") == ["< send 012 0 >"]
    assert stream.feed(b"<abc < send 013 0 >") == ["< send 013 0 >"]  # restarts at '<'
    assert stream.discarded_bytes == len(b"> junk ") + len(b"<abc ")
    assert stream.feed(b"<" + b"x" * 300) == []  # longer than a message can be: dropped
    assert stream.feed(b"x >< echo >") == ["< echo >"]


@pytest.mark.parametrize(
    "bad, what",
    [
        ("< send 011 3 40 0 80", "framing"),
        ("<>", "command"),
        ("< bogus 1 >", "command='bogus'"),
        ("< open >", "open"),
        ("< send 0x11 0 >", "id"),
        ("< send 1_1 0 >", "id"),
        ("< send 011 +1 5 >", "length"),
        ("< send 011 1 100 >", "data"),
        ("< send 011 9 0 0 0 0 0 0 0 0 0 >", "length"),
        ("< send \u00e9 0 >", "id"),
    ],
)
def test_malformed_commands_are_typed_errors_naming_the_value(bad, what):
    with pytest.raises(SocketcandError, match=what) as err:
        _parse(bad)
    assert isinstance(err.value, InvalidValueError) and "valid" in str(err.value)


def test_random_input_never_raises_anything_but_the_typed_error():
    rng = random.Random(7)
    alphabet = b"<> send open rawmode 0123456789ABCDEFxyz\xff\x00"
    stream = CommandStream()
    for _ in range(3000):
        chunk = bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))
        for text in stream.feed(chunk):
            try:
                _parse(text)
            except SocketcandError:
                pass


def test_a_malformed_open_is_answered_with_an_error_and_closed():
    with SocketcandServer(["CANS3"], port=0) as srv:
        sock = socket.create_connection(("127.0.0.1", srv.port), timeout=5.0)
        try:
            assert sock.recv(16) == b"< hi >"
            sock.sendall(b"< open >")
            reply = b""
            while chunk := sock.recv(256):
                reply += chunk
            assert reply.startswith(b"< error ") and b"open" in reply
        finally:
            sock.close()


def test_a_client_that_takes_nothing_for_the_stall_timeout_is_closed():
    limits = SocketcandLimits(
        send_queue_bytes=1 << 24, socket_send_buffer_bytes=1024, stall_timeout_s=0.05
    )
    with SocketcandServer(["CANS4"], port=0, limits=limits) as srv:
        bank = can.Bus(interface="virtual", channel="CANS4", receive_own_messages=False)
        stalled = _client(srv.port, "CANS4", rcvbuf=4096)
        time.sleep(0.1)  # past the server's first-frame delay for new clients
        stats = srv.stats["CANS4"]
        try:
            deadline = time.monotonic() + DEADLINE_S
            while stats.clients and time.monotonic() < deadline:
                for _ in range(100):  # far below the queue limit: only the timeout can fire
                    bank.send(can.Message(arbitration_id=0x91, data=bytes(8)))
                time.sleep(0.01)
            assert stats.stalled_disconnects == 1 and stats.clients == 0
            assert "took no byte" in stats.last_error
            assert _closed_by_peer(stalled)
        finally:
            stalled.close()
            bank.shutdown()


def test_raw_mode_counts_bad_commands_answers_echo_and_keeps_the_connection():
    with SocketcandServer(["CANS5"], port=0) as srv:
        bank = can.Bus(interface="virtual", channel="CANS5", receive_own_messages=False)
        sock = _client(srv.port, "CANS5")
        try:
            sock.sendall(b"< bcmmode >< send 011 9 1 >< send xyz 0 >< echo >")
            reply = b""
            while not reply.endswith(b">"):
                reply += sock.recv(64)
            assert reply == b"< echo >"
            st = srv.stats["CANS5"]
            assert st.malformed == 3 and "id='xyz'" in st.last_error
            sock.sendall(b"< send 011 0 >")
            assert _bank_recv(bank, 0x11).dlc == 0 and st.clients == 1
        finally:
            sock.close()
            bank.shutdown()


def test_a_handshake_that_never_finishes_and_clients_over_the_limit_are_refused():
    limits = SocketcandLimits(handshake_timeout_s=0.05, max_clients=1)
    with SocketcandServer(["CANS6"], port=0, limits=limits) as srv:
        idle = socket.create_connection(("127.0.0.1", srv.port), timeout=5.0)
        time.sleep(0.05)  # the server has taken the first connection
        extra = socket.create_connection(("127.0.0.1", srv.port), timeout=5.0)
        try:
            for sock, why in ((extra, b"too many clients"), (idle, b"handshake not finished")):
                reply = b""
                while chunk := sock.recv(256):
                    reply += chunk
                assert why in reply, reply
        finally:
            idle.close()
            extra.close()


@pytest.mark.parametrize(
    "name, value", [("send_queue_bytes", 0), ("stall_timeout_s", -1.0), ("max_clients", True)]
)
def test_limits_out_of_range_are_typed_errors(name, value):
    with pytest.raises(InvalidValueError, match=f"{name}=") as err:
        SocketcandLimits(**{name: value})
    assert isinstance(err.value, SocketcandError)


class _BrokenServer(SocketcandServer):
    def _from_client(self, client, text):
        raise RuntimeError("injected")


def test_an_unexpected_error_in_the_io_loop_latches_and_closes_every_client():
    with _BrokenServer(["CANS7"], port=0) as srv:
        sock = _client(srv.port, "CANS7")
        try:
            sock.sendall(b"< send 011 0 >")
            assert _closed_by_peer(sock)
            assert srv.report()["failure"] == "socketcand I/O loop stopped: RuntimeError: injected"
            with pytest.raises(OSError):
                _client(srv.port, "CANS7")  # nobody is served half
        finally:
            sock.close()


def test_random_bytes_on_the_wire_never_stop_the_server():
    rng = random.Random(11)
    alphabet = b"<> send open rawmode echo CANS8 0123456789ABCDEFxyz\xff\x00\n"
    noise = bytes(rng.choice(alphabet) for _ in range(20000))
    with SocketcandServer(["CANS8"], port=0) as srv:
        bank = can.Bus(interface="virtual", channel="CANS8", receive_own_messages=False)
        raw = _client(srv.port, "CANS8")
        early = socket.create_connection(("127.0.0.1", srv.port), timeout=5.0)
        try:
            early.sendall(noise[:2000])  # noise in the handshake: refused or ignored
            raw.sendall(noise + b"< send 01F 1 7 >")  # noise in raw mode, then a frame
            assert bytes(_bank_recv(bank, 0x1F).data) == b"\x07"
            assert srv.report()["failure"] == "" and srv.stats["CANS8"].garbage_bytes > 0
            late = _client(srv.port, "CANS8")  # and a new client is still served
            late.close()
        finally:
            for s in (raw, early):
                s.close()
            bank.shutdown()
