"""The Damiao MIT codec: source examples byte for byte, exhaustive code round trips,
property tests, and typed errors for every value out of range (never clamped)."""

from __future__ import annotations

import math
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rob_twin.controllers.damiao_codec import (
    Q_BITS,
    SMALL_BITS,
    MitCodes,
    MitCommand,
    Register,
    RegisterOp,
    Scaling,
    SpecialCommand,
    Status,
    decode_mit,
    decode_register_frame,
    decode_state,
    encode_mit,
    encode_refresh,
    encode_register_read,
    encode_register_reply,
    encode_register_write,
    encode_save,
    encode_state,
    from_code,
    hex_bytes,
    looks_like_register_reply,
    mit_codes,
    pack_mit,
    special_command,
    special_frame,
    to_code,
    unpack_mit,
)
from rob_twin.controllers.damiao_errors import (
    DamiaoCodecError,
    DamiaoFieldError,
    DamiaoFrameLengthError,
    DamiaoScalingError,
    RegisterOperationError,
    ReservedPatternError,
    UnknownMotorIdError,
    UnknownRegisterError,
)
from rob_twin.models.damiao_motors import (
    DM4310,
    DM4340,
    DM8009,
    KD_MAX,
    KP_MAX,
    OPENARM_ARM_MOTORS,
)
from rob_twin.models.errors import RobTwinError

SETTINGS = settings(max_examples=300, deadline=None)
SCALINGS = [Scaling.of(m) for m in (DM8009, DM4340, DM4310)]


# ------------------------------------------------------------- examples in the sources


def test_mit_example_from_the_sources_byte_for_byte():
    # DM4310, kp 10, kd 0.5, q 0.5 rad, dq 0, tau 0.2 Nm (research notes, section 2.2)
    cmd = MitCommand(q_rad=0.5, dq_rad_s=0.0, kp=10.0, kd=0.5, tau_nm=0.2)
    s = Scaling.of(DM4310)
    assert mit_codes(cmd, s) == MitCodes(q=34078, dq=2047, kp=81, kd=409, tau=2088)
    assert hex_bytes(encode_mit(cmd, s)) == "85 1E 7F F0 51 19 98 28"


def test_state_example_from_the_sources_byte_for_byte():
    # id 1, enabled, q 0.5, dq 0, tau 0.2, 30 / 32 degC (research notes, section 2.3)
    s = Scaling.of(DM4310)
    data = encode_state(1, Status.ENABLED, 0.5, 0.0, 0.2, 30, 32, s)
    assert hex_bytes(data) == "11 85 1E 7F F8 28 1E 20"
    st_ = decode_state(data, s)
    assert (st_.status, st_.id_nibble, st_.t_mos_c, st_.t_rotor_c) == (1, 1, 30, 32)
    assert abs(st_.q_rad - 0.5) < s.step("q") and abs(st_.tau_nm - 0.2) < s.step("tau")


def test_zero_decodes_slightly_negative_as_the_drive_reads_it():
    # research notes: q -0.000191 rad, dq -VMAX/4095, tau -TMAX/4095 (-0.0132 Nm on DM8009)
    s = Scaling.of(DM8009)
    back = decode_mit(encode_mit(MitCommand(0.0, 0.0, 0.0, 0.0, 0.0), s), s)
    assert back.q_rad == pytest.approx(-0.000191, abs=1e-6)
    assert back.dq_rad_s == pytest.approx(-45.0 / 4095)
    assert back.tau_nm == pytest.approx(-0.0132, abs=1e-4)
    assert back.kp == 0.0 and back.kd == 0.0


def test_special_frames():
    assert hex_bytes(special_frame(SpecialCommand.ENABLE)) == "FF FF FF FF FF FF FF FC"
    assert hex_bytes(special_frame(SpecialCommand.DISABLE)) == "FF FF FF FF FF FF FF FD"
    assert hex_bytes(special_frame(SpecialCommand.SET_ZERO)) == "FF FF FF FF FF FF FF FE"
    assert hex_bytes(special_frame(SpecialCommand.CLEAR_ERROR)) == "FF FF FF FF FF FF FF FB"
    for c in SpecialCommand:
        assert special_command(special_frame(c)) is c
    assert special_command(b"\xff" * 8) is None
    assert special_command(b"\xff" * 7 + b"\xfa") is None


