"""The full Damiao protocol at frame level against one simulated drive (no sockets):
special frames, MIT scaling by the drive's registers, the 0x7FF register protocol over
the whole register table, status codes, the POS_VEL / VEL / POS_FORCE modes, CAN FD
replies in the request's format, and OpenArm's gripper drive."""

from __future__ import annotations

import math
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rob_twin.controllers.damiao_codec import (
    INTEGER_REGISTERS,
    READ_ONLY_REGISTERS,
    REGISTER_SPECS,
    ControlMode,
    MitCommand,
    PosForceCommand,
    PosVelCommand,
    ReadOnlyRegisterError,
    Register,
    RegisterOp,
    Scaling,
    SpecialCommand,
    Status,
    VelCommand,
    decode_pos_force,
    decode_register_frame,
    decode_state,
    encode_mit,
    encode_pos_force,
    encode_pos_vel,
    encode_refresh,
    encode_register_read,
    encode_register_write,
    encode_save,
    encode_vel,
    special_frame,
)
from rob_twin.controllers.damiao_errors import DamiaoFieldError
from rob_twin.models.damiao_motors import (
    DM4310,
    DM4340,
    DM8009,
    GRIPPER_ESC_ID,
    GRIPPER_MST_ID,
    OPENARM_GRIPPER_MOTOR,
    REGISTER_ID,
    SIM_FIRMWARE_VERSION,
    MotorLimits,
)
from rob_twin.twin.drives.damiao_drive import (
    DamiaoDrive,
    DamiaoDriveConfig,
    DriveReply,
)

MOTORS = {1: DM8009, 2: DM8009, 3: DM4340, 4: DM4340, 5: DM4310, 6: DM4310, 7: DM4310}
# openarm_can ``is_in_ranges``: the registers sent as uint32
OPENARM_CAN_UINT32 = {*range(7, 11), *range(13, 17), 35, 36}


def drive(joint: int = 1, **config) -> DamiaoDrive:
    cfg = DamiaoDriveConfig(motor=MOTORS[joint], esc_id=joint, mst_id=joint + 0x10, **config)
    return DamiaoDrive(joint, cfg)


def send(d: DamiaoDrive, arb: int, data: bytes, now=0.0, q=0.0, dq=0.0, **kw) -> DriveReply | None:
    return d.on_frame(arb, data, now, q, dq, **kw)


def special(d: DamiaoDrive, cmd: SpecialCommand, now=0.0, q=0.0, offset=0) -> DriveReply:
    reply = send(d, d.esc_id + offset, special_frame(cmd), now, q)
    assert reply is not None
    return reply


def state(d: DamiaoDrive, reply: DriveReply):
    assert reply.arbitration_id == d.mst_id and len(reply.data) == 8
    return decode_state(reply.data, d.scaling)


def read(d: DamiaoDrive, rid: int, q=0.0) -> DriveReply | None:
    data = bytes((d.esc_id & 0xFF, d.esc_id >> 8, 0x33, rid, 0, 0, 0, 0))
    return send(d, REGISTER_ID, data, q=q)


def write(d: DamiaoDrive, rid: int, value: int | float, now=0.0) -> DriveReply | None:
    return send(d, REGISTER_ID, encode_register_write(d.esc_id, rid, value), now)


def set_mode(d: DamiaoDrive, mode: ControlMode) -> None:
    reply = write(d, Register.CTRL_MODE, int(mode))
    assert reply is not None and decode_register_frame(reply.data).value == int(mode)
    assert d.mode is mode


def mit(d: DamiaoDrive, q=0.0, dq=0.0, kp=0.0, kd=0.0, tau=0.0) -> bytes:
    return encode_mit(MitCommand(q, dq, kp, kd, tau), d.scaling)


