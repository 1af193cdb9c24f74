"""The Damiao codec (MIT mode and the rest): OpenArm's motors on the wire (8-byte CAN payloads).

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
for registers 7-10, 13-16, 35-36, float32 otherwise; replies echo D0-D3 and carry the
value. ``Register`` / ``REGISTER_SPECS`` hold the whole Damiao register table (types,
read-only ones, write ranges). The other control modes (POS_VEL, VEL, POS_FORCE) have
little-endian frames on ESC_ID + 0x100 / 0x200 / 0x300 (``encode_pos_vel`` and friends).

Pure stdlib: no mujoco, no numpy.
"""

from __future__ import annotations

import enum
import math
import struct
from dataclasses import dataclass
from typing import NamedTuple

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


# ------------------------------------------------------------- other control modes
#
# Little-endian, on ESC_ID + the mode's id offset (``ControlMode.id_offset``); facts from
# openarm_can ``pack_*_control_data`` and damiao-motor ``send_cmd_*``:
#   POS_VEL   (+0x100): ``<ff``  position [rad], speed limit [rad/s]
#   VEL       (+0x200): ``<f``   velocity [rad/s]; 4 bytes (openarm_can) or padded to 8
#                                (damiao-motor)
#   POS_FORCE (+0x300): ``<fHH`` position [rad], speed limit x100 (0..10000 = 0..100
#                                rad/s), current limit per unit x10000 (0..10000 = 0..1)

POS_FORCE_SPEED_SCALE = 100.0  # uint16 counts per rad/s
POS_FORCE_CURRENT_SCALE = 10000.0  # uint16 counts per unit of the current limit
POS_FORCE_MAX_COUNTS = 10000
VEL_FRAME_LEN = 4


class PosVelCommand(NamedTuple):
    """POS_VEL: go to q [rad] at no more than ``dq_limit`` [rad/s]."""

    q_rad: float
    dq_limit_rad_s: float


class VelCommand(NamedTuple):
    """VEL: turn at dq [rad/s]."""

    dq_rad_s: float


class PosForceCommand(NamedTuple):
    """POS_FORCE: go to q [rad] at no more than ``dq_limit`` [rad/s] (0..100) with the
    current limited to ``current_pu`` (0..1) of the drive's maximum."""

    q_rad: float
    dq_limit_rad_s: float
    current_pu: float


ModeCommand = MitCommand | PosVelCommand | VelCommand | PosForceCommand


def _finite_f32(x: object, field: str) -> bytes:
    try:
        v = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise DamiaoFieldError(field, x, -FLOAT32_MAX, FLOAT32_MAX) from None
    if not (math.isfinite(v) and abs(v) <= FLOAT32_MAX):
        raise DamiaoFieldError(field, x, -FLOAT32_MAX, FLOAT32_MAX)
    return struct.pack("<f", v)


def encode_pos_vel(cmd: PosVelCommand) -> bytes:
    """The 8-byte POS_VEL payload (finite values only; DamiaoFieldError otherwise)."""
    return _finite_f32(cmd.q_rad, "q [rad]") + _finite_f32(cmd.dq_limit_rad_s, "dq limit [rad/s]")


def decode_pos_vel(data: bytes) -> PosVelCommand:
    q, v = struct.unpack("<ff", _payload(data, "POS_VEL command"))
    return PosVelCommand(q, v)


def encode_vel(cmd: VelCommand, pad_to_8: bool = False) -> bytes:
    """The VEL payload: 4 bytes (openarm_can), or zero-padded to 8 (damiao-motor)."""
    data = _finite_f32(cmd.dq_rad_s, "dq [rad/s]")
    return data + bytes(4) if pad_to_8 else data


def decode_vel(data: bytes) -> VelCommand:
    """A VEL payload of 4 to 8 bytes (the first four carry the velocity)."""
    raw = bytes(data)
    if not VEL_FRAME_LEN <= len(raw) <= FRAME_LEN:
        raise DamiaoFrameLengthError("VEL command", len(raw), VEL_FRAME_LEN)
    return VelCommand(struct.unpack("<f", raw[:4])[0])


