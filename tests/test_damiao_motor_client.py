"""damiao-motor 1.0.6 (a Damiao host library on the package index, in the ``test`` extra)
drives ``rob-twin bank --robot openarm`` over socketcand, unchanged and through its documented
API only: the ``damiao scan`` command, ``DaMiaoController`` / ``DaMiaoMotor`` (enable,
``ensure_control_mode``, ``send_cmd_mit``, ``get_register`` / ``write_register`` /
``store_parameters``, ``set_can_timeout``, ``clear_error``, ``disable_all``).

damiao-motor opens its bus as ``can.interface.Bus(channel=..., bustype=...)``; python-can
takes the socketcand server's host and port from the ``CAN_CONFIG`` environment variable,
which is how an OpenArm owner points it at the twin (docs/openarm-software.md, "Your
OpenArm software against the twin"). One real-time bank runs in a thread of the test
process (127.0.0.1 only); the
twin's physics is read from the bank's status (``joint_positions_rad``) and, for what the
status does not show (a register, a save), from the in-process drives. The printed timings
(``-s``) are information, never asserted; the deadlines only keep a broken bank from hanging.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from bank_support import bank_in_thread
from rob_twin.controllers.damiao_codec import Register, Status
from rob_twin.twin.bus.bank_process import BankProcess, control

damiao_motor = pytest.importorskip(
    "damiao_motor", reason="damiao-motor is in the test extra: pip install -e '.[test]'"
)
from damiao_motor import DaMiaoController  # noqa: E402

# damiao-motor opens its bus with python-can's deprecated ``bustype=`` (its code, not ours)
pytestmark = pytest.mark.filterwarnings("ignore:The 'bustype' argument:DeprecationWarning")

WAIT_S = 20.0  # bound on any wait (a loaded machine), never a speed figure
# OpenArm's drives, J1..J7 and the gripper, as damiao-motor names the motor types
MOTOR_TYPES = ("8009", "8009", "4340", "4340", "4310", "4310", "4310", "4310")
KP = (240.0, 240.0, 240.0, 240.0, 24.0, 31.0, 25.0, 25.0)  # LeRobot's OpenArm gains
KD = (5.0, 5.0, 3.0, 5.0, 0.3, 0.3, 0.3, 0.3)
DAMIAO = Path(sys.executable).parent / "damiao"  # damiao-motor's command-line tool


@pytest.fixture(scope="module")
def bank():
    with bank_in_thread("test-damiao-motor-bank") as proc:
        yield proc


@pytest.fixture
def can_config(bank, monkeypatch) -> str:
    """``CAN_CONFIG`` pointing python-can's socketcand interface at the bank."""
    value = json.dumps({"host": "127.0.0.1", "port": bank.server.port})
    monkeypatch.setenv("CAN_CONFIG", value)
    return value


def _controller(channel: str, ids=range(1, 9)) -> tuple[DaMiaoController, list]:
    ctl = DaMiaoController(channel=channel, bustype="socketcand")
    motors = [
        ctl.add_motor(motor_id=k, feedback_id=0x10 + k, motor_type=MOTOR_TYPES[k - 1]) for k in ids
    ]
    return ctl, motors


