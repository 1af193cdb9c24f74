"""The Damiao MIT-mode codec: OpenArm's motors on the wire (8-byte CAN payloads).

Facts (enactic/openarm_can ``dm_motor_control.cpp``; cross-checked with the Astera
Rust codec; ``shared/research/openarm_can_models.md`` section 2):

MIT command, 8 bytes on the motor's ESC id, big-endian bit-packed::

    q 16 bit | dq 12 | kp 12 | kd 12 | tau 12
    D0 q[15:8]  D1 q[7:0]  D2 dq[11:4]  D3 dq[3:0]<<4 | kp[11:8]  D4 kp[7:0]
    D5 kd[11:4] D6 kd[3:0]<<4 | tau[11:8]  D7 tau[7:0]

Each field maps [lo, hi] onto 0..2^bits-1 with *truncation* (not rounding):
``u = trunc((x - lo) / (hi - lo) * (2^bits - 1))``; decode ``x = u / (2^bits - 1) *
(hi - lo) + lo``. Ranges: q [-PMAX, PMAX], dq [-VMAX, VMAX], tau [-TMAX, TMAX] (per
motor, registers 21/22/23), kp [0, 500], kd [0, 5]. Because of the truncation a
command of exactly 0 decodes slightly negative (q -0.000191 rad on PMAX 12.5).

Robust truncation: a value that sits exactly on a code in decimal may reach us a few
ulps below it in binary floating point; ``_to_code`` snaps to the nearest code when
within ``SNAP_TOLERANCE_CODES`` (1e-9 of a code) and truncates otherwise, so every
code round-trips exactly (decode then encode gives the code back).

Out-of-range or non-finite values are typed errors (``DamiaoFieldError``), never
clamped in silence (openarm_can clamps; we refuse, so a wrong scaling shows).

State (feedback) frame, 8 bytes on the MST id::

    D0 status[3:0]<<4 | ESC_ID & 0xF   D1-D2 q16   D3 dq[11:4]   D4 dq[3:0]<<4 | tau[11:8]
    D5 tau[7:0]   D6 T_MOS [degC]   D7 T_rotor [degC]

Special commands: ``FF FF FF FF FF FF FF xx`` to the ESC id, xx = FC enable, FD
disable, FE set zero, FB clear error. An MIT payload equal to one of them is refused
(``ReservedPatternError``). Register frames on 0x7FF: ``id_lo id_hi op rid v0 v1 v2 v3``,
op 0x33 read, 0x55 write (RAM), 0xAA save, 0xCC refresh; value little-endian, uint32
for integer registers, float32 otherwise; replies echo D0-D3 and carry the value.

Pure stdlib: no mujoco, no numpy.
"""

from __future__ import annotations

import enum
import math
import struct
from dataclasses import dataclass
from typing import NamedTuple

from rob_twin.controllers.damiao_errors import (
    DamiaoFieldError,
    DamiaoFrameLengthError,
    DamiaoScalingError,
    RegisterOperationError,
    ReservedPatternError,
    UnknownMotorIdError,
    UnknownRegisterError,
)
from rob_twin.models.damiao_motors import KD_MAX, KP_MAX, MotorLimits

FRAME_LEN = 8
Q_BITS = 16
SMALL_BITS = 12
Q_CODES = (1 << Q_BITS) - 1  # 65535
SMALL_CODES = (1 << SMALL_BITS) - 1  # 4095
SNAP_TOLERANCE_CODES = 1e-9
MAX_STD_ID = 0x7FF
STATUS_MAX = 0xF
TEMPERATURE_MAX_C = 255


# --------------------------------------------------------------------------- scaling