def simulate(d: DamiaoDrive, inertia: float, seconds: float, load_nm=0.0, q=0.0, dq=0.0):
    """A 1-DOF joint of ``inertia`` [kg m^2] under the drive's torque and a constant load,
    semi-implicit Euler at 1 kHz; returns the final (q, dq)."""
    dt = 1e-3
    for k in range(int(round(seconds / dt))):
        tau = d.torque(q, dq, k * dt)
        dq += (tau + load_nm) / inertia * dt
        q += dq * dt
    return q, dq


# ---------------------------------------------------------------- special frames


@pytest.mark.parametrize("cmd", list(SpecialCommand))
def test_each_special_frame_is_answered_with_a_state_frame_even_disabled(cmd):
    d = drive(3)
    st_ = state(d, special(d, cmd, q=0.2))
    assert st_.id_nibble == 3 and st_.status in (Status.DISABLED, Status.ENABLED)
    assert st_.status == (Status.ENABLED if cmd is SpecialCommand.ENABLE else Status.DISABLED)


def test_special_frames_in_other_modes_and_on_the_mode_ids():
    d = drive(5)
    set_mode(d, ControlMode.POS_FORCE)
    assert state(d, special(d, SpecialCommand.ENABLE)).status == Status.ENABLED  # on ESC id
    assert state(d, special(d, SpecialCommand.DISABLE, offset=0x300)).status == Status.DISABLED
    assert state(d, special(d, SpecialCommand.ENABLE, offset=0x100)).status == Status.ENABLED
    assert send(d, 0x400 + d.esc_id, special_frame(SpecialCommand.DISABLE)) is None  # no mode


def test_status_nibble_disabled_then_enabled_then_disabled():
    d = drive(1)
    assert state(d, send(d, REGISTER_ID, encode_refresh(1))).status == 0
    assert state(d, special(d, SpecialCommand.ENABLE)).status == 1
    assert state(d, send(d, 1, mit(d))).status == 1
    assert state(d, special(d, SpecialCommand.DISABLE)).status == 0


def test_save_zero_makes_the_present_pose_read_zero():
    d = drive(6, zero_offset_rad=0.3)
    assert state(d, send(d, REGISTER_ID, encode_refresh(6), q=1.0)).q_rad == pytest.approx(
        0.7, abs=4e-4
    )
    st_ = state(d, special(d, SpecialCommand.SET_ZERO, q=1.0))
    assert st_.q_rad == pytest.approx(0.0, abs=4e-4)  # the reply already uses the new zero
    st_ = state(d, send(d, REGISTER_ID, encode_refresh(6), q=1.25))
    assert st_.q_rad == pytest.approx(0.25, abs=4e-4)
    special(d, SpecialCommand.SET_ZERO, q=1.25)  # again: zero at the new pose, not summed
    assert d.zero_rad == pytest.approx(1.25)
    assert decode_register_frame(read(d, Register.XOUT, q=1.5).data).value == pytest.approx(0.25)
    # refused while enabled (answered all the same)
    special(d, SpecialCommand.ENABLE, q=1.5)
    assert state(d, special(d, SpecialCommand.SET_ZERO, q=1.5)).status == Status.ENABLED
    assert d.zero_rad == pytest.approx(1.25)


def test_clear_error_clears_a_latched_error_and_does_nothing_otherwise():
    d = drive(2)
    special(d, SpecialCommand.ENABLE)
    assert state(d, special(d, SpecialCommand.CLEAR_ERROR)).status == Status.ENABLED
    d.supply_v = 10.0
    d.torque(0.0, 0.0, 0.001)
    assert state(d, special(d, SpecialCommand.CLEAR_ERROR)).status == Status.UNDER_VOLTAGE
    d.supply_v = 24.0
    assert state(d, special(d, SpecialCommand.CLEAR_ERROR)).status == Status.DISABLED


# ------------------------------------------------------------------- MIT scaling


