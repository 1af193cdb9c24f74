"""The bank's control port caps its connections, in all and per source address: one more
is answered one JSON line naming the limit and closed, the connections already open are
served on, and a place freed is taken again. Bad caps are typed errors naming the range.

One real-time bank runs in a thread of the test process (caps set through ``BankConfig``);
127.0.0.2 is a second loopback source address (Linux routes all of 127.0.0.0/8 to lo).
Every wait is bounded and the bank is shut down at the end.
"""

from __future__ import annotations

import json
import socket
import time

import pytest
from bank_support import bank_in_thread
from rob_twin.models.errors import InvalidValueError
from rob_twin.models.names import ROB
from rob_twin.twin.bus.bank_control import MAX_CLIENTS, MAX_CLIENTS_PER_ADDRESS
from rob_twin.twin.bus.bank_process import BankConfig

WAIT_S = 20.0  # bound on any wait (a loaded 2-core machine), never a speed figure
TOTAL, PER_ADDRESS = 4, 2


@pytest.fixture(scope="module")
def bank():
    """ROB's bank serving in a thread (``bank_support.bank_in_thread``): its control port."""
    with bank_in_thread(
        "test-bank-cap",
        robot=ROB,
        control_max_clients=TOTAL,
        control_max_clients_per_address=PER_ADDRESS,
    ) as proc:
        yield proc.control_port


def _connect(port: int, source: str = "127.0.0.1") -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S, source_address=(source, 0))
    s.settimeout(WAIT_S)
    return s


def _status(s: socket.socket) -> dict:
    s.sendall(b'{"cmd": "status"}\n')
    line = b""
    while not line.endswith(b"\n"):
        chunk = s.recv(65536)
        assert chunk, "the bank closed a connection it had accepted"
        line += chunk
    return json.loads(line)


def _refusal(s: socket.socket) -> dict:
    """The one line the bank sends before it closes the connection (bounded by WAIT_S)."""
    buf = b""
    while chunk := s.recv(65536):
        buf += chunk
    (line,) = buf.splitlines()
    return json.loads(line)


def test_the_defaults_are_stated():
    cfg = BankConfig()
    assert cfg.control_max_clients == MAX_CLIENTS == 8
    assert cfg.control_max_clients_per_address == MAX_CLIENTS_PER_ADDRESS == MAX_CLIENTS


def test_one_address_past_its_cap_is_refused_naming_it_and_the_others_are_served(bank):
    try:
        other = _connect(bank, "127.0.0.2")
    except OSError as err:
        pytest.skip(f"no second loopback address here: {err}")
    held = [_connect(bank) for _ in range(PER_ADDRESS)]
    try:
        assert all(_status(s)["ok"] for s in held)  # served: both places are taken
        with _connect(bank) as extra:
            refusal = _refusal(extra)
        assert refusal["ok"] is False and refusal["field"] == "connection", refusal
        assert f"at most {PER_ADDRESS} at once from one address" in refusal["valid"], refusal
        assert "127.0.0.1" in refusal["error"], refusal
        assert _status(other)["ok"] is True  # another address still has a place
        assert all(_status(s)["ok"] for s in held)  # and the held ones are served on
    finally:
        for s in [*held, other]:
            s.close()


def _served(port: int, source: str) -> socket.socket:
    """A connection from ``source`` the bank serves (retried while the places the previous
    test closed are being freed: the bank frees one when it sees the close)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        s = _connect(port, source)
        s.sendall(b'{"cmd": "status"}\n')
        line = s.makefile("rb").readline()
        if line and json.loads(line)["ok"]:
            return s
        s.close()
        assert time.monotonic() < deadline, f"no place for {source}: {line!r}"
        time.sleep(0.05)


def test_past_the_total_cap_a_new_connection_is_refused_then_a_freed_place_is_taken(bank):
    try:
        held = [_served(bank, f"127.0.0.{2 + k}") for k in range(TOTAL)]  # one per address
    except OSError as err:
        pytest.skip(f"no more loopback addresses here: {err}")
    try:
        with _connect(bank, "127.0.0.9") as extra:  # a fresh address: only the total is full
            refusal = _refusal(extra)
        assert refusal["ok"] is False and refusal["field"] == "connection", refusal
        assert refusal["valid"] == f"at most {TOTAL} at once", refusal
        held.pop().close()  # one place freed: taken again
        again = _served(bank, "127.0.0.9")
        again.close()
    finally:
        for s in held:
            s.close()


@pytest.mark.parametrize(
    "fields, name",
    [
        ({"control_max_clients": 0}, "control_max_clients"),
        ({"control_max_clients": 5000}, "control_max_clients"),
        ({"control_max_clients": True}, "control_max_clients"),
        ({"control_max_clients": 4, "control_max_clients_per_address": 5}, "per_address"),
        ({"control_idle_timeout_s": 0.0}, "control_idle_timeout_s"),
        ({"control_line_timeout_s": float("nan")}, "control_line_timeout_s"),
    ],
)
def test_caps_out_of_range_are_typed_errors_naming_the_range(fields, name):
    with pytest.raises(InvalidValueError, match=name) as err:
        BankConfig(**fields)
    assert "valid:" in str(err.value)