@dataclass(frozen=True)
class Scaling:
    """The mapping ranges of one motor (its PMAX/VMAX/TMAX registers) [rad, rad/s, Nm]."""

    pmax_rad: float
    vmax_rad_s: float
    tmax_nm: float

    def __post_init__(self) -> None:
        for name in ("pmax_rad", "vmax_rad_s", "tmax_nm"):
            v = getattr(self, name)
            if (
                isinstance(v, bool)
                or not isinstance(v, (int, float))
                or not (math.isfinite(v) and v > 0)
            ):
                raise DamiaoScalingError(name, v)
            object.__setattr__(self, name, float(v))

    @classmethod
    def of(cls, motor: MotorLimits) -> Scaling:
        return cls(motor.pmax_rad, motor.vmax_rad_s, motor.tmax_nm)

    def step(self, field: str) -> float:
        """One code of ``field`` ("q", "dq", "kp", "kd", "tau") in its unit."""
        lo, hi, bits = self.range(field)
        return (hi - lo) / ((1 << bits) - 1)

    def range(self, field: str) -> tuple[float, float, int]:
        """(lower, upper, bits) of a field."""
        if field == "q":
            return -self.pmax_rad, self.pmax_rad, Q_BITS
        if field == "dq":
            return -self.vmax_rad_s, self.vmax_rad_s, SMALL_BITS
        if field == "tau":
            return -self.tmax_nm, self.tmax_nm, SMALL_BITS
        if field == "kp":
            return 0.0, KP_MAX, SMALL_BITS
        if field == "kd":
            return 0.0, KD_MAX, SMALL_BITS
        raise UnknownRegisterError(field, {0: "q", 1: "dq", 2: "kp", 3: "kd", 4: "tau"})


# ------------------------------------------------------------------ scalar mapping


def to_code(
    x: object, lo: float, hi: float, bits: int, field: str = "value", joint: int | None = None
) -> int:
    """``x`` in [lo, hi] -> code 0..2^bits-1, truncating; DamiaoFieldError otherwise."""
    try:
        v = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise DamiaoFieldError(field, x, lo, hi, joint) from None
    if not lo <= v <= hi:  # also refuses NaN and inf
        raise DamiaoFieldError(field, x, lo, hi, joint)
    codes = (1 << bits) - 1
    scaled = (v - lo) / (hi - lo) * codes  # >= 0
    u = int(scaled)  # truncation toward zero
    if scaled - u >= 1.0 - SNAP_TOLERANCE_CODES:  # a few ulps below the next code: that code
        u += 1
    return u if u < codes else codes


def from_code(u: int, lo: float, hi: float, bits: int) -> float:
    """Code -> value: ``u / (2^bits - 1) * (hi - lo) + lo``."""
    return u / ((1 << bits) - 1) * (hi - lo) + lo


# --------------------------------------------------------------------- MIT command


class MitCommand(NamedTuple):
    """One MIT command: q [rad], dq [rad/s], kp [Nm/rad], kd [Nm s/rad], tau [Nm].
    (NamedTuples, not frozen dataclasses: fourteen are built every 2 ms.)"""

    q_rad: float
    dq_rad_s: float
    kp: float
    kd: float
    tau_nm: float


class MitCodes(NamedTuple):
    """The raw codes of an MIT frame (q 16 bit, the rest 12 bit)."""

    q: int
    dq: int
    kp: int
    kd: int
    tau: int


def pack_mit(c: MitCodes) -> bytes:
    return bytes(
        (
            c.q >> 8,
            c.q & 0xFF,
            c.dq >> 4,
            ((c.dq & 0xF) << 4) | (c.kp >> 8),
            c.kp & 0xFF,
            c.kd >> 4,
            ((c.kd & 0xF) << 4) | (c.tau >> 8),
            c.tau & 0xFF,
        )
    )


def unpack_mit(data: bytes) -> MitCodes:
    d = _payload(data, "MIT command")
    return MitCodes(
        q=(d[0] << 8) | d[1],
        dq=(d[2] << 4) | (d[3] >> 4),
        kp=((d[3] & 0xF) << 8) | d[4],
        kd=(d[5] << 4) | (d[6] >> 4),
        tau=((d[6] & 0xF) << 8) | d[7],
    )


def mit_codes(cmd: MitCommand, scaling: Scaling, joint: int | None = None) -> MitCodes:
    """Checked, truncating codes of ``cmd`` under ``scaling``; DamiaoFieldError if out of range."""
    s = scaling
    return MitCodes(
        q=to_code(cmd.q_rad, -s.pmax_rad, s.pmax_rad, Q_BITS, "q [rad]", joint),
        dq=to_code(cmd.dq_rad_s, -s.vmax_rad_s, s.vmax_rad_s, SMALL_BITS, "dq [rad/s]", joint),
        kp=to_code(cmd.kp, 0.0, KP_MAX, SMALL_BITS, "kp [Nm/rad]", joint),
        kd=to_code(cmd.kd, 0.0, KD_MAX, SMALL_BITS, "kd [Nm s/rad]", joint),
        tau=to_code(cmd.tau_nm, -s.tmax_nm, s.tmax_nm, SMALL_BITS, "tau [Nm]", joint),
    )


