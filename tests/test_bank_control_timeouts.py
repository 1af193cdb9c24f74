"""No client can lock the bank's control port: idle connections and half-sent
lines are answered why and closed after their timeouts, so MAX_CLIENTS of them cannot
keep another client's ``status`` out; a repeated JSON key is refused, never read as its
last value, and the bank keeps running.

One real-time bank runs in a thread of the test process with short timeouts (set through
``BankConfig``); every wait is bounded and the bank is shut down at the end.
"""

from __future__ import annotations

import json
import socket
import time

import pytest
from bank_support import bank_in_thread
from rob_twin.models.names import ROB
from rob_twin.twin.bus.bank_control import IDLE_TIMEOUT_S, LINE_TIMEOUT_S, MAX_CLIENTS
from rob_twin.twin.bus.bank_process import BankConfig, control

WAIT_S = 20.0  # bound on any wait (a loaded 2-core machine), never a speed figure
IDLE_S = 1.5
LINE_S = 0.5


def test_the_defaults_are_stated():
    assert IDLE_TIMEOUT_S == 10.0 and LINE_TIMEOUT_S == 2.0
    cfg = BankConfig()
    assert cfg.control_idle_timeout_s == IDLE_TIMEOUT_S
    assert cfg.control_line_timeout_s == LINE_TIMEOUT_S


@pytest.fixture(scope="module")
def bank():
    """ROB's bank serving in a thread (``bank_support.bank_in_thread``): its ports."""
    with bank_in_thread(
        "test-bank-timeouts",
        robot=ROB,
        control_idle_timeout_s=IDLE_S,
        control_line_timeout_s=LINE_S,
    ) as proc:
        yield {"control_port": proc.control_port, "socketcand_port": proc.server.port}


def _connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
    s.settimeout(WAIT_S)
    return s


def _replies_then_eof(s: socket.socket) -> list[dict]:
    """Every reply line until the bank closes the connection (bounded by WAIT_S)."""
    buf = b""
    while chunk := s.recv(65536):
        buf += chunk
    return [json.loads(line) for line in buf.splitlines() if line.strip()]


def test_idle_connections_are_closed_and_a_new_client_gets_status(bank):
    port = bank["control_port"]
    idle = [_connect(port) for _ in range(MAX_CLIENTS)]
    try:
        time.sleep(0.2)
        # all places held: the new client is served at once, the first idle one makes room
        assert control(port, {"cmd": "status"})["ok"] is True
        (room,) = _replies_then_eof(idle[0])
        assert room["ok"] is False and room["field"] == "connection", room
        assert "closed for a new client" in room["error"], room
        assert f"at most {MAX_CLIENTS}" in room["valid"], room
        started = time.monotonic()
        for s in idle[1:]:
            (why,) = _replies_then_eof(s)
            assert why["ok"] is False and why["field"] == "connection", why
            assert "idle" in why["error"] and f"every {IDLE_S:g} s" in why["valid"], why
        assert time.monotonic() - started < WAIT_S
    finally:
        for s in idle:
            s.close()
    reply = control(port, {"cmd": "status"})
    assert reply["ok"] is True and "sim_time_s" in reply


@pytest.mark.realtime
def test_a_line_left_unfinished_is_closed_after_its_timeout(bank):
    port = bank["control_port"]
    with _connect(port) as s:
        s.sendall(b'{"cmd":')
        t0 = time.monotonic()
        (why,) = _replies_then_eof(s)
        waited = time.monotonic() - t0
    assert why["ok"] is False and why["field"] == "line", why
    assert f"within {LINE_S:g} s" in why["valid"], why
    assert waited >= LINE_S * 0.9  # not before its time
    assert control(port, {"cmd": "status"})["ok"] is True


@pytest.mark.realtime
def test_a_client_that_keeps_talking_stays_connected(bank):
    port = bank["control_port"]
    with _connect(port) as s:
        reader = s.makefile("rb")
        t_end = time.monotonic() + IDLE_S * 2
        while time.monotonic() < t_end:
            s.sendall(b'{"cmd": "status"}\n')
            assert json.loads(reader.readline())["ok"] is True
            time.sleep(IDLE_S / 4)


def test_duplicate_keys_are_refused_and_the_bank_keeps_running(bank):
    port = bank["control_port"]
    with _connect(port) as s:
        reader = s.makefile("rb")
        for line in (
            b'{"cmd":"status","cmd":"shutdown"}\n',
            b'{"cmd":"fault","fault":{"kind":"x","kind":"y"}}\n',
        ):
            s.sendall(line)
            reply = json.loads(reader.readline())
            assert reply["ok"] is False and reply["field"] == "key", reply
            assert "once" in reply["valid"], reply
        s.sendall(b'{"cmd": "status"}\n')  # the same connection goes on
        assert json.loads(reader.readline())["ok"] is True
    time.sleep(0.3)  # a shutdown would have closed the control port by now
    assert control(port, {"cmd": "status"})["ok"] is True