def test_mit_frames_and_state_frames_use_the_drives_own_registers():
    d = drive(1)  # DM8009: PMAX 12.5, VMAX 45, TMAX 54
    host = Scaling(12.5, 45.0, 54.0)
    frame = encode_mit(MitCommand(1.0, 2.0, 10.0, 1.0, 5.0), host)
    for rid, value in ((Register.PMAX, 25.0), (Register.VMAX, 90.0), (Register.TMAX, 27.0)):
        assert decode_register_frame(write(d, rid, value).data).value == value
    assert d.scaling == Scaling(25.0, 90.0, 27.0)
    special(d, SpecialCommand.ENABLE)
    reply = send(d, 1, frame, q=0.5)
    c = d.command
    # q and dq spans doubled, tau halved: the drive decodes with what its registers hold
    assert (c.q_rad, c.dq_rad_s, c.tau_nm) == pytest.approx((2.0, 4.0, 2.5), abs=0.05)
    assert decode_state(reply.data, host).q_rad == pytest.approx(0.25, abs=1e-3)
    assert decode_state(reply.data, d.scaling).q_rad == pytest.approx(0.5, abs=1e-3)


# ------------------------------------------------------------ register protocol


def _expected(d: DamiaoDrive, rid: Register, q: float) -> int | float:
    live = {
        Register.VBUS: d.supply_v,
        Register.TPCB: d.t_mos_c,
        Register.TMTR: d.t_rotor_c,
        Register.XOUT: q,
        Register.P_M: q * d.config.motor.gear_ratio,
    }
    return live.get(rid, d.registers.get(rid))


@pytest.mark.parametrize("joint", [1, 3, 5])
def test_every_register_of_the_table_answers_a_read_with_its_type(joint):
    d = drive(joint)
    assert len(Register) == 53 and len(REGISTER_SPECS) == 53
    assert {int(r) for r in INTEGER_REGISTERS} == OPENARM_CAN_UINT32
    for rid in Register:
        reply = read(d, rid, q=0.5)
        assert reply is not None, rid
        assert reply.arbitration_id == d.mst_id and reply.data[:4] == bytes((joint, 0, 0x33, rid))
        raw = reply.data[4:]
        # decode as openarm_can / damiao-motor do: uint32 for 7-10, 13-16, 35-36
        value = struct.unpack("<I" if rid in OPENARM_CAN_UINT32 else "<f", raw)[0]
        expected = _expected(d, rid, 0.5)
        assert value == pytest.approx(expected, rel=1e-6), rid.name
        assert decode_register_frame(reply.data).value == value
        assert reply.data[0] & 0x0F == joint  # damiao-motor routes by D0 & 0xF


def test_named_registers_hold_the_drives_installation():
    d = drive(3, timeout_counts=400)
    values = {rid: decode_register_frame(read(d, rid).data).value for rid in Register}
    assert values[Register.SW_VER] == SIM_FIRMWARE_VERSION
    assert values[Register.CTRL_MODE] == 1 and values[Register.TIMEOUT] == 400
    assert (values[Register.ESC_ID], values[Register.MST_ID]) == (3, 0x13)
    assert (values[Register.PMAX], values[Register.VMAX], values[Register.TMAX]) == (
        12.5,
        10.0,
        28.0,
    )
    assert values[Register.GR] == 40.0 and values[Register.UV] == 15.0
    assert values[Register.VBUS] == 24.0 and values[Register.CAN_BR] == 4
    # raw bytes: uint32 400 vs float32 40.0
    assert read(d, Register.TIMEOUT).data[4:] == struct.pack("<I", 400)
    assert read(d, Register.GR).data[4:] == struct.pack("<f", 40.0)


@pytest.mark.parametrize("rid", [37, 49, 57, 58, 66, 79, 82, 255])
def test_rids_outside_the_table_get_no_reply(rid):
    d = drive(1)
    assert read(d, rid) is None and d.counters.ignored == 1