def encode_mit(cmd: MitCommand, scaling: Scaling, joint: int | None = None) -> bytes:
    """The 8-byte MIT payload of ``cmd``; refuses out-of-range values and reserved patterns."""
    data = pack_mit(mit_codes(cmd, scaling, joint))
    if special_command(data) is not None:
        raise ReservedPatternError(data, joint)
    return data


def decode_mit(data: bytes, scaling: Scaling) -> MitCommand:
    """What a drive reads from an MIT payload under *its* scaling (any 8 bytes decode)."""
    c = unpack_mit(data)
    s = scaling
    return MitCommand(
        q_rad=from_code(c.q, -s.pmax_rad, s.pmax_rad, Q_BITS),
        dq_rad_s=from_code(c.dq, -s.vmax_rad_s, s.vmax_rad_s, SMALL_BITS),
        kp=from_code(c.kp, 0.0, KP_MAX, SMALL_BITS),
        kd=from_code(c.kd, 0.0, KD_MAX, SMALL_BITS),
        tau_nm=from_code(c.tau, -s.tmax_nm, s.tmax_nm, SMALL_BITS),
    )


# -------------------------------------------------------------------- special frames


class SpecialCommand(enum.IntEnum):
    """Last byte of ``FF FF FF FF FF FF FF xx`` (sent to the ESC id)."""

    CLEAR_ERROR = 0xFB
    ENABLE = 0xFC
    DISABLE = 0xFD
    SET_ZERO = 0xFE


SPECIAL_PREFIX = b"\xff" * 7


def special_frame(command: SpecialCommand) -> bytes:
    return SPECIAL_PREFIX + bytes((SpecialCommand(command).value,))


def special_command(data: bytes) -> SpecialCommand | None:
    """The special command an 8-byte payload carries, or None for an ordinary MIT frame."""
    if len(data) == FRAME_LEN and data[:7] == SPECIAL_PREFIX and 0xFB <= data[7] <= 0xFE:
        return SpecialCommand(data[7])
    return None


# ---------------------------------------------------------------------- state frame


class Status(enum.IntEnum):
    """The status nibble of a state frame (several independent drivers agree)."""

    DISABLED = 0x0
    ENABLED = 0x1
    SENSOR_ERROR = 0x5
    PARAMETER_ERROR = 0x6
    OVER_VOLTAGE = 0x8
    UNDER_VOLTAGE = 0x9
    OVER_CURRENT = 0xA
    MOS_OVER_TEMPERATURE = 0xB
    ROTOR_OVER_TEMPERATURE = 0xC
    COMMUNICATION_LOST = 0xD
    OVERLOAD = 0xE

    @property
    def is_error(self) -> bool:
        return self.value >= 0x5


class MotorState(NamedTuple):
    """A decoded state frame: q [rad], dq [rad/s], tau [Nm], temperatures [degC]."""

    status: int  # the raw nibble (``Status(status)`` when it is a known one)
    id_nibble: int  # ESC_ID & 0xF
    q_rad: float
    dq_rad_s: float
    tau_nm: float
    t_mos_c: int
    t_rotor_c: int

    @property
    def known_status(self) -> Status | None:
        try:
            return Status(self.status)
        except ValueError:
            return None


