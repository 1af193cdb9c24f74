"""The bank's control port under bad input, fault floods, and one clock on its bus.

One real-time bank runs in a thread of the test process (socketcand and control on
127.0.0.1, ports chosen by the OS); every wait is bounded and the bank is shut down at the
end. Nothing here asserts a speed: the deadlines only keep a broken bank from hanging.
"""

from __future__ import annotations

import json
import socket
import threading
import time

import can
import pytest
from rob_twin.twin.bus.bank_control import MAX_LINE_BYTES, MAX_PENDING_FAULTS
from rob_twin.twin.bus.bank_process import BankConfig, BankProcess, control

WAIT_S = 20.0  # bound on any wait (a loaded 2-core machine), never a speed figure


@pytest.fixture(scope="module")
def bank(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bank")
    ready, recording = folder / "ready.json", folder / "bank.log"
    outcome: dict = {}

    def run() -> None:  # the MjData belongs to the thread that builds the twin
        try:
            proc = BankProcess(
                BankConfig(
                    port=0, max_lag_s=60.0, ready_file=str(ready), record_path=str(recording)
                )
            )
            outcome["proc"] = proc
            outcome["result"] = proc.run()
        except Exception as err:  # noqa: BLE001 - reported by the test that sees it
            outcome["error"] = err

    thread = threading.Thread(target=run, name="test-bank", daemon=True)
    thread.start()
    deadline = time.monotonic() + WAIT_S
    while not ready.exists():
        assert thread.is_alive(), f"bank ended at start: {outcome}"
        assert time.monotonic() < deadline, "bank not serving in time"
        time.sleep(0.05)
    info = json.loads(ready.read_text())
    yield {**info, "thread": thread, "outcome": outcome}
    if thread.is_alive():
        control(info["control_port"], {"cmd": "shutdown"})
        thread.join(WAIT_S)
    assert not thread.is_alive()
    assert "error" not in outcome, outcome
    _check_recording_clock(recording)


def _check_recording_clock(path) -> None:
    """The bank's recording: host frames (rx) and drive frames (tx) on the bus's Unix time."""
    now = time.time()
    kinds = set()
    for msg in can.LogReader(str(path)):
        kinds.add("drive" if 0x91 <= msg.arbitration_id <= 0x97 else "host")
        assert abs(msg.timestamp - now) < 600.0, (hex(msg.arbitration_id), msg.timestamp, now)
    assert "drive" in kinds  # and "host" too when the clock test ran (it sends one)


class Line:
    """One control connection: send a line, read the reply line."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
        self.buf = b""

    def ask(self, data: bytes) -> dict:
        self.sock.sendall(data + b"\n")
        return self.reply()

    def reply(self) -> dict:
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            assert chunk, "the bank closed the connection instead of answering"
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def close(self) -> None:
        self.sock.close()


def _alive(bank) -> None:
    assert bank["thread"].is_alive(), f"the bank died: {bank['outcome']}"


BAD_LINES = {
    "invalid UTF-8": (b"\xff\xfe", "encoding"),
    "deep nesting": (b"[" * 5000, "depth"),
    "a 5,000-digit integer": (b'{"cmd": "status", "n": ' + b"1" * 5000 + b"}", "integer"),
    "NaN": (b'{"cmd":"fault","fault":{"kind":"drop","arm":"right","at":NaN}}', "number"),
    "Infinity": (b'{"cmd":"fault","fault":{"kind":"drop","arm":"right","at":Infinity}}', "number"),
    "1e400": (b'{"cmd":"fault","fault":{"kind":"drop","arm":"right","at":1e400}}', "number"),
    "at as a string": (
        b'{"cmd":"fault","fault":{"kind":"drop","arm":"right","at":"inf"}}',
        "fault",
    ),
    "negative at": (b'{"cmd":"fault","fault":{"kind":"drop","arm":"right","at":-1}}', "fault"),
    "probability 2": (
        b'{"cmd":"fault","fault":{"kind":"drop","arm":"right","probability":2}}',
        "fault",
    ),
    "unknown arm": (b'{"cmd":"fault","fault":{"kind":"drop","arm":"middle"}}', "fault"),
    "fault not an object": (b'{"cmd":"fault","fault":[1]}', "fault"),
    "unknown cmd": (b'{"cmd":"reboot"}', "cmd"),
    "unknown key": (b'{"cmd":"status","verbose":true}', "keys"),
    "a JSON list": (b'["status"]', "message"),
    "syntax": (b'{"cmd": "status"', "syntax"),
}


def test_every_bad_line_is_answered_with_its_field_and_the_connection_is_kept(bank):
    line = Line(bank["control_port"])
    try:
        for name, (data, field) in BAD_LINES.items():
            reply = line.ask(data)
            assert reply["ok"] is False, name
            assert reply["field"] == field, (name, reply)
            assert reply["valid"] and reply["error"], name
        status = line.ask(b'{"cmd": "status"}')  # same connection, still served
    finally:
        line.close()
    assert status["ok"] is True
    assert status["faults"] == []  # nothing bad was queued
    time.sleep(0.2)  # let the pacing thread apply anything queued (there must be nothing)
    _alive(bank)
    assert control(bank["control_port"], {"cmd": "status"})["faults"] == []


def test_a_line_over_the_limit_is_refused_and_closed_cleanly(bank):
    line = Line(bank["control_port"])
    try:
        line.sock.sendall(b"{" + b" " * (MAX_LINE_BYTES + 10))
        reply = line.reply()
        assert reply["ok"] is False and reply["field"] == "line"
        assert str(MAX_LINE_BYTES) in reply["valid"]
        assert line.sock.recv(1) == b""  # closed by the bank
    finally:
        line.close()
    _alive(bank)
    assert control(bank["control_port"], {"cmd": "status"})["ok"] is True


def _fault(**kw) -> dict:
    return {"cmd": "fault", "fault": {"kind": "drop", "arm": "right", "probability": 0.0, **kw}}


def test_ended_faults_are_removed(bank):
    port = bank["control_port"]
    for _ in range(20):
        assert control(port, _fault(duration=0.001))["ok"] is True
    deadline = time.monotonic() + WAIT_S
    while (faults := control(port, {"cmd": "status"})["faults"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert faults == []
    _alive(bank)


def test_pending_faults_are_capped_with_a_clear_refusal(bank):
    port = bank["control_port"]
    try:
        for _ in range(MAX_PENDING_FAULTS):
            assert control(port, _fault(duration=3600))["ok"] is True
        refused = control(port, _fault(duration=3600))
        assert refused["ok"] is False and refused["field"] == "fault"
        assert f"at most {MAX_PENDING_FAULTS}" in refused["valid"]
        time.sleep(0.2)
        assert len(control(port, {"cmd": "status"})["faults"]) == MAX_PENDING_FAULTS
    finally:
        assert control(port, {"cmd": "clear_faults"})["ok"] is True
    deadline = time.monotonic() + WAIT_S
    while control(port, {"cmd": "status"})["faults"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert control(port, _fault(duration=3600))["ok"] is True  # room again after the clear
    assert control(port, {"cmd": "clear_faults"})["ok"] is True
    _alive(bank)


def test_bank_and_host_frames_share_one_clock_on_the_bus(bank):
    """What python -m can.logger sees: drive feedback, a second writer's frames (a fault the
    bank injects) and host frames, all in Unix time."""
    kw = dict(interface="socketcand", host="127.0.0.1", port=bank["socketcand_port"])
    logger = can.Bus(channel="CAN10", receive_own_messages=False, **kw)
    host = can.Bus(channel="CAN10", receive_own_messages=False, **kw)
    try:
        time.sleep(0.3)  # the server's first-frame delay for new clients
        host.send(can.Message(arbitration_id=0x123, data=b"\x01", is_extended_id=False))
        writer = {"kind": "second_writer", "arm": "right", "duration": 1.0}
        assert control(bank["control_port"], {"cmd": "fault", "fault": writer})["ok"]
        seen: dict[str, float] = {}
        deadline = time.monotonic() + WAIT_S
        while len(seen) < 3 and time.monotonic() < deadline:
            msg = logger.recv(timeout=0.2)
            if msg is None:
                continue
            if msg.arbitration_id == 0x123:
                seen["host"] = msg.timestamp
            elif 0x91 <= msg.arbitration_id <= 0x97:
                seen.setdefault("drive", msg.timestamp)
            elif 0x11 <= msg.arbitration_id <= 0x17:
                seen.setdefault("second writer", msg.timestamp)
        now = time.time()
    finally:
        host.shutdown()
        logger.shutdown()
    assert set(seen) == {"host", "drive", "second writer"}
    for who, stamp in seen.items():  # Unix time, not the bank's simulated seconds
        assert abs(stamp - now) < 600.0, (who, stamp, now)
