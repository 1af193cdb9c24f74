"""``rob-twin bank --robot openarm``: the Damiao drives served over socketcand, every frame
answered on receipt (127.0.0.1 only).

One real-time bank runs in a thread of the test process; a python-can socketcand client
talks to it as LeRobot does (enable, MIT frames, refresh). Nothing asserts a speed: the
command-to-reply latency is measured and printed (``-s`` shows it), the deadlines only keep
a broken bank from hanging.
"""

from __future__ import annotations

import statistics
import time

import can
import pytest
from bank_support import bank_in_thread
from rob_twin.controllers.damiao_codec import (
    MitCommand,
    PosForceCommand,
    Register,
    RegisterOp,
    Scaling,
    SpecialCommand,
    decode_register_frame,
    decode_state,
    encode_mit,
    encode_pos_force,
    encode_refresh,
    encode_register_read,
    encode_register_write,
    special_frame,
)
from rob_twin.models import damiao_motors as DM
from rob_twin.models.names import Arm
from rob_twin.models.robot import robot_of
from rob_twin.twin.bus.bank_process import PING_ID, PONG_ID, BankProcess, control
from rob_twin.twin.drives.damiao_live import (
    GRIPPER_MOTOR,
    BusResponder,
    LiveDamiaoBank,
    gripper_drive_ids,
)
from rob_twin.twin.sim.twin import Twin, TwinConfig

WAIT_S = 20.0  # bound on any wait (a loaded machine), never a speed figure
REPLY_WAIT_S = 2.0  # how long a client waits for one reply before calling it missing
ROBOT = robot_of("openarm")
CHANNELS = {arm: ROBOT.channel(arm) for arm in Arm}  # can0 / can1


def _drives(arm: Arm) -> list[tuple[int, int, Scaling]]:
    """(ESC, MST, scaling) of each drive of ``arm``: the joints, then the gripper."""
    motors = [DM.MOTORS[m] for m in ROBOT.motors]
    out = [(e, r, Scaling.of(m)) for e, r, m in zip(DM.ESC_IDS, DM.MST_IDS, motors, strict=True)]
    esc, mst = gripper_drive_ids()
    return [*out, (esc, mst, Scaling.of(GRIPPER_MOTOR))]


DRIVES = {arm: _drives(arm) for arm in Arm}


@pytest.fixture(scope="module")
def bank():
    with bank_in_thread("test-damiao-bank") as proc:
        yield proc


def _client(proc: BankProcess, arm: Arm) -> can.BusABC:
    return can.Bus(
        interface="socketcand", channel=CHANNELS[arm], host="127.0.0.1", port=proc.server.port
    )


class _Exchange:
    """Sends frames and collects the replies by id, timing each from its command."""

    def __init__(self, bus: can.BusABC):
        self.bus = bus
        self.sent = 0
        self.latencies_s: list[float] = []

    def round(self, frames: list[tuple[int, bytes]], reply_ids: list[int]) -> dict[int, bytes]:
        """Send ``frames`` back to back; the first reply on each of ``reply_ids``."""
        t_sent = {}
        for (ident, data), rid in zip(frames, reply_ids, strict=True):
            self.bus.send(can.Message(arbitration_id=ident, data=data, is_extended_id=False))
            t_sent[rid] = time.perf_counter()
            self.sent += 1
        got: dict[int, bytes] = {}
        deadline = time.monotonic() + REPLY_WAIT_S
        while len(got) < len(reply_ids) and time.monotonic() < deadline:
            msg = self.bus.recv(timeout=0.05)
            if msg is None or msg.arbitration_id not in t_sent or msg.arbitration_id in got:
                continue
            self.latencies_s.append(time.perf_counter() - t_sent[msg.arbitration_id])
            got[msg.arbitration_id] = bytes(msg.data)
        return got


def _status(proc: BankProcess) -> dict:
    st = control(proc.control_port, {"cmd": "status"})
    assert st["ok"], st
    return st


def _enable_all(ex: _Exchange, arm: Arm) -> dict[int, bytes]:
    drives = DRIVES[arm]
    return ex.round(
        [(e, special_frame(SpecialCommand.ENABLE)) for e, _, _ in drives], [r for _, r, _ in drives]
    )


def test_every_drive_of_both_arms_answers_enable_at_once_on_the_robots_channels(bank):
    st = _status(bank)
    assert set(st["buses"]) == {"can0", "can1"} and st["robot"]["family"] == "damiao"
    for arm in Arm:
        bus = _client(bank, arm)  # enables within a millisecond of its open
        try:
            ex = _Exchange(bus)
            got = _enable_all(ex, arm)
        finally:
            bus.shutdown()
        drives = DRIVES[arm]
        assert set(got) == {r for _, r, _ in drives}, f"{arm.value}: replies from {sorted(got)}"
        for esc, mst, scaling in drives:
            state = decode_state(got[mst], scaling)
            assert state.id_nibble == esc & 0xF and state.status == 1  # enabled
    st = _status(bank)
    for arm in Arm:
        view = st["buses"][CHANNELS[arm]]
        assert [d["drive"] for d in view["drives"]] == [f"j{k}" for k in range(1, 8)] + ["gripper"]
        assert view["fd"] is True  # OpenArm's file says fd:1M/5M


