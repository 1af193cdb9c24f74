"""``rob-twin mirror``: listen only, the twin fed the live host's commands, divergence alarms.

Offline: a reference twin (the "real arm") driven by encoded command frames makes the
feedback; the mirror's twin, fed the same frames, agrees with the same parameters and
raises an alarm with different ones. Live: ``rob-twin bank`` (a subprocess) with the host
stack, and three mirrors listening at once: one per arm as ``rob-twin mirror`` subprocesses
(the left arm stalled by the bank's ``stall`` fault: alarm, exit 1; the right arm: no alarm,
exit 0) and one in this process with a slow drive lag as its parameters (alarm). The bank's
socketcand server counts the frames its clients sent: exactly the host's, so the three
mirrors sent none. Every wait is bounded; 127.0.0.1 only.
"""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import can
import numpy as np
import pytest
from rob_twin.controllers.codec import encode_sample
from rob_twin.models.names import ROB, Arm
from rob_twin.twin.bus.listen_only import ListenOnlyBus, TransmitRefusedError
from rob_twin.twin.bus.mirror import MirrorInputError, MirrorTwin, TwinParameters
from rob_twin.twin.bus.mirror_live import MirrorConfig
from rob_twin.twin.bus.wire import open_virtual
from rob_twin.twin.drives.amber_bank import MotorBank, default_drive_configs
from rob_twin.twin.drives.amber_drive import DRIVE_FRAME
from rob_twin.twin.sim.twin import Twin

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SLOW_DRIVES = TwinParameters(
    name="slow drives (lag 0.3 s)",
    drive_configs=tuple(replace(c, lag_s=0.3) for c in default_drive_configs()),
)