def _run_dumping_on_hang(argv: list[str], env: dict, timeout_s: float = 60.0):
    """``argv`` (a Python console script) run to completion; past ``timeout_s`` it is sent
    SIGABRT, which Python's fault handler answers with every thread's stack on stderr, and
    the test fails with that stack and the output's tail (where it hung, not only that)."""
    proc = subprocess.Popen(
        [sys.executable, "-X", "faulthandler", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        out, err = proc.communicate(timeout=10.0)
        pytest.fail(f"{argv[0]} hung for {timeout_s:g} s:\n{out[-2000:]}\n{err[-6000:]}")
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _until(predicate, what: str):
    deadline = time.monotonic() + WAIT_S
    while not (value := predicate()):
        assert time.monotonic() < deadline, what
        time.sleep(0.005)
    return value


def _status(bank: BankProcess) -> dict:
    st = control(bank.control_port, {"cmd": "status"})
    assert st["ok"], st
    return st


def _drive(bank: BankProcess, channel: str, esc_id: int):
    return bank.bank.buses[channel].drives[esc_id - 1]


@pytest.mark.parametrize("channel", ["can0", "can1"])
def test_damiao_scan_finds_openarms_eight_drives_and_reads_their_registers(
    bank, can_config, channel
):
    assert DAMIAO.is_file(), f"damiao-motor's command {DAMIAO} is not installed"
    t0 = time.perf_counter()
    res = _run_dumping_on_hang(
        [str(DAMIAO), "scan", "--motor-type", "4340", "--bustype", "socketcand"]
        + ["--channel", channel, "--duration", "0.5"],
        {**os.environ, "CAN_CONFIG": can_config},
    )
    wall = time.perf_counter() - t0
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    out = res.stdout
    assert "Found 8 motor(s):" in out, out[-3000:]
    for k in range(1, 9):
        assert f"Motor ID: 0x{k:02X} ({k})" in out
    assert "Motor ID: 0x09" not in out
    # the register table it reads from every drive found (reg 14: firmware, 60: supply)
    assert "sw_ver" in out and "VBus" in out and "ERROR" not in out, out[-3000:]
    print(f"\ndamiao scan {channel}: 8 of 8 drives and their registers in {wall:.2f} s")


def test_enable_then_mit_moves_the_twins_joints_and_disable_stops_them(bank, can_config):
    ctl, motors = _controller("can0")
    try:
        t0 = time.perf_counter()
        ctl.enable_all()
        _until(
            lambda: all(m.get_states().get("status") == "ENABLED" for m in motors),
            "not every drive answered ENABLED",
        )
        t_enable = time.perf_counter() - t0
        for m in motors:
            m.ensure_control_mode("MIT")  # reads register 10 (1 s timeout); MIT already
        q0 = [m.get_states()["pos"] for m in motors]
        goal = list(q0)
        goal[0] += 0.3  # J1 about the vertical: no gravity load
        goal[3] += 0.5  # J4, the elbow
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 1.5:
            for k, m in enumerate(motors):
                m.send_cmd_mit(target_position=goal[k], stiffness=KP[k], damping=KD[k])
            time.sleep(0.002)
        reported = [m.get_states()["pos"] for m in motors]
        st = _status(bank)["buses"]["can0"]
        twin_q = st["joint_positions_rad"]
        assert all(d["enabled"] for d in st["drives"]), st["drives"]
        for j in (0, 3):
            assert abs(twin_q[j] - goal[j]) < 0.2 * abs(goal[j] - q0[j]), (j, q0, twin_q, goal)
            assert abs(reported[j] - twin_q[j]) < 0.02, (j, reported, twin_q)  # one physics tick
        ctl.disable_all()
        _until(
            lambda: all(m.get_states().get("status") == "DISABLED" for m in motors),
            "not every drive answered DISABLED",
        )
        _until(
            lambda: not any(d["enabled"] for d in _status(bank)["buses"]["can0"]["drives"]),
            "the bank still shows enabled drives after disable_all",
        )
    finally:
        ctl.shutdown()
    print(
        f"\ndamiao-motor: enable 8 drives {1e3 * t_enable:.1f} ms; J1 {q0[0]:.3f} -> "
        f"{twin_q[0]:.3f} rad (goal {goal[0]:.3f}), J4 {q0[3]:.3f} -> {twin_q[3]:.3f} rad "
        f"(goal {goal[3]:.3f})"
    )


def test_registers_read_write_and_save_reach_the_drive(bank, can_config):
    esc = 3  # the left arm's J3, a DM4340
    drive = _drive(bank, "can1", esc)
    ctl, (motor,) = _controller("can1", [esc])
    try:
        t0 = time.perf_counter()
        assert motor.get_register(8) == esc and motor.get_register(7) == 0x10 + esc  # its ids
        t_read = time.perf_counter() - t0
        assert motor.get_register(10) == 1  # MIT
        assert motor.get_register(14) == drive.registers[Register.SW_VER]  # firmware
        assert motor.get_register(21) == pytest.approx(12.5)  # PMAX
        motor.write_register(4, 12.5)  # ACC
        assert motor.get_register(4) == pytest.approx(12.5)  # not cached before: read back
        assert drive.registers[Register.ACC] == pytest.approx(12.5)
        saves = drive.counters.saves
        motor.disable()  # a drive saves to flash only while disabled
        _until(lambda: not drive.enabled, "the drive did not disable")
        motor.store_parameters()
        _until(lambda: drive.counters.saves == saves + 1, "the save never reached the drive")
        assert drive.saved_registers[Register.ACC] == pytest.approx(12.5)
    finally:
        ctl.shutdown()
    print(f"\ndamiao-motor: first register read {1e3 * t_read:.1f} ms")


def test_a_can_timeout_latches_lost_communication_and_clear_error_clears_it(bank, can_config):
    esc = 5  # the left arm's J5
    drive = _drive(bank, "can1", esc)
    ctl, (motor,) = _controller("can1", [esc])
    try:
        motor.enable()
        _until(lambda: drive.enabled, "the drive did not enable")
        motor.set_can_timeout(20)  # [ms]: register 9 = 400 x 50 us; nothing sent after it
        _until(lambda: drive.error is Status.COMMUNICATION_LOST, "the watchdog never tripped")

        def reported() -> int | None:
            motor.request_motor_feedback()  # a refresh: answered with a state frame
            time.sleep(0.01)
            return motor.get_states().get("status_code")

        _until(lambda: reported() == 0xD, "damiao-motor never saw LOST_COMM")
        assert motor.get_states()["status"] == "LOST_COMM"
        motor.set_can_timeout(0)  # disarm, then clear
        motor.clear_error()
        _until(lambda: reported() == 0x0, "clear_error did not leave the drive DISABLED")
        assert drive.error is None and not drive.enabled
    finally:
        ctl.shutdown()