def test_mit_frames_hold_and_move_a_joint_and_every_frame_is_answered(bank):
    arm = Arm.RIGHT
    drives = DRIVES[arm]
    bus = _client(bank, arm)
    try:
        ex = _Exchange(bus)
        start = _enable_all(ex, arm)
        assert len(start) == len(drives)
        q0 = [decode_state(start[r], s).q_rad for _, r, s in drives]
        goal = q0[0] + 0.3  # joint 1 (about the vertical: no gravity load)
        kp = (240, 240, 240, 240, 24, 31, 25, 25)  # LeRobot's OpenArm gains
        kd = (5, 5, 3, 5, 0.3, 0.3, 0.3, 0.3)
        replies = len(start)
        t_end = time.monotonic() + 1.5
        q1 = q0[0]
        while time.monotonic() < t_end:
            targets = [goal, *q0[1:]]
            frames = [
                (e, encode_mit(MitCommand(q, 0.0, kp[k], kd[k], 0.0), s))
                for k, ((e, _, s), q) in enumerate(zip(drives, targets, strict=True))
            ]
            got = ex.round(frames, [r for _, r, _ in drives])
            replies += len(got)
            if drives[0][1] in got:
                q1 = decode_state(got[drives[0][1]], drives[0][2]).q_rad
            time.sleep(0.002)  # ~250 Hz cycles
        refresh = ex.round([(0x7FF, encode_refresh(drives[0][0]))], [drives[0][1]])
        replies += len(refresh)
    finally:
        bus.shutdown()
    assert replies == ex.sent, f"{ex.sent - replies} of {ex.sent} frames unanswered"
    assert abs(goal - q1) < 0.5 * abs(goal - q0[0]), (q0[0], q1, goal)
    status_q = _status(bank)["buses"][CHANNELS[arm]]["joint_positions_rad"][0]
    assert abs(goal - status_q) < 0.5 * abs(goal - q0[0])
    lat = sorted(ex.latencies_s)
    p50, p95 = statistics.median(lat), lat[int(0.95 * (len(lat) - 1))]
    print(
        f"\ncommand-to-reply over socketcand: {len(lat)} replies, p50 {1e3 * p50:.3f} ms, "
        f"p95 {1e3 * p95:.3f} ms, max {1e3 * lat[-1]:.3f} ms"
    )


def test_registers_modes_pings_and_a_foreign_reply(bank):
    arm = Arm.LEFT
    esc, mst, _ = DRIVES[arm][2]
    bus = _client(bank, arm)
    try:
        ex = _Exchange(bus)
        got = ex.round([(0x7FF, encode_register_read(esc, Register.CTRL_MODE))], [mst])
        reg = decode_register_frame(got[mst])
        assert (reg.op, reg.rid, reg.value) == (RegisterOp.READ, Register.CTRL_MODE, 1)
        # the gripper in POS_FORCE mode (openarm_can's GripperComponent): frames on 0x308
        g_esc, g_mst, _ = DRIVES[arm][-1]
        got = ex.round([(0x7FF, encode_register_write(g_esc, Register.CTRL_MODE, 4))], [g_mst])
        assert decode_register_frame(got[g_mst]).value == 4
        cmd = encode_pos_force(PosForceCommand(0.1, 5.0, 0.5))
        assert g_mst in ex.round([(g_esc + 0x300, cmd)], [g_mst])
        assert not ex.round([(g_esc, bytes(8))], [g_mst])  # an MIT frame: not its mode
        got = ex.round([(0x7FF, encode_register_write(g_esc, Register.CTRL_MODE, 1))], [g_mst])
        assert decode_register_frame(got[g_mst]).value == 1
        pong = ex.round([(PING_ID, b"\x01\x02")], [PONG_ID])
        assert pong[PONG_ID] == b"\x01\x02"
        before = bank.server.report()["channels"][CHANNELS[arm]]["foreign_feedback"]
        bus.send(can.Message(arbitration_id=mst, data=bytes(8), is_extended_id=False))
        deadline = time.monotonic() + WAIT_S
        while bank.server.report()["channels"][CHANNELS[arm]]["foreign_feedback"] == before:
            assert time.monotonic() < deadline, "a client frame on a reply id was not counted"
            time.sleep(0.01)
    finally:
        bus.shutdown()