def test_writes_take_effect_and_echo_the_stored_value():
    d = drive(4)
    writable = [r for r in Register if r not in READ_ONLY_REGISTERS]
    assert Register.SW_VER in READ_ONLY_REGISTERS and Register.CTRL_MODE in writable
    reply = write(d, Register.KP_APR, 12.3)
    fr = decode_register_frame(reply.data)
    assert reply.data[:4] == bytes((4, 0, 0x55, 27)) and fr.op is RegisterOp.WRITE
    assert fr.value == pytest.approx(12.3, rel=1e-6) and d.registers[Register.KP_APR] == fr.value
    reply = write(d, Register.TIMEOUT, 2000)
    assert reply.data[4:] == struct.pack("<I", 2000) and d.timeout_s == pytest.approx(0.1)
    # a new MST id: the echo still leaves on the old one, then everything uses the new one
    assert write(d, Register.MST_ID, 0x24).arbitration_id == 0x14
    assert send(d, REGISTER_ID, encode_refresh(4)).arbitration_id == 0x24


@pytest.mark.parametrize(
    "rid,value",
    [
        (Register.SW_VER, 1),  # read-only
        (Register.GR, 10.0),  # read-only
        (Register.VBUS, 48.0),  # read-only, live
        (Register.CTRL_MODE, 5),  # out of range
        (Register.OT, 250.0),  # out of [80, 200)
        (Register.OC, 1.0),  # out of (0, 1)
        (Register.CAN_BR, 9),  # out of [0, 4]
        (Register.VMAX, 0.0),  # out of (0, ...]
    ],
)
def test_writes_a_drive_cannot_take_get_no_reply_and_change_nothing(rid, value):
    d = drive(5)
    before = dict(d.registers)
    raw = struct.pack("<I" if rid in INTEGER_REGISTERS else "<f", value)
    assert send(d, REGISTER_ID, bytes((5, 0, 0x55, rid)) + raw) is None
    assert d.registers == before and d.counters.refused_writes == 1


def test_host_encoder_refuses_read_only_registers():
    with pytest.raises(ReadOnlyRegisterError, match="14 SW_VER"):
        encode_register_write(1, Register.SW_VER, 1)
    with pytest.raises(DamiaoFieldError, match="register OT"):
        encode_register_write(1, Register.OT, 300.0)


def test_save_is_echoed_when_disabled_and_refused_when_enabled():
    d = drive(2)
    write(d, Register.TIMEOUT, 100)
    for frame in (encode_save(2), bytes((2, 0, 0xAA, 0x01, 0, 0, 0, 0))):  # damiao-motor: D3 1
        reply = send(d, REGISTER_ID, frame)
        assert reply is not None and reply.data == frame and reply.arbitration_id == 0x12
    assert d.saved_registers[Register.TIMEOUT] == 100 and d.counters.saves == 2
    special(d, SpecialCommand.ENABLE)
    assert send(d, REGISTER_ID, encode_save(2)) is None


def test_refresh_answers_with_a_state_frame():
    d = drive(7)
    st_ = state(d, send(d, REGISTER_ID, encode_refresh(7), q=-0.4, dq=1.5))
    assert (st_.q_rad, st_.dq_rad_s) == pytest.approx((-0.4, 1.5), abs=0.02)
    assert st_.t_mos_c == 25 and st_.id_nibble == 7
    assert send(d, REGISTER_ID, encode_refresh(6)) is None  # another drive's


# --------------------------------------------------------------- communication lost