def encode_state(
    esc_id: int,
    status: int,
    q_rad: float,
    dq_rad_s: float,
    tau_nm: float,
    t_mos_c: int,
    t_rotor_c: int,
    scaling: Scaling,
) -> bytes:
    """The 8-byte state frame a drive sends; every field checked (DamiaoFieldError)."""
    _check_int("esc_id", esc_id, 1, MAX_STD_ID)
    _check_int("status", status, 0, STATUS_MAX)
    _check_int("t_mos_c", t_mos_c, 0, TEMPERATURE_MAX_C)
    _check_int("t_rotor_c", t_rotor_c, 0, TEMPERATURE_MAX_C)
    s = scaling
    q = to_code(q_rad, -s.pmax_rad, s.pmax_rad, Q_BITS, "feedback q [rad]")
    dq = to_code(dq_rad_s, -s.vmax_rad_s, s.vmax_rad_s, SMALL_BITS, "feedback dq [rad/s]")
    tau = to_code(tau_nm, -s.tmax_nm, s.tmax_nm, SMALL_BITS, "feedback tau [Nm]")
    return bytes(
        (
            (status << 4) | (esc_id & 0xF),
            q >> 8,
            q & 0xFF,
            dq >> 4,
            ((dq & 0xF) << 4) | (tau >> 8),
            tau & 0xFF,
            t_mos_c,
            t_rotor_c,
        )
    )


def decode_state(data: bytes, scaling: Scaling) -> MotorState:
    """Decode a state frame under the host's scaling (any 8 bytes decode)."""
    d = _payload(data, "state frame")
    s = scaling
    q = (d[1] << 8) | d[2]
    dq = (d[3] << 4) | (d[4] >> 4)
    tau = ((d[4] & 0xF) << 8) | d[5]
    return MotorState(
        status=d[0] >> 4,
        id_nibble=d[0] & 0xF,
        q_rad=from_code(q, -s.pmax_rad, s.pmax_rad, Q_BITS),
        dq_rad_s=from_code(dq, -s.vmax_rad_s, s.vmax_rad_s, SMALL_BITS),
        tau_nm=from_code(tau, -s.tmax_nm, s.tmax_nm, SMALL_BITS),
        t_mos_c=d[6],
        t_rotor_c=d[7],
    )


# ------------------------------------------------------------------------ registers


class RegisterOp(enum.IntEnum):
    READ = 0x33
    WRITE = 0x55
    SAVE = 0xAA
    REFRESH = 0xCC


REGISTER_OPS = {op.value: op.name.lower() for op in RegisterOp}


class Register(enum.IntEnum):
    """The registers this project reads and writes (RIDs from openarm_can ``RID``)."""

    UV = 0  # under-voltage threshold [V], float
    OT = 2  # over-temperature threshold [degC], float
    MST_ID = 7  # reply (master) id, uint32
    ESC_ID = 8  # command id, uint32
    TIMEOUT = 9  # CAN timeout, units of 50 us, 0 = off, uint32
    CTRL_MODE = 10  # 1 MIT, 2 POS_VEL, 3 VEL, 4 POS_FORCE, uint32
    PMAX = 21  # [rad], float
    VMAX = 22  # [rad/s], float
    TMAX = 23  # [Nm], float


REGISTER_NAMES = {r.value: r.name for r in Register}
INTEGER_REGISTERS = frozenset(
    {Register.MST_ID, Register.ESC_ID, Register.TIMEOUT, Register.CTRL_MODE}
)
TIMEOUT_UNIT_S = 50e-6  # one TIMEOUT register count [s] (Seeed wiki)
CTRL_MODE_MIT = 1
UINT32_MAX = 0xFFFFFFFF
FLOAT32_MAX = 3.4028234663852886e38


def register(rid: object) -> Register:
    """``rid`` as a known Register; UnknownRegisterError (listing the known ones) otherwise."""
    if isinstance(rid, bool) or not isinstance(rid, int):
        raise UnknownRegisterError(rid, REGISTER_NAMES)
    try:
        return Register(rid)
    except ValueError:
        raise UnknownRegisterError(rid, REGISTER_NAMES) from None


def check_register_value(rid: Register, value: object) -> int | float:
    """A value the register can hold, or DamiaoFieldError (names the register and its range)."""
    name = f"register {rid.name}"
    if rid in INTEGER_REGISTERS:
        lo, hi = {
            Register.MST_ID: (1, MAX_STD_ID),
            Register.ESC_ID: (1, MAX_STD_ID),
            Register.TIMEOUT: (0, UINT32_MAX),
            Register.CTRL_MODE: (1, 4),
        }[rid]
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise DamiaoFieldError(name, value, lo, hi)
        return int(value)
    lo = 0.0 if rid in (Register.PMAX, Register.VMAX, Register.TMAX) else -FLOAT32_MAX
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise DamiaoFieldError(name, value, lo, FLOAT32_MAX) from None
    if not (math.isfinite(v) and lo <= v <= FLOAT32_MAX) or (lo == 0.0 and v == 0.0):
        raise DamiaoFieldError(name, value, lo, FLOAT32_MAX)
    return struct.unpack("<f", struct.pack("<f", v))[0]  # what float32 keeps