def test_mit_encoder_never_emits_a_special_command():
    s = Scaling.of(DM4310)
    # q = +PMAX, dq = +VMAX, kp 500, kd 5, tau code 0xFFC would read as ENABLE
    tau = from_code(0xFFC, -s.tmax_nm, s.tmax_nm, SMALL_BITS)
    with pytest.raises(ReservedPatternError) as err:
        encode_mit(MitCommand(s.pmax_rad, s.vmax_rad_s, KP_MAX, KD_MAX, tau), s, joint=5)
    assert "FF FF FF FF FF FF FF FC" in str(err.value) and "joint 5" in str(err.value)
    ok = from_code(0xFFA, -s.tmax_nm, s.tmax_nm, SMALL_BITS)
    assert (
        special_command(encode_mit(MitCommand(s.pmax_rad, s.vmax_rad_s, KP_MAX, KD_MAX, ok), s))
        is None
    )


def test_register_frames_bytes():
    assert hex_bytes(encode_register_read(1, Register.PMAX)) == "01 00 33 15 00 00 00 00"
    assert hex_bytes(encode_register_write(3, Register.VMAX, 10.0)) == (
        "03 00 55 16 " + hex_bytes(struct.pack("<f", 10.0))
    )
    assert hex_bytes(encode_register_write(2, Register.TIMEOUT, 2000)) == "02 00 55 09 D0 07 00 00"
    assert hex_bytes(encode_save(7)) == "07 00 AA 00 00 00 00 00"
    assert hex_bytes(encode_refresh(4)) == "04 00 CC 00 00 00 00 00"
    reply = encode_register_reply(3, RegisterOp.READ, Register.VMAX, 10.0)
    fr = decode_register_frame(reply)
    assert (fr.esc_id, fr.op, fr.rid, fr.value) == (3, RegisterOp.READ, Register.VMAX, 10.0)
    assert looks_like_register_reply(reply, 3) and not looks_like_register_reply(reply, 4)
    ids = decode_register_frame(encode_register_reply(1, RegisterOp.READ, Register.MST_ID, 0x11))
    assert ids.value == 0x11 and isinstance(ids.value, int)


def test_motor_table_is_the_named_source():
    assert [m.model for m in OPENARM_ARM_MOTORS] == ["DM8009"] * 2 + ["DM4340"] * 2 + ["DM4310"] * 3
    assert [(m.pmax_rad, m.vmax_rad_s, m.tmax_nm) for m in (DM8009, DM4340, DM4310)] == [
        (12.5, 45.0, 54.0),
        (12.5, 10.0, 28.0),
        (12.5, 30.0, 10.0),
    ]
    # the physical peak is inside the wire range, and distinct from it
    for m in (DM8009, DM4340, DM4310):
        assert m.peak_torque_nm < m.tmax_nm


# -------------------------------------------------------------- exhaustive round trips


def test_every_16_bit_q_code_round_trips_exactly():
    for s in SCALINGS:
        lo, hi, bits = s.range("q")
        half = s.step("q") / 2
        for u in range(1 << Q_BITS):
            x = from_code(u, lo, hi, bits)
            assert abs(x - (lo + u * s.step("q"))) < half
            assert to_code(x, lo, hi, bits) == u


@pytest.mark.parametrize("field", ["dq", "kp", "kd", "tau"])
def test_every_12_bit_code_round_trips_exactly(field):
    for s in SCALINGS:
        lo, hi, bits = s.range(field)
        step = s.step(field)
        for u in range(1 << SMALL_BITS):
            x = from_code(u, lo, hi, bits)
            assert abs(x - (lo + u * step)) < step / 2
            assert to_code(x, lo, hi, bits) == u


# ------------------------------------------------------------------ property tests


def _in(field, s):
    lo, hi, _ = s.range(field)
    return st.floats(lo, hi, allow_nan=False)


@SETTINGS
@given(
    st.sampled_from(SCALINGS).flatmap(
        lambda s: st.tuples(
            st.just(s), _in("q", s), _in("dq", s), _in("kp", s), _in("kd", s), _in("tau", s)
        )
    )
)
def test_encode_decode_truncates_within_one_step(args):
    s, q, dq, kp, kd, tau = args
    cmd = MitCommand(q, dq, kp, kd, tau)
    try:
        data = encode_mit(cmd, s)
    except ReservedPatternError:
        return
    back = decode_mit(data, s)
    for name, x, y in (
        ("q", q, back.q_rad),
        ("dq", dq, back.dq_rad_s),
        ("kp", kp, back.kp),
        ("kd", kd, back.kd),
        ("tau", tau, back.tau_nm),
    ):
        # truncation: the decoded value is never above the sent one, and less than a step below
        assert -1e-9 <= x - y < s.step(name) + 1e-9, name