# ---------------------------------------------------------------------- listen only
def test_the_listen_only_bus_passes_frames_in_and_refuses_every_send():
    inner = can.Bus(interface="virtual", channel="mirror-guard", receive_own_messages=False)
    other = can.Bus(interface="virtual", channel="mirror-guard", receive_own_messages=False)
    bus = ListenOnlyBus(inner)
    try:
        other.send(can.Message(arbitration_id=0x91, data=bytes(8), is_extended_id=False))
        got = bus.recv(timeout=1.0)
        assert got is not None and got.arbitration_id == 0x91
        frame = can.Message(arbitration_id=0x11, data=b"\x40\x00\x80", is_extended_id=False)
        with pytest.raises(TransmitRefusedError, match="0x011"):
            bus.send(frame)
        with pytest.raises(TransmitRefusedError):
            bus.send_periodic(frame, 0.01)
        assert bus.send_attempts == 2
        assert other.recv(timeout=0.2) is None  # nothing reached the bus
    finally:
        bus.shutdown()
        other.shutdown()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("tolerance_rad", 0.0),
        ("tolerance_rad", math.nan),
        ("seconds", -1.0),
        ("interface", "virtual"),
        ("telemetry_hz", math.inf),
        ("arms", ()),
    ],
)
def test_a_bad_setting_is_a_typed_error_naming_it(field, value):
    with pytest.raises(MirrorInputError, match=field) as err:
        MirrorConfig(**{field: value})
    assert err.value.field == field


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_cli_bad_input_and_no_bus_exit_2_with_one_json_object():
    from rob_twin.cli.main import main

    for argv in (
        ["mirror", "--tolerance-rad", "-1", "--json"],
        ["mirror", "--port", str(_free_port()), "--seconds", "1", "--json"],
    ):
        done = subprocess.run(
            [str(BIN / "rob-twin"), *argv], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 2, done.stderr
        payload = json.loads(done.stdout)
        assert payload["exit_code"] == 2 and payload["error"]
    assert main(["mirror", "--channels", "right", "--seconds", "1"]) == 2


# ---------------------------------------------------------------------- offline
def _reference_run(seconds: float = 1.5):
    """The 'real arm': a lockstep twin with default drives, settled 1 s, then driven by a
    wave of command frames every 5 ms; feedback every 10 ms. Returns its start pose, the
    start stamp and the frames in order as (stamp [s], message)."""
    twin = Twin()
    dt = twin.scheduler.dt
    bank = MotorBank(twin.model, twin.data, {"CAN10@ref": Arm.RIGHT}, now=twin.time)
    host = open_virtual("CAN10@ref")
    twin.scheduler.add("bus", 1.0 / dt, lambda now: bank.service(now, dt))
    twin.run_for(1.0)
    start = twin.arm_positions(Arm.RIGHT)
    t0 = twin.time
    frames = []
    shape = np.array([1, 1, 1, -1, 1, 0.5, 1]) * 0.2
    for k in range(int(round(seconds / 0.005))):
        t = twin.time
        if k % 2 == 0:
            bank.emit_feedback(t)
            while (m := host.recv(timeout=0)) is not None:
                frames.append((t, m))
        q = start + shape * np.sin(2 * math.pi * 0.8 * (t - t0))
        for fr in encode_sample(q, DRIVE_FRAME):
            msg = can.Message(
                timestamp=t, arbitration_id=fr.arbitration_id, data=fr.data, is_extended_id=False
            )
            host.send(msg)
            frames.append((t, msg))
        twin.step(int(round(0.005 / dt)))
    bank.close()
    host.shutdown()
    return start, t0, frames


@pytest.fixture(scope="module")
def reference():
    return _reference_run()


def _mirror_offline(reference, parameters=None) -> MirrorTwin:
    start, t0, frames = reference
    mirror = MirrorTwin({"right": start}, t0, 0.02, parameters)
    try:
        for _, msg in frames:
            mirror.handle(Arm.RIGHT, msg)
    finally:
        mirror.close()
    return mirror


def test_the_mirror_fed_the_same_frames_agrees_with_the_same_parameters(reference):
    mirror = _mirror_offline(reference)
    s = mirror.summary()
    assert s["commands_fed"] == sum(1 for _, m in reference[2] if m.arbitration_id < 0x80)
    assert sum(s["arms"]["right"]["feedback_frames"]) > 1000
    assert s["alarms"] == []
    assert max(s["arms"]["right"]["max_abs_diff_rad"]) < 0.005  # the wave moves 0.2 rad


def test_different_parameters_raise_one_latched_alarm_per_diverging_joint(reference):
    mirror = _mirror_offline(reference, SLOW_DRIVES)
    s = mirror.summary()
    assert s["parameters"] == SLOW_DRIVES.name
    joints = [a["joint"] for a in s["alarms"]]
    assert joints and len(joints) == len(set(joints))  # latched: one alarm per joint
    for a in s["alarms"]:
        assert abs(a["diff_rad"]) > 0.02 and a["arm"] == "right"
        assert math.isclose(a["real_rad"] - a["twin_rad"], a["diff_rad"], abs_tol=2e-6)
    over = s["arms"]["right"]["frames_over_tolerance"]
    assert sum(over) > len(joints)  # later frames beyond it are counted, not re-alarmed


def test_a_start_pose_that_is_not_seven_finite_values_is_refused():
    with pytest.raises(MirrorInputError, match="start"):
        MirrorTwin({"right": [0.0] * 6}, 0.0, 0.05)
    with pytest.raises(MirrorInputError, match="tolerance_rad"):
        MirrorTwin({"right": [0.0] * 7}, 0.0, -0.1)


# ---------------------------------------------------------------------- live
def _stderr_lines(proc: subprocess.Popen, into: list[str]) -> threading.Thread:
    def pump():
        for line in proc.stderr:
            into.append(line)

    t = threading.Thread(target=pump, daemon=True)
    t.start()
    return t


def _wait(cond, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, f"{what} not within {timeout_s} s"
        time.sleep(0.05)


@pytest.mark.realtime
def test_three_mirrors_on_a_live_bank_alarm_only_where_the_arm_differs_and_send_nothing(
    tmp_path,
):
    """Bank, host and mirrors on the wall clock: the bank and the mirrors may fall 30 s
    behind (a busy machine) before they stop, the host's publication deadline is 0.2 s."""
    from rob_twin.twin.bus.bank_control import control
    from rob_twin.twin.bus.host_process import HostConfig, run_host
    from rob_twin.twin.bus.mirror_live import run_mirror

    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    ready = tmp_path / "ready.json"
    bank = subprocess.Popen(
        [str(BIN / "rob-twin"), "bank", "--port", "0", "--ready-file", str(ready)]
        + ["--seconds", "120", "--max-lag", "30"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    mirrors: dict[str, subprocess.Popen] = {}
    try:
        _wait(lambda: ready.exists() or bank.poll() is not None, 90, "bank serving")
        assert bank.poll() is None, bank.stderr.read()
        info = json.loads(ready.read_text())
        port, ctl = info["socketcand_port"], info["control_port"]
        stall = {"kind": "stall", "arm": "left", "joints": [2]}
        assert control(ctl, {"cmd": "fault", "fault": stall})["ok"]
        logs: dict[str, list[str]] = {}
        pumps = []
        for arm in ("right", "left"):
            mirrors[arm] = subprocess.Popen(
                [str(BIN / "rob-twin"), "mirror", "--port", str(port), "--arm", arm]
                + ["--seconds", "6", "--json", "--telemetry", str(tmp_path / f"{arm}.jsonl")]
                + ["--max-lag", "30"]
                # the right mirror watches the bank's lag (the left one judges every reply)
                + (["--bank-control-port", str(ctl)] if arm == "right" else []),
                cwd=tmp_path,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            logs[arm] = []
            pumps.append(_stderr_lines(mirrors[arm], logs[arm]))
        slow: dict = {}
        slow_ready = threading.Event()
        cfg = MirrorConfig(
            port=port, seconds=6.0, arms=("right",), tolerance_rad=0.05, max_lag_s=30.0
        )
        inproc = threading.Thread(
            target=lambda: slow.update(
                run_mirror(cfg, SLOW_DRIVES, on_ready=lambda _: slow_ready.set())
            ),
            daemon=True,
        )
        inproc.start()
        for arm, lines in logs.items():
            _wait(lambda ls=lines: any("listening" in x for x in ls), 60, f"{arm} mirror ready")
        assert slow_ready.wait(60), "in-process mirror not ready"
        host = run_host(HostConfig(port=port, seconds=2.0, publish_deadline_s=0.2))
        sent = {a: host["arms"][a]["frames_sent"] for a in ("right", "left")}
        assert sent["right"] > 1000 and sent["left"] > 1000, host
        expected = {"CAN10": sent["right"], "CAN11": sent["left"]}

        def from_clients() -> dict:
            status = control(ctl, {"cmd": "status"})
            return {
                ch: st["frames_from_clients"] for ch, st in status["socketcand"]["channels"].items()
            }

        # the host's last frames may still be on their way to the bank: wait until the bank
        # has at least as many as the host sent (a mirror's frame would make it more)
        _wait(
            lambda: all(from_clients()[ch] >= n for ch, n in expected.items()),
            10,
            "the host's frames at the bank",
        )
        # every frame any client of the bank sent is the host's: the mirrors sent none
        assert from_clients() == expected, (from_clients(), sent)
        out = {}
        for arm, proc in mirrors.items():
            proc.wait(timeout=60)
            out[arm] = (proc.returncode, json.loads(proc.stdout.read()))
        for pump in pumps:
            pump.join(timeout=10)
        inproc.join(timeout=60)
    finally:
        for proc in mirrors.values():
            if proc.poll() is None:
                proc.kill()
        if bank.poll() is None and ready.exists():
            control(json.loads(ready.read_text())["control_port"], {"cmd": "shutdown"})
        bank.wait(timeout=30)
    code, right = out["right"]
    assert code == 0 and right["alarms"] == [], {k: right.get(k) for k in ("alarms", "end_reason")}
    assert right["hardware_io"] is False and right["send_attempts"] == 0
    assert right["robot"]["name"] == ROB and len(right["robot"]["model_hash"]) == 16
    assert right["commands_fed"] == sent["right"]
    assert max(right["arms"]["right"]["max_abs_diff_rad"]) < 0.05
    lag = right["bank_lag"]
    assert lag["observable"] is True and lag["answers"] > 10 and lag["control_answering"]
    assert lag["held_samples"] == 0 and right["excluded_for_bank_lag_s"] >= 0.0
    excluded = sum(right["arms"]["right"]["frames_excluded_for_bank_lag"])
    assert excluded == lag["excluded_samples"]
    code, left = out["left"]
    assert code == 1, left
    assert 2 in {a["joint"] for a in left["alarms"]}, left["alarms"]  # the stalled joint
    timed = left["alarm_latency_from_arrival"]["n"] + left["backlog_alarms"]
    assert timed == len(left["alarms"])
    lines = [json.loads(x) for x in (tmp_path / "left.jsonl").read_text().splitlines()]
    assert {x["type"] for x in lines} == {"sample", "alarm", "summary"}
    assert left["bank_lag"]["observable"] is False and left["excluded_for_bank_lag_s"] is None
    assert lines[-1]["type"] == "summary" and lines[-1]["alarms"] == left["alarms"]
    assert any("ALARM left J2" in x for x in logs["left"])
    assert slow["parameters"] == SLOW_DRIVES.name and slow["alarms"], slow
    assert {a["arm"] for a in slow["alarms"]} == {"right"}
