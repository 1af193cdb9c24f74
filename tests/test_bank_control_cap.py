"""The bank's control port caps its connections, in all and per source address: one more
closes the open connection (of all, or of its address) that sent no command for the
longest, which is answered one JSON line naming the limit; the new one and the others are
served. Bad caps are typed errors naming the range.

One real-time bank runs in a thread of the test process (caps set through ``BankConfig``);
127.0.0.2 is a second loopback source address (Linux routes all of 127.0.0.0/8 to lo).
Every wait is bounded and the bank is shut down at the end.
"""

from __future__ import annotations

import json
import socket

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


def test_one_address_past_its_cap_closes_its_quietest_connection_and_the_others_are_served(
    bank,
):
    try:
        other = _connect(bank, "127.0.0.2")
    except OSError as err:
        pytest.skip(f"no second loopback address here: {err}")
    held = [_connect(bank) for _ in range(PER_ADDRESS)]
    try:
        assert all(_status(s)["ok"] for s in held)  # served: both places are taken
        assert _status(held[1])["ok"]  # held[0] is now the quietest
        with _connect(bank) as extra:
            assert _status(extra)["ok"] is True  # the new client is served at once
        evicted = _refusal(held[0])
        assert evicted["ok"] is False and evicted["field"] == "connection", evicted
        assert f"at most {PER_ADDRESS} at once from one address" in evicted["valid"], evicted
        assert "closed for a new client" in evicted["error"], evicted
        assert _status(other)["ok"] is True  # another address keeps its place
        assert _status(held[1])["ok"] is True  # and the one that talked is served on
    finally:
        for s in [*held, other]:
            s.close()


def _served(port: int, source: str) -> socket.socket:
    """A connection from ``source`` the bank serves."""
    s = _connect(port, source)
    assert _status(s)["ok"], source
    return s


def test_past_the_total_cap_a_new_connection_closes_the_quietest_of_all(bank):
    try:
        held = [_served(bank, f"127.0.0.{2 + k}") for k in range(TOTAL)]  # one per address
    except OSError as err:
        pytest.skip(f"no more loopback addresses here: {err}")
    try:
        for s in held[1:]:
            assert _status(s)["ok"]  # held[0] is the quietest
        with _connect(bank, "127.0.0.9") as extra:  # a fresh address: only the total is full
            assert _status(extra)["ok"] is True
        evicted = _refusal(held[0])
        assert evicted["ok"] is False and evicted["field"] == "connection", evicted
        assert evicted["valid"].startswith(f"at most {TOTAL} at once;"), evicted
        assert all(_status(s)["ok"] for s in held[1:])
    finally:
        for s in held:
            s.close()


def test_connections_that_keep_talking_cannot_keep_a_new_client_out(bank):
    """Every place held by connections that each send a command now and then: a new client
    is still served (the quietest of them makes room), again and again."""
    try:
        held = [_served(bank, f"127.0.0.{20 + k}") for k in range(TOTAL)]
    except OSError as err:
        pytest.skip(f"no more loopback addresses here: {err}")
    try:
        for round_ in range(3):
            for s in held:
                if s.fileno() >= 0:
                    try:
                        _status(s)
                    except (AssertionError, OSError, json.JSONDecodeError):
                        s.close()  # made room earlier: its eviction line, then closed
            with _connect(bank, f"127.0.0.{40 + round_}") as extra:
                assert _status(extra)["ok"] is True, round_
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