def test_lost_communication_0xD_after_the_timeout_register_is_set():
    d = drive(5)
    special(d, SpecialCommand.ENABLE)
    send(d, 5, mit(d, kp=5.0))
    d.torque(0.0, 0.0, 10.0)
    assert d.status == Status.ENABLED  # TIMEOUT 0: no watchdog
    write(d, Register.TIMEOUT, 200, now=10.0)  # 200 x 50 us = 10 ms
    send(d, 5, mit(d, kp=5.0), now=10.0)
    d.torque(0.0, 0.0, 10.009)
    assert d.status == Status.ENABLED
    send(d, REGISTER_ID, encode_refresh(5), now=10.009)  # a refresh is not a command
    assert d.torque(0.1, 0.0, 10.011) == 0.0
    st_ = state(d, send(d, REGISTER_ID, encode_refresh(5), now=10.012))
    assert st_.status == Status.COMMUNICATION_LOST == 0xD
    # what damiao-motor then does: clear error (drive disabled), enable, command again
    assert state(d, special(d, SpecialCommand.CLEAR_ERROR, now=10.02)).status == 0
    assert state(d, special(d, SpecialCommand.ENABLE, now=10.02)).status == 1
    send(d, 5, mit(d, q=0.1, kp=5.0), now=10.021)
    assert d.torque(0.0, 0.0, 10.022) > 0.0


# ---------------------------------------------------------------- other modes


def test_frames_of_a_mode_not_selected_get_no_reply():
    d = drive(4)
    special(d, SpecialCommand.ENABLE)
    assert send(d, 0x104, encode_pos_vel(PosVelCommand(1.0, 1.0))) is None  # MIT mode
    set_mode(d, ControlMode.POS_VEL)
    assert send(d, 0x004, mit(d, q=0.1, kp=10.0)) is None
    assert send(d, 0x204, encode_vel(VelCommand(1.0))) is None
    assert send(d, 0x304, encode_pos_force(PosForceCommand(1.0, 1.0, 0.5))) is None
    assert d.command is None and d.counters.ignored == 4
    assert state(d, send(d, 0x104, encode_pos_vel(PosVelCommand(1.0, 1.0)))).status == 1


def test_pos_vel_frame_bytes_and_a_disabled_drive_answers_without_moving():
    assert encode_pos_vel(PosVelCommand(1.5, 2.0)) == struct.pack("<ff", 1.5, 2.0)
    d = drive(3)
    set_mode(d, ControlMode.POS_VEL)
    assert state(d, send(d, 0x103, encode_pos_vel(PosVelCommand(1.0, 2.0)))).status == 0
    assert d.command is None and d.torque(0.0, 0.0, 0.001) == 0.0


def test_pos_vel_drives_toward_the_target_within_the_speed_limit():
    d = drive(3)  # DM4340
    set_mode(d, ControlMode.POS_VEL)
    special(d, SpecialCommand.ENABLE)
    send(d, 0x103, encode_pos_vel(PosVelCommand(1.0, 2.0)))
    assert d.command == PosVelCommand(1.0, 2.0)
    assert d.torque(0.0, 0.0, 0.0) > 0.0  # toward +1 rad
    assert d.torque(2.0, 0.0, 0.001) < 0.0  # from the other side, toward it again
    d2 = drive(3)
    set_mode(d2, ControlMode.POS_VEL)
    special(d2, SpecialCommand.ENABLE)
    send(d2, 0x103, encode_pos_vel(PosVelCommand(1.0, 2.0)))
    q, dq = simulate(d2, inertia=0.05, seconds=0.4)
    assert 0.3 < q < 1.0 and dq == pytest.approx(2.0, abs=0.2)  # cruising at the limit
    q, dq = simulate(d2, inertia=0.05, seconds=3.0, load_nm=-5.0, q=q, dq=dq)
    assert q == pytest.approx(1.0, abs=0.01) and abs(dq) < 0.01  # the integral holds the load