@dataclass(frozen=True)
class RegisterFrame:
    """A frame on 0x7FF (request) or its reply on the MST id: target ESC id, op, register,
    value (int for integer registers, float32 otherwise; None for read requests)."""

    esc_id: int
    op: RegisterOp
    rid: int
    value: int | float | None
    raw_value: bytes


def _value_bytes(rid: Register, value: int | float) -> bytes:
    return struct.pack("<I", value) if rid in INTEGER_REGISTERS else struct.pack("<f", value)


def _register_head(esc_id: int, op: RegisterOp, rid: int) -> bytes:
    _check_int("esc_id", esc_id, 1, MAX_STD_ID)
    return bytes((esc_id & 0xFF, esc_id >> 8, int(op), rid))


def encode_register_read(esc_id: int, rid: int) -> bytes:
    r = register(rid)
    return _register_head(esc_id, RegisterOp.READ, r) + bytes(4)


def encode_register_write(esc_id: int, rid: int, value: int | float) -> bytes:
    r = register(rid)
    return _register_head(esc_id, RegisterOp.WRITE, r) + _value_bytes(
        r, check_register_value(r, value)
    )


def encode_register_reply(esc_id: int, op: RegisterOp, rid: int, value: int | float) -> bytes:
    """The drive's answer to a read or write: D0-D3 echoed, the register's value in D4-D7."""
    r = register(rid)
    return _register_head(esc_id, op, r) + _value_bytes(r, check_register_value(r, value))


def encode_save(esc_id: int) -> bytes:
    return _register_head(esc_id, RegisterOp.SAVE, 0) + bytes(4)


def encode_refresh(esc_id: int) -> bytes:
    return _register_head(esc_id, RegisterOp.REFRESH, 0) + bytes(4)


def decode_register_frame(data: bytes) -> RegisterFrame:
    """Decode a request on 0x7FF or a register reply. Unknown ops and (for read/write)
    unknown registers are typed errors; the value is decoded by the register's type."""
    d = _payload(data, "register frame")
    esc_id = d[0] | (d[1] << 8)
    if d[2] not in REGISTER_OPS:
        raise RegisterOperationError(d[2], REGISTER_OPS)
    op = RegisterOp(d[2])
    raw = bytes(d[4:8])
    if op in (RegisterOp.SAVE, RegisterOp.REFRESH):
        return RegisterFrame(esc_id, op, d[3], None, raw)
    r = register(d[3])
    value: int | float = (
        struct.unpack("<I", raw)[0] if r in INTEGER_REGISTERS else struct.unpack("<f", raw)[0]
    )
    return RegisterFrame(esc_id, op, int(r), value, raw)


def looks_like_register_reply(data: bytes, esc_id: int) -> bool:
    """True when a frame on a MST id has the shape of a register reply for ``esc_id``.

    State frames and register replies share the MST id; the host tells them apart by
    what it asked (openarm_can switches a callback mode). This is the shape half."""
    return (
        len(data) == FRAME_LEN
        and data[0] == (esc_id & 0xFF)
        and data[1] == esc_id >> 8
        and data[2] in (RegisterOp.READ, RegisterOp.WRITE)
        and data[3] in REGISTER_NAMES
    )


# --------------------------------------------------------------------------- helpers


def _payload(data: object, what: str) -> bytes:
    try:
        raw = bytes(data)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise DamiaoFrameLengthError(what, -1, FRAME_LEN) from None
    if len(raw) != FRAME_LEN:
        raise DamiaoFrameLengthError(what, len(raw), FRAME_LEN)
    return raw


def _check_int(field: str, value: object, lo: int, hi: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        if field == "esc_id":
            raise UnknownMotorIdError(value, f"1..0x{hi:X}")
        raise DamiaoFieldError(field, value, lo, hi)


def hex_bytes(data: bytes) -> str:
    return " ".join(f"{b:02X}" for b in data)
