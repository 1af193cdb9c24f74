"""Host and motor bank in two processes over a socketcand link on 127.0.0.1 (no other address).

The bank (``rob-twin bank``) runs in a subprocess, paced in real time; the host stack
(owners, codec, CanTransport through python-can's ``socketcand`` interface) runs in
the test process. Every wait is bounded.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import can
import pytest
from rob_twin.twin.bus.bank_process import control
from rob_twin.twin.bus.host_process import HostConfig, HostError, run_host

pytestmark = pytest.mark.realtime  # a bank and a host on the wall clock
ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 90.0


@pytest.fixture(scope="module")
def bank(tmp_path_factory):
    ready = tmp_path_factory.mktemp("bank") / "ready.json"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rob_twin.cli.main",
            "bank",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--ready-file",
            str(ready),
            "--seconds",
            "120",
            "--feedback-rate",
            "100",
            "--max-lag",
            "30",
        ],  # a shared machine under load: the bank may lag, not die
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")},
    )
    deadline = time.monotonic() + START_TIMEOUT_S
    try:
        while not ready.exists():
            if proc.poll() is not None:
                pytest.fail(f"bank exited with {proc.returncode}: {proc.stderr.read()}")
            if time.monotonic() > deadline:
                pytest.fail(f"bank not serving within {START_TIMEOUT_S} s")
            time.sleep(0.1)
        info = json.loads(ready.read_text())
        assert info["host"] == "127.0.0.1"
        yield info
        if proc.poll() is not None:
            pytest.fail(f"bank died with {proc.returncode}: {proc.stderr.read()[-2000:]}")
        reply = control(info["control_port"], {"cmd": "shutdown"})
        assert reply["ok"]
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def _host(bank, **kw) -> HostConfig:
    # this machine's two cores are shared with other test runs: a process may sleep for
    # tens of ms, so the deadlines here test the plumbing, not real-time behaviour
    return HostConfig(
        port=bank["socketcand_port"],
        publish_deadline_s=0.25,
        feedback_timeout_s=kw.pop("feedback_timeout_s", 1.0),
        **kw,
    )


def _status_after_the_frames_landed(bank) -> dict:
    """The bank's status once every frame a finished (closed) client sent has been serviced.

    A client's close waits until the bank's socketcand server has read all it sent (and
    put it on the bank's bus); the bank drains its buses every physics step. The status
    seen now may be older than that; the second newer one comes from a step that began
    after it, hence after the frames were queued. Bounded: a stalled bank fails."""
    port = bank["control_port"]
    seen = [control(port, {"cmd": "status"})["sim_time_s"]]
    deadline = time.monotonic() + 60.0
    while True:
        st = control(port, {"cmd": "status"})
        if st["sim_time_s"] > seen[-1]:
            seen.append(st["sim_time_s"])
            if len(seen) == 3:
                return st
        assert time.monotonic() < deadline, f"the bank did not step within 60 s (sim time {seen})"
        time.sleep(0.01)


def test_host_streams_a_motion_and_stops_it(bank):
    before = control(bank["control_port"], {"cmd": "status"})
    rep = run_host(_host(bank, seconds=1.6, stop_after_s=1.0, stream="wave"))
    after = _status_after_the_frames_landed(bank)
    for arm in ("right", "left"):
        a = rep["arms"][arm]
        assert a["fault"] is None, a["fault_reason"]
        assert a["mode"] == "stopped"
        assert a["samples_published"] > 50 and a["frames_sent"] == 7 * a["samples_published"]
        assert a["feedback_frames"] > 50 and a["max_travel_rad"] > 0.005
    for ch in ("CAN10", "CAN11"):
        got = after["buses"][ch]["command_frames"] - before["buses"][ch]["command_frames"]
        assert got == rep["arms"][after["buses"][ch]["arm"]]["frames_sent"]


def test_a_fault_injected_through_the_control_channel_latches_on_the_host(bank):
    port = bank["control_port"]

    def inject():
        assert control(
            port, {"cmd": "fault", "fault": {"kind": "feedback_freeze", "arm": "right", "at": 0.2}}
        )["ok"]

    try:
        # the freeze starts 0.2 s of bank time after the bank takes the command and latches
        # after the 1 s feedback timeout; a loaded bank lags real time, so the host runs 3 s
        rep = run_host(_host(bank, seconds=3.0, stream="hold"), on_ready=inject)
    finally:
        control(port, {"cmd": "clear_faults"})
    why = {a: (x["fault"], x["fault_reason"]) for a, x in rep["arms"].items()}
    assert rep["arms"]["right"]["fault"] == "stale_feedback", why
    assert rep["arms"]["left"]["fault"] is None, why


def test_second_bank_on_a_channel_is_detected_and_reported(bank):
    bus = can.Bus(
        interface="socketcand", channel="CAN11", host="127.0.0.1", port=bank["socketcand_port"]
    )
    try:
        bus.send(can.Message(arbitration_id=0x93, data=bytes(8), is_extended_id=False))
        deadline = time.monotonic() + 5
        while True:
            st = control(bank["control_port"], {"cmd": "status"})["socketcand"]["channels"]["CAN11"]
            if st["foreign_feedback"] or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    finally:
        bus.shutdown()
    assert st["foreign_feedback"] >= 1 and "second bank" in st["last_error"]


def test_unknown_channel_and_missing_bank_are_clear_errors_in_bounded_time(bank):
    t0 = time.monotonic()
    with pytest.raises(HostError, match="refused channel 'CAN99'"):
        run_host(_host(bank, channels={"right": "CAN99", "left": "CAN11"}, seconds=0.5))
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    with pytest.raises(HostError, match="no socketcand server"):
        run_host(HostConfig(port=free, seconds=0.5, connect_timeout_s=1.0))
    assert time.monotonic() - t0 < 10
    bad = control(bank["control_port"], {"cmd": "fault", "fault": {"kind": "meltdown"}})
    assert not bad["ok"] and "unknown fault kind" in bad["error"]


def test_socketcan_vcan0_when_the_host_has_it():
    if not hasattr(socket, "AF_CAN"):
        pytest.skip("SocketCAN unavailable: this Python/OS has no AF_CAN")
    try:
        s = socket.socket(socket.AF_CAN, socket.SOCK_RAW, socket.CAN_RAW)
        s.bind(("vcan0",))
        s.close()
    except OSError as err:
        pytest.skip(f"SocketCAN interface vcan0 unavailable ({err}); vcan setup: docs/bus.md")
    ready = Path(os.environ.get("TMPDIR", "/tmp")) / f"bank-vcan-{os.getpid()}.json"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rob_twin.cli.main",
            "bank",
            "--interface",
            "socketcan",
            "--channels",
            "right=vcan0",
            "--seconds",
            "30",
            "--ready-file",
            str(ready),
        ],
        cwd=ROOT,
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ready.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        rep = run_host(
            HostConfig(
                interface="socketcan",
                channels={"right": "vcan0"},
                arms=("right",),
                seconds=1.0,
                stop_after_s=0.6,
            )
        )
        assert rep["arms"]["right"]["fault"] is None and rep["arms"]["right"]["mode"] == "stopped"
        control(json.loads(ready.read_text())["control_port"], {"cmd": "shutdown"})
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def test_a_recording_plays_onto_the_live_bank(bank, tmp_path):
    from rob_twin.cli.main import main
    from rob_twin.twin.bus.recording import TrafficRecorder
    from rob_twin.twin.sim.closed_loop import ClosedLoop

    path = tmp_path / "short.log"
    with ClosedLoop() as lp:
        lp.command("right", lp.measured("right") + 0.02)
        rec = TrafficRecorder(lp, path)
        lp.run_for(0.3)
        rec.close()
    host_frames = sum(
        1 for ln in path.read_text().splitlines() if " can10 01" in ln or " can11 01" in ln
    )
    before = control(bank["control_port"], {"cmd": "status"})["buses"]
    assert (
        main(
            [
                "replay",
                str(path),
                "--onto",
                "socketcand",
                "--port",
                str(bank["socketcand_port"]),
                "--speed",
                "2",
            ]
        )
        == 0
    )
    after = _status_after_the_frames_landed(bank)["buses"]
    got = sum(after[ch]["command_frames"] - before[ch]["command_frames"] for ch in after)
    assert host_frames == 2 * 7 * 60 and got == host_frames