def test_vel_mode_4_and_8_byte_frames_and_speed_tracking():
    d = drive(5)  # DM4310
    set_mode(d, ControlMode.VEL)
    special(d, SpecialCommand.ENABLE)
    four, eight = encode_vel(VelCommand(-3.0)), encode_vel(VelCommand(-3.0), pad_to_8=True)
    assert (len(four), len(eight)) == (4, 8) and eight == struct.pack("<f", -3.0) + bytes(4)
    for frame in (four, eight):
        assert state(d, send(d, 0x205, frame)).status == 1 and d.command == VelCommand(-3.0)
    assert send(d, 0x205, b"\x00\x00\x80") is None  # 3 bytes
    assert d.torque(0.0, 0.0, 0.0) < 0.0
    _, dq = simulate(d, inertia=0.01, seconds=4.0, load_nm=0.5)
    assert dq == pytest.approx(-3.0, abs=0.02)


def test_pos_force_frame_bytes_match_the_host_programs():
    cmd = PosForceCommand(0.8, 5.5, 0.25)
    # damiao-motor ``send_cmd_force_pos`` / openarm_can ``pack_posforce_control_data``
    assert encode_pos_force(cmd) == struct.pack("<fHH", 0.8, 550, 2500)
    got = decode_pos_force(encode_pos_force(cmd))
    assert got.dq_limit_rad_s == pytest.approx(5.5) and got.current_pu == pytest.approx(0.25)
    over = decode_pos_force(struct.pack("<fHH", 0.0, 65535, 65535))
    assert (over.dq_limit_rad_s, over.current_pu) == (100.0, 1.0)  # past 10000: 10000
    with pytest.raises(DamiaoFieldError):
        encode_pos_force(PosForceCommand(0.0, 101.0, 0.5))
    with pytest.raises(DamiaoFieldError):
        encode_pos_force(PosForceCommand(0.0, 1.0, 1.5))


def test_pos_force_limits_the_torque_to_its_share_of_tmax():
    d = drive(5)  # DM4310: TMAX 10 Nm, peak 7 Nm
    set_mode(d, ControlMode.POS_FORCE)
    special(d, SpecialCommand.ENABLE)
    send(d, 0x305, encode_pos_force(PosForceCommand(2.0, 10.0, 0.1)))
    assert d.torque(0.0, 0.0, 0.0) == pytest.approx(1.0)  # 0.1 x TMAX, toward the target
    # a grasp: the fingers stop on the object at 0.5 rad; the torque stays at the limit
    for k in range(1, 2000):
        tau = d.torque(0.5, 0.0, k * 1e-3)
    assert tau == pytest.approx(1.0)
    send(d, 0x305, encode_pos_force(PosForceCommand(2.0, 10.0, 1.0)), now=2.0)
    assert d.torque(0.5, 0.0, 2.001) == pytest.approx(7.0)  # capped at the motor's peak
    send(d, 0x305, encode_pos_force(PosForceCommand(-2.0, 10.0, 0.0)), now=2.01)
    assert d.torque(0.5, 0.0, 2.02) == 0.0


def test_a_mode_change_drops_the_held_command():
    d = drive(6)
    special(d, SpecialCommand.ENABLE)
    send(d, 6, mit(d, q=0.5, kp=20.0))
    assert d.torque(0.0, 0.0, 0.001) > 0.0
    set_mode(d, ControlMode.VEL)
    assert d.command is None and d.torque(0.0, 0.0, 0.002) == 0.0


def test_non_finite_mode_frames_are_ignored():
    d = drive(6)
    set_mode(d, ControlMode.POS_VEL)
    special(d, SpecialCommand.ENABLE)
    assert send(d, 0x106, struct.pack("<ff", math.nan, 1.0)) is None
    assert send(d, 0x106, struct.pack("<ff", 1.0, math.inf)) is None
    assert d.command is None and d.counters.ignored == 2


# ------------------------------------------------------------------------ CAN FD