def encode_pos_force(cmd: PosForceCommand) -> bytes:
    """The 8-byte POS_FORCE payload; the limits must lie in 0..100 rad/s and 0..1 per unit
    (DamiaoFieldError otherwise: never clamped); counts truncate like openarm_can's cast."""
    for field, x, hi in (
        ("dq limit [rad/s]", cmd.dq_limit_rad_s, POS_FORCE_MAX_COUNTS / POS_FORCE_SPEED_SCALE),
        ("current limit [pu]", cmd.current_pu, POS_FORCE_MAX_COUNTS / POS_FORCE_CURRENT_SCALE),
    ):
        if not (isinstance(x, (int, float)) and 0.0 <= x <= hi):
            raise DamiaoFieldError(field, x, 0.0, hi)
    v = min(int(cmd.dq_limit_rad_s * POS_FORCE_SPEED_SCALE), POS_FORCE_MAX_COUNTS)
    i = min(int(cmd.current_pu * POS_FORCE_CURRENT_SCALE), POS_FORCE_MAX_COUNTS)
    return _finite_f32(cmd.q_rad, "q [rad]") + struct.pack("<HH", v, i)


def decode_pos_force(data: bytes) -> PosForceCommand:
    """What a drive reads from a POS_FORCE payload; counts past 10000 read as 10000."""
    q, v, i = struct.unpack("<fHH", _payload(data, "POS_FORCE command"))
    return PosForceCommand(
        q,
        min(v, POS_FORCE_MAX_COUNTS) / POS_FORCE_SPEED_SCALE,
        min(i, POS_FORCE_MAX_COUNTS) / POS_FORCE_CURRENT_SCALE,
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
    """Every register a Damiao drive answers (RIDs and types: the Damiao register table as
    damiao-motor 1.0.6 ``core/motor.py`` ``REGISTER_TABLE`` lists it; the uint32/float32
    split agrees with openarm_can ``is_in_ranges``). RIDs 37-49, 57-58, 66-79 and above 81
    are not registers: a drive does not answer them."""

    UV = 0  # under-voltage threshold [V], float
    KT = 1  # torque coefficient, float
    OT = 2  # over-temperature threshold [degC], float
    OC = 3  # over-current threshold, per unit, float
    ACC = 4  # acceleration, float
    DEC = 5  # deceleration (negative), float
    MAX_SPD = 6  # maximum speed, float
    MST_ID = 7  # reply (master) id, uint32
    ESC_ID = 8  # command id, uint32
    TIMEOUT = 9  # CAN timeout, units of 50 us, 0 = off, uint32
    CTRL_MODE = 10  # 1 MIT, 2 POS_VEL, 3 VEL, 4 POS_FORCE, uint32
    DAMP = 11  # motor viscous damping (read-only), float
    INERTIA = 12  # motor moment of inertia (read-only), float
    HW_VER = 13  # hardware version (read-only), uint32
    SW_VER = 14  # firmware version (read-only), uint32
    SN = 15  # serial number (read-only), uint32
    NPP = 16  # motor pole pairs (read-only), uint32
    RS = 17  # phase resistance [Ohm] (read-only), float
    LS = 18  # phase inductance [H] (read-only), float
    FLUX = 19  # flux linkage [Wb] (read-only), float
    GR = 20  # gear ratio (read-only), float
    PMAX = 21  # [rad], float
    VMAX = 22  # [rad/s], float
    TMAX = 23  # [Nm], float
    I_BW = 24  # current loop bandwidth, float
    KP_ASR = 25  # speed loop Kp, float
    KI_ASR = 26  # speed loop Ki, float
    KP_APR = 27  # position loop Kp, float
    KI_APR = 28  # position loop Ki, float
    OV = 29  # over-voltage threshold [V], float
    GREF = 30  # gear torque efficiency, float
    DETA = 31  # speed loop damping coefficient, float
    V_BW = 32  # speed loop filter bandwidth, float
    IQ_C1 = 33  # current loop enhancement coefficient, float
    VL_C1 = 34  # speed loop enhancement coefficient, float
    CAN_BR = 35  # CAN bit-rate code 0..4 (125k, 200k, 250k, 500k, 1M), uint32
    SUB_VER = 36  # firmware sub-version (read-only), uint32
    U_OFF = 50  # U-phase offset (read-only), float
    V_OFF = 51  # V-phase offset (read-only), float
    K1 = 52  # compensation factor 1 (read-only), float
    K2 = 53  # compensation factor 2 (read-only), float
    M_OFF = 54  # angle offset (read-only), float
    DIR = 55  # direction (read-only), float
    M_OFF_MOTOR = 56  # motor-side angle offset (read-only), float
    IMAX = 59  # driver board maximum current [A] (read-only), float
    VBUS = 60  # supply voltage [V] (read-only, live), float
    TPCB = 61  # driver board temperature [degC] (read-only, live), float
    TMTR = 62  # motor temperature [degC] (read-only, live), float
    IU_OFF = 63  # U-phase current offset (read-only), float
    IV_OFF = 64  # V-phase current offset (read-only), float
    IW_OFF = 65  # W-phase current offset (read-only), float
    P_M = 80  # motor position (read-only, live), float
    XOUT = 81  # output shaft position [rad] (read-only, live), float


REGISTER_NAMES = {r.value: r.name for r in Register}


class RegisterSpec(NamedTuple):
    """One register's wire type, access and the values a write may carry.

    integer: uint32 on the wire (float32 otherwise); writable: False for the read-only
    ones (damiao-motor's "RO"); lo/hi with lo_open/hi_open: the range of a write
    (damiao-motor's range column; read-only registers take any uint32 / finite float)."""

    integer: bool
    writable: bool
    lo: float
    hi: float
    lo_open: bool = False
    hi_open: bool = False


UINT32_MAX = 0xFFFFFFFF
FLOAT32_MAX = 3.4028234663852886e38
_F = FLOAT32_MAX


def _rw_float(lo: float, hi: float, lo_open: bool = False, hi_open: bool = False) -> RegisterSpec:
    return RegisterSpec(False, True, lo, hi, lo_open, hi_open)


_RO_FLOAT = RegisterSpec(False, False, -_F, _F)
_RO_UINT = RegisterSpec(True, False, 0, UINT32_MAX)

# Write ranges from damiao-motor 1.0.6's table, except: MST_ID / ESC_ID start at 1 here
# (the table says 0; an id 0 reply id breaks every host, Seeed wiki: never use MST_ID 0)
# and OV ("TBD" there) takes any positive value.
REGISTER_SPECS: dict[Register, RegisterSpec] = {
    Register.UV: _rw_float(10.0, _F, lo_open=True),
    Register.KT: _rw_float(0.0, _F),
    Register.OT: _rw_float(80.0, 200.0, hi_open=True),
    Register.OC: _rw_float(0.0, 1.0, lo_open=True, hi_open=True),
    Register.ACC: _rw_float(0.0, _F, lo_open=True, hi_open=True),
    Register.DEC: _rw_float(-_F, 0.0, hi_open=True),
    Register.MAX_SPD: _rw_float(0.0, _F, lo_open=True),
    Register.MST_ID: RegisterSpec(True, True, 1, MAX_STD_ID),
    Register.ESC_ID: RegisterSpec(True, True, 1, MAX_STD_ID),
    Register.TIMEOUT: RegisterSpec(True, True, 0, UINT32_MAX),
    Register.CTRL_MODE: RegisterSpec(True, True, 1, 4),
    Register.DAMP: _RO_FLOAT,
    Register.INERTIA: _RO_FLOAT,
    Register.HW_VER: _RO_UINT,
    Register.SW_VER: _RO_UINT,
    Register.SN: _RO_UINT,
    Register.NPP: _RO_UINT,
    Register.RS: _RO_FLOAT,
    Register.LS: _RO_FLOAT,
    Register.FLUX: _RO_FLOAT,
    Register.GR: _RO_FLOAT,
    Register.PMAX: _rw_float(0.0, _F, lo_open=True),
    Register.VMAX: _rw_float(0.0, _F, lo_open=True),
    Register.TMAX: _rw_float(0.0, _F, lo_open=True),
    Register.I_BW: _rw_float(100.0, 10000.0),
    Register.KP_ASR: _rw_float(0.0, _F),
    Register.KI_ASR: _rw_float(0.0, _F),
    Register.KP_APR: _rw_float(0.0, _F),
    Register.KI_APR: _rw_float(0.0, _F),
    Register.OV: _rw_float(0.0, _F, lo_open=True),
    Register.GREF: _rw_float(0.0, 1.0, lo_open=True),
    Register.DETA: _rw_float(1.0, 30.0),
    Register.V_BW: _rw_float(0.0, 500.0, lo_open=True, hi_open=True),
    Register.IQ_C1: _rw_float(100.0, 10000.0),
    Register.VL_C1: _rw_float(0.0, 10000.0, lo_open=True),
    Register.CAN_BR: RegisterSpec(True, True, 0, 4),
    Register.SUB_VER: _RO_UINT,
    **{
        r: _RO_FLOAT
        for r in (
            Register.U_OFF,
            Register.V_OFF,
            Register.K1,
            Register.K2,
            Register.M_OFF,
            Register.DIR,
            Register.M_OFF_MOTOR,
            Register.IMAX,
            Register.VBUS,
            Register.TPCB,
            Register.TMTR,
            Register.IU_OFF,
            Register.IV_OFF,
            Register.IW_OFF,
            Register.P_M,
            Register.XOUT,
        )
    },
}
assert set(REGISTER_SPECS) == set(Register)
INTEGER_REGISTERS = frozenset(r for r, s in REGISTER_SPECS.items() if s.integer)
READ_ONLY_REGISTERS = frozenset(r for r, s in REGISTER_SPECS.items() if not s.writable)
TIMEOUT_UNIT_S = 50e-6  # one TIMEOUT register count [s] (Seeed wiki)


class ControlMode(enum.IntEnum):
    """Register CTRL_MODE: which frames the drive acts on. Each mode has its own command
    id, ESC_ID + ``id_offset`` (openarm_can ``create_*_command``, damiao-motor
    ``send_cmd_*``)."""

    MIT = 1
    POS_VEL = 2
    VEL = 3
    POS_FORCE = 4

    @property
    def id_offset(self) -> int:
        return (self.value - 1) * 0x100


CTRL_MODE_MIT = int(ControlMode.MIT)


class ReadOnlyRegisterError(DamiaoCodecError):
    """A write to a register the drive only reports (firmware, motor constants, live values)."""

    def __init__(self, rid: Register):
        self.rid = rid
        super().__init__(f"register {int(rid)} {rid.name} is read-only")


def register(rid: object) -> Register:
    """``rid`` as a known Register; UnknownRegisterError (listing the known ones) otherwise."""
    if isinstance(rid, bool) or not isinstance(rid, int):
        raise UnknownRegisterError(rid, REGISTER_NAMES)
    try:
        return Register(rid)
    except ValueError:
        raise UnknownRegisterError(rid, REGISTER_NAMES) from None


def check_register_value(rid: Register, value: object) -> int | float:
    """A value a write of the register may carry, or DamiaoFieldError (names the register
    and its range); floats come back as float32 keeps them."""
    spec = REGISTER_SPECS[rid]
    name = f"register {rid.name}"
    if spec.integer:
        lo, hi = int(spec.lo), int(spec.hi)
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise DamiaoFieldError(name, value, lo, hi)
        return int(value)
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise DamiaoFieldError(name, value, spec.lo, spec.hi) from None
    below = v <= spec.lo if spec.lo_open else v < spec.lo
    above = v >= spec.hi if spec.hi_open else v > spec.hi
    if not math.isfinite(v) or below or above:
        raise DamiaoFieldError(name, value, spec.lo, spec.hi)
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


def register_value_bytes(rid: Register, value: object) -> bytes:
    """D4-D7 of a reply carrying ``value``: uint32 for the integer registers (the value
    must be an int in 0..2^32-1), float32 otherwise (any float; past the float32 range it
    is sent as infinity, as a C cast would). DamiaoFieldError for a value of the wrong kind."""
    if rid in INTEGER_REGISTERS:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= UINT32_MAX:
            raise DamiaoFieldError(f"register {rid.name}", value, 0, UINT32_MAX)
        return struct.pack("<I", value)
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise DamiaoFieldError(f"register {rid.name}", value, -FLOAT32_MAX, FLOAT32_MAX) from None
    if math.isfinite(v) and abs(v) > FLOAT32_MAX:
        v = math.copysign(math.inf, v)
    return struct.pack("<f", v)


def _register_head(esc_id: int, op: RegisterOp, rid: int) -> bytes:
    _check_int("esc_id", esc_id, 1, MAX_STD_ID)
    return bytes((esc_id & 0xFF, esc_id >> 8, int(op), rid))


def encode_register_read(esc_id: int, rid: int) -> bytes:
    r = register(rid)
    return _register_head(esc_id, RegisterOp.READ, r) + bytes(4)


def encode_register_write(esc_id: int, rid: int, value: int | float) -> bytes:
    """A RAM write; ReadOnlyRegisterError for a read-only register, DamiaoFieldError for a
    value outside the register's range."""
    r = register(rid)
    if r in READ_ONLY_REGISTERS:
        raise ReadOnlyRegisterError(r)
    return _register_head(esc_id, RegisterOp.WRITE, r) + _value_bytes(
        r, check_register_value(r, value)
    )


def encode_register_reply(esc_id: int, op: RegisterOp, rid: int, value: int | float) -> bytes:
    """The drive's answer to a read or write: D0-D3 echoed, the register's value in D4-D7
    (whatever the drive holds: typed, not range-checked, see ``register_value_bytes``)."""
    r = register(rid)
    return _register_head(esc_id, op, r) + register_value_bytes(r, value)


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