@SETTINGS
@given(st.binary(min_size=8, max_size=8))
def test_every_8_byte_payload_unpacks_and_repacks(data):
    assert pack_mit(unpack_mit(data)) == data
    s = SCALINGS[0]
    st_ = decode_state(data, s)
    assert -s.pmax_rad <= st_.q_rad <= s.pmax_rad and 0 <= st_.status <= 15


@SETTINGS
@given(st.binary(min_size=0, max_size=12))
def test_register_decode_only_typed_errors(data):
    try:
        fr = decode_register_frame(data)
    except DamiaoCodecError:
        return
    assert len(data) == 8 and fr.op in RegisterOp


@SETTINGS
@given(
    st.sampled_from(["q", "dq", "kp", "kd", "tau"]), st.floats(allow_nan=True, allow_infinity=True)
)
def test_out_of_range_is_a_typed_error_never_clamped(field, value):
    s = Scaling.of(DM4340)
    lo, hi, _ = s.range(field)
    values = {"q": 0.0, "dq": 0.0, "kp": 1.0, "kd": 0.1, "tau": 0.0}
    values[field] = value
    cmd = MitCommand(values["q"], values["dq"], values["kp"], values["kd"], values["tau"])
    if lo <= value <= hi:
        encode_mit(cmd, s)
        return
    with pytest.raises(DamiaoFieldError) as err:
        encode_mit(cmd, s, joint=3)
    assert isinstance(err.value, RobTwinError) and isinstance(err.value, ValueError)
    assert err.value.bound == (lo, hi) and "joint 3" in str(err.value)


# ------------------------------------------------------------------ typed refusals


def test_bad_inputs_are_typed_errors():
    s = Scaling.of(DM4310)
    with pytest.raises(DamiaoFieldError, match=r"kd \[Nm s/rad\] 6.0 is outside \[0.0, 5.0\]"):
        encode_mit(MitCommand(0, 0, 10, 6.0, 0), s)
    with pytest.raises(DamiaoFieldError, match="tau"):
        encode_mit(MitCommand(0, 0, 10, 1, 10.5), s)  # DM4310 TMAX is 10 Nm
    with pytest.raises(DamiaoFieldError):
        encode_mit(MitCommand("x", 0, 10, 1, 0), s)  # type: ignore[arg-type]
    with pytest.raises(DamiaoFrameLengthError, match="7 data bytes; expected 8"):
        decode_mit(b"\x00" * 7, s)
    with pytest.raises(DamiaoFrameLengthError):
        decode_state(None, s)  # type: ignore[arg-type]
    with pytest.raises(DamiaoScalingError):
        Scaling(0.0, 1.0, 1.0)
    with pytest.raises(DamiaoScalingError):
        Scaling(12.5, math.nan, 1.0)
    with pytest.raises(UnknownRegisterError, match="21 PMAX"):
        encode_register_read(1, 99)
    with pytest.raises(UnknownMotorIdError):
        encode_register_read(0, Register.PMAX)
    with pytest.raises(DamiaoFieldError, match="register VMAX"):
        encode_register_write(1, Register.VMAX, -1.0)
    with pytest.raises(DamiaoFieldError, match="register TIMEOUT"):
        encode_register_write(1, Register.TIMEOUT, 1.5)
    with pytest.raises(DamiaoFieldError, match="register CTRL_MODE"):
        encode_register_write(1, Register.CTRL_MODE, 7)
    with pytest.raises(RegisterOperationError, match="0x44"):
        decode_register_frame(bytes((1, 0, 0x44, 21, 0, 0, 0, 0)))
    with pytest.raises(DamiaoFieldError, match="status"):
        encode_state(1, 16, 0, 0, 0, 25, 25, s)
    with pytest.raises(DamiaoFieldError, match="feedback q"):
        encode_state(1, 1, 13.0, 0, 0, 25, 25, s)


def test_mismatched_scaling_scales_commands_wrongly():
    # the real DM4340 VMAX bug: host 8 rad/s, drive 10 -> velocity commands x 1.25
    host = Scaling(12.5, 8.0, 28.0)
    drive = Scaling.of(DM4340)
    got = decode_mit(encode_mit(MitCommand(0.0, 2.0, 0.0, 0.0, 0.0), host), drive)
    assert got.dq_rad_s == pytest.approx(2.5, abs=2 * drive.step("dq"))