@pytest.mark.parametrize("brs", [False, True])
def test_fd_request_gets_an_fd_reply_classic_gets_classic(brs):
    d = drive(2)
    for frame in (special_frame(SpecialCommand.ENABLE), mit(d), encode_refresh(2)):
        arb = REGISTER_ID if frame[2] == 0xCC else 2
        fd = send(d, arb, frame, is_fd=True, bitrate_switch=brs)
        classic = send(d, arb, frame)
        assert fd.is_fd and fd.bitrate_switch == brs and len(fd.data) == 8
        assert not classic.is_fd and not classic.bitrate_switch
        assert fd.arbitration_id == classic.arbitration_id == 0x12
    reg = send(d, REGISTER_ID, encode_register_read(2, Register.SW_VER), is_fd=True)
    assert reg.is_fd and decode_register_frame(reg.data).value == SIM_FIRMWARE_VERSION
    reply = send(d, 2, mit(d), is_fd=False, bitrate_switch=True)  # BRS exists only in FD
    assert reply == DriveReply(0x12, reply.data, False, False)
    assert reply[0] == 0x12 and reply[1] == reply.data  # still indexes like (id, data)


# ------------------------------------------------------------------------ gripper


def test_the_openarm_gripper_drive():
    assert OPENARM_GRIPPER_MOTOR is DM4310
    assert (GRIPPER_ESC_ID, GRIPPER_MST_ID) == (0x08, 0x18)
    cfg = DamiaoDriveConfig(
        motor=OPENARM_GRIPPER_MOTOR, esc_id=GRIPPER_ESC_ID, mst_id=GRIPPER_MST_ID
    )
    g = DamiaoDrive(8, cfg)
    assert g.accepts(0x08, b"") and g.accepts(0x308, b"") and not g.accepts(0x18, b"")
    assert g.accepts(REGISTER_ID, bytes((8, 0))) and not g.accepts(REGISTER_ID, bytes((7, 0)))
    reply = send(g, 0x08, special_frame(SpecialCommand.ENABLE))
    assert reply.arbitration_id == 0x18 and reply.data[0] == 0x18  # status 1, id nibble 8
    # LeRobot drives it in MIT mode ...
    send(g, 0x08, encode_mit(MitCommand(-0.5, 0.0, 25.0, 0.3, 0.0), g.scaling))
    assert g.torque(0.0, 0.0, 0.001) < 0.0
    # ... openarm_can's GripperComponent in POS_FORCE (it writes CTRL_MODE 4 first)
    set_mode(g, ControlMode.POS_FORCE)
    special(g, SpecialCommand.ENABLE)
    reply = send(g, 0x308, encode_pos_force(PosForceCommand(-1.0, 5.0, 0.3)))
    assert state(g, reply).id_nibble == 8
    assert g.torque(0.0, 0.0, 0.01) == pytest.approx(-3.0)  # 0.3 x TMAX 10 Nm
    assert decode_register_frame(read(g, Register.CTRL_MODE).data).value == 4


# ----------------------------------------------------------------- never crashes


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from([1, 2, 3, 4]),
    st.sampled_from([0x000, 0x100, 0x200, 0x300, None]),
    st.binary(min_size=0, max_size=10),
    st.floats(-20, 20),
    st.floats(-100, 100),
    st.booleans(),
)
def test_any_frame_in_any_mode_never_crashes(mode, offset, data, q, dq, fd):
    d = drive(5)
    set_mode(d, ControlMode(mode))
    special(d, SpecialCommand.ENABLE)
    arb = REGISTER_ID if offset is None else d.esc_id + offset
    reply = send(d, arb, data, q=q, dq=dq, is_fd=fd)
    assert reply is None or (
        reply.arbitration_id == d.mst_id and len(reply.data) == 8 and reply.is_fd == fd
    )
    for k in range(3):
        tau = d.torque(q, dq, 0.001 * (k + 1))
        assert math.isfinite(tau) and abs(tau) <= d.config.motor.peak_torque_nm


def test_motor_table_constants():
    m: MotorLimits
    for m, gear in ((DM8009, 9.0), (DM4340, 40.0), (DM4310, 10.0)):
        assert m.gear_ratio == gear and m.rotor_inertia_kg_m2 > 0