def test_a_fault_from_the_control_port_silences_a_drive_until_cleared(bank):
    arm = Arm.LEFT
    drives = DRIVES[arm]
    refresh = [(0x7FF, encode_refresh(e)) for e, _, _ in drives]
    ids = [r for _, r, _ in drives]
    fault = {"kind": "feedback_freeze", "arm": arm.value, "joints": [3]}
    assert control(bank.control_port, {"cmd": "fault", "fault": fault})["ok"]
    bus = _client(bank, arm)
    try:
        ex = _Exchange(bus)
        deadline = time.monotonic() + WAIT_S
        while len(got := ex.round(refresh, ids)) == len(ids):  # until the bank applied it
            assert time.monotonic() < deadline, "the fault never silenced the drive"
        assert set(ids) - set(got) == {drives[2][1]}  # joint 3 only
        st = _status(bank)["buses"][CHANNELS[arm]]
        assert st["silenced"] >= 1 and st["drives"][2]["silent"] is True
        assert control(bank.control_port, {"cmd": "clear_faults"})["ok"]
        while len(ex.round(refresh, ids)) < len(ids):
            assert time.monotonic() < deadline, "the drive stayed silent after clear_faults"
    finally:
        bus.shutdown()


def test_a_socketcan_style_bus_gets_fd_replies_to_fd_frames_and_classic_to_classic():
    """The SocketCAN path (``BusResponder``: a receive thread per interface) on a python-can
    virtual bus standing in for an FD-capable vcan: replies take the format they answer."""
    twin = Twin(TwinConfig(), model=ROBOT.model())
    live = LiveDamiaoBank(ROBOT, twin.model, twin.data, {"fdtest": Arm.RIGHT}, fd=True)
    rx = BusResponder(
        can.Bus(interface="virtual", channel="fdtest", receive_own_messages=False),
        "fdtest",
        live.respond,
    ).start()
    host = can.Bus(interface="virtual", channel="fdtest", receive_own_messages=False)
    try:
        replies = {}
        for fd, brs in ((True, True), (True, False), (False, False)):
            host.send(
                can.Message(
                    arbitration_id=0x01,
                    data=special_frame(SpecialCommand.ENABLE),
                    is_extended_id=False,
                    is_fd=fd,
                    bitrate_switch=brs,
                )
            )
            replies[fd, brs] = host.recv(timeout=WAIT_S)
        for (fd, brs), msg in replies.items():
            assert msg is not None and msg.arbitration_id == 0x11
            assert (msg.is_fd, msg.bitrate_switch) == (fd, brs)
        assert rx.report()["replies"] == 3 and rx.report()["errors"] == 0
    finally:
        host.shutdown()
        rx.close()
        live.close()


def test_power_loss_and_a_second_writer_from_the_control_port(bank):
    """power_loss: no drive answers; second_writer: another node's MIT hold frames on every
    ESC id, and the drives' answers to them, reach every client."""
    arm = Arm.RIGHT
    drives = DRIVES[arm]
    refresh = [(0x7FF, encode_refresh(e)) for e, _, _ in drives]
    ids = [r for _, r, _ in drives]
    bus = _client(bank, arm)
    try:
        ex = _Exchange(bus)
        fault = {"kind": "power_loss", "arm": arm.value}
        assert control(bank.control_port, {"cmd": "fault", "fault": fault})["ok"]
        deadline = time.monotonic() + WAIT_S
        while ex.round(refresh, ids):  # until the bank applied it: nobody answers
            assert time.monotonic() < deadline, "power_loss never silenced the bus"
        assert _status(bank)["buses"][CHANNELS[arm]]["unpowered"] >= len(ids)
        assert control(bank.control_port, {"cmd": "clear_faults"})["ok"]
        while len(ex.round(refresh, ids)) < len(ids):
            assert time.monotonic() < deadline, "the drives never came back after power_loss"
        fault = {"kind": "second_writer", "arm": arm.value, "rate_hz": 100.0, "duration": 1.0}
        assert control(bank.control_port, {"cmd": "fault", "fault": fault})["ok"]
        seen: set[int] = set()
        while not ({e for e, _, _ in drives} | set(ids)) <= seen:
            assert time.monotonic() < deadline, f"second writer's traffic not seen: {seen}"
            msg = bus.recv(timeout=0.1)
            if msg is not None:
                seen.add(msg.arbitration_id)
        # the status is a snapshot taken after each physics chunk: it may lag the bus a bit
        while _status(bank)["buses"][CHANNELS[arm]]["second_writer_frames"] < len(drives):
            assert time.monotonic() < deadline, "the status never counted the second writer"
            time.sleep(0.01)
    finally:
        bus.shutdown()
