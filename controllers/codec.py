"""The Amber position codec: native radians <-> the arm's CAN frames (seed 001, section 3).

Command (host -> drive), one 3-byte frame per joint j = 1..7 on CAN id ``0x10 + j``::

    byte 0      opcode 0x40 (position)
    bytes 1-2   big-endian 16-bit word

    count = truncate(sign_j * degrees(position_rad) * 128)      # 1 count = 1/128 deg
    word  = count            if count >= 0
            count + 65535    if count <  0                      # legacy: 65535, not 65536

Decode is ``word`` for ``word <= 0x8000`` and ``word - 65535`` above, so ``0x8000`` is
+32768 and ``0xFFFF`` is 0 (a second encoding of zero that the host never emits).

Representable counts (exact count -> word -> count round trip) are exactly
``MIN_COUNT..MAX_COUNT`` = -32766..+32768, 65,535 counts. Count -32767 would be sent
as 0x8000 and come back as +32768 (a sign flip); anything below -32767 lands on a
small positive word; anything above +32768 lands on the negative side. Every 16-bit
word decodes, and every word except 0xFFFF re-encodes to itself.

Truncation, robustly: a value that is an exact number of counts in decimal
(``+1 deg`` = 128 counts) reaches us as ``radians -> degrees * 128`` in binary floating
point and can land a few ulps *below* the integer (127.99999999999997), which plain
``trunc`` would turn into 127. ``truncate_counts`` therefore rounds to the nearest
integer when the value is within ``TRUNCATION_TOLERANCE_COUNTS`` (1e-9 count, about
1.4e-13 rad, hundreds of ulps at the largest count) of one, and truncates toward zero
otherwise. The encode error stays below one count (1/128 deg = 0.000136354 rad).

Feedback (drive -> host), 8 bytes on ids 0x91..0x97, decoded by ``decode_feedback``
and produced (for the simulated drives) by ``encode_feedback``::

    byte 0      diagnostic, opaque (kept raw)
    bytes 1-2   position word, 1/128 deg, the same legacy signed convention as commands
    bytes 3-4   velocity word, kept raw (``velocity_raw``): its units are unverified,
                so it is never presented as rad/s
    bytes 5-6   current word; ``current = int16(word) / 256`` in drive units
    byte 7      status, kept raw

Current signedness is *our* decision (the seed gives only the divisor of 256):
two's-complement int16, big-endian like the position word, giving -128..+127.996
drive units. The unit itself is unverified. The configured joint sign is applied to
feedback position as to commands (drive frame -> joint frame).

Input types: every entry point takes real numbers only. A str (``"0.1"`` is not parsed),
a bool (True is not one radian), a complex value (its imaginary part would be dropped), an
object array, frame data that is not a byte sequence (a bare int ``8`` would otherwise
become eight zero bytes) and a CAN id that is not an integer (145.0 would match 0x91) are
typed errors (``CodecTypeError``, ``FrameDataError``, ``UnknownFrameIdError``), never a
silent conversion or a raw ``TypeError``.

Pure numpy + stdlib (and the pure-data ``rob_twin.models.dimensions``): no mujoco, no bus.
``transport.py`` puts these frames on a wire.
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from rob_twin.controllers.errors import (
    CodecConfigError,
    CodecTypeError,
    FeedbackRangeError,
    FrameDataError,
    FrameLengthError,
    InvalidSignError,
    JointBoundError,
    JointNumberError,
    NonFiniteValueError,
    OpcodeError,
    SampleShapeError,
    UnknownFrameIdError,
    UnrepresentableCountError,
)
from rob_twin.models.dimensions import ARM_LOWER_RAD, ARM_UPPER_RAD
from rob_twin.models.names import COMMAND_IDS, FEEDBACK_IDS, JOINTS_PER_ARM

COUNTS_PER_DEGREE = 128
RAD_PER_COUNT = math.radians(1.0 / COUNTS_PER_DEGREE)  # 0.000136354 rad
POSITION_OPCODE = 0x40
NEGATIVE_OFFSET = 65535  # legacy: negative counts are sent as count + 65535
WORD_MAX = 0xFFFF
POSITIVE_WORD_MAX = 0x8000  # words 0..0x8000 decode as +word
MIN_COUNT = -32766  # -32767 would encode to 0x8000 and decode as +32768
MAX_COUNT = 32768
N_REPRESENTABLE_COUNTS = MAX_COUNT - MIN_COUNT + 1  # 65,535
TRUNCATION_TOLERANCE_COUNTS = 1e-9
COMMAND_FRAME_LEN = 3
FEEDBACK_FRAME_LEN = 8
CURRENT_SCALE = 256  # current = int16(bytes 5-6) / 256, drive units (unverified)


# --------------------------------------------------------------------------- config


@dataclass(frozen=True)
class CodecConfig:
    """Per-joint sign (+1/-1, joint frame -> drive frame) and inclusive bounds [rad]
    (by default the joint bounds of ``rob_twin.models.dimensions``, OpenArm v10).

    Bounds may be infinite (no bound); they may not be NaN or out of order.
    """

    signs: tuple[int, ...] = (1,) * JOINTS_PER_ARM
    lower_rad: tuple[float, ...] = ARM_LOWER_RAD
    upper_rad: tuple[float, ...] = ARM_UPPER_RAD

    def __post_init__(self) -> None:
        for name in ("signs", "lower_rad", "upper_rad"):
            raw = getattr(self, name)
            if isinstance(raw, (str, bytes)) or not hasattr(raw, "__iter__"):
                raise CodecConfigError(name, raw, f"{JOINTS_PER_ARM} values, one per joint")
            value = tuple(raw)
            if len(value) != JOINTS_PER_ARM:
                raise CodecConfigError(name, value, f"{JOINTS_PER_ARM} values, one per joint")
            object.__setattr__(self, name, value)
        for j, s in enumerate(self.signs, start=1):
            if not _is_real(s) or s not in (1, -1):
                raise InvalidSignError(j, s)
        object.__setattr__(self, "signs", tuple(int(s) for s in self.signs))
        for name in ("lower_rad", "upper_rad"):
            for x in getattr(self, name):
                if not _is_real(x):
                    raise CodecConfigError(
                        name, getattr(self, name), "real numbers [rad] (inf allowed)"
                    )
            try:
                object.__setattr__(self, name, tuple(float(x) for x in getattr(self, name)))
            except OverflowError:
                raise CodecConfigError(
                    name, getattr(self, name), "numbers within float range"
                ) from None
        for j, (lo, hi) in enumerate(zip(self.lower_rad, self.upper_rad, strict=True), start=1):
            if math.isnan(lo) or math.isnan(hi) or lo > hi:
                raise CodecConfigError(
                    f"bounds of joint {j}", (lo, hi), "lower <= upper, not NaN (rad)"
                )

    @property
    def signs_array(self) -> np.ndarray:
        return np.asarray(self.signs, dtype=np.int64)

    def with_signs(self, signs: Sequence[int]) -> CodecConfig:
        return CodecConfig(tuple(signs), self.lower_rad, self.upper_rad)

    def unbounded(self) -> CodecConfig:
        """The same signs with no joint bounds: the whole wire domain (used by sweeps)."""
        inf = (math.inf,) * JOINTS_PER_ARM
        return CodecConfig(self.signs, tuple(-x for x in inf), inf)


def default_config() -> CodecConfig:
    """All signs +1, OpenArm v10 bounds. ROB's real signs are not measured yet."""
    return CodecConfig()


# ------------------------------------------------------------------- input types

_REAL_KINDS = "iuf"  # numpy kinds of real numbers (bool "b", complex "c", str "U" refused)


def _is_real(x: object) -> bool:
    """A real number that is not a bool (numpy reals included)."""
    t = type(x)
    if t is float or t is int:  # the per-frame path: no ABC check (a bool's type is bool)
        return True
    return isinstance(x, numbers.Real) and not isinstance(x, (bool, np.bool_))


_DEFAULT_CONFIG = CodecConfig()  # frozen: shared by every call that passes no config


def _config(config: object) -> CodecConfig:
    if config is None:
        return _DEFAULT_CONFIG
    if not isinstance(config, CodecConfig):
        raise CodecConfigError("config", config, "a CodecConfig or None")
    return config


def _real_array(values: object, field: str, kinds: str = _REAL_KINDS) -> np.ndarray:
    """``values`` as a numpy array of real numbers; CodecTypeError for bools (also inside a
    list), strings, complex values and objects, SampleShapeError for ragged nesting."""
    if isinstance(values, (list, tuple)) and any(isinstance(x, (bool, np.bool_)) for x in values):
        raise CodecTypeError(field, values, "real numbers (a bool is not a number here)")
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError, OverflowError) as err:  # ragged nesting
        raise SampleShapeError((), JOINTS_PER_ARM) from err
    if arr.dtype.kind not in kinds:
        raise CodecTypeError(field, values, f"real numbers (got dtype {arr.dtype})")
    return arr


def _real_scalar(joint: int, value: object) -> float:
    """``value`` as a float [rad]; NonFiniteValueError (naming the joint) for NaN, inf, an
    int beyond float range, and for anything that is not a real number: a bool, a str
    (never parsed), a complex value, None."""
    if not _is_real(value):
        raise NonFiniteValueError(joint, value)  # type: ignore[arg-type]
    try:
        x = float(value)  # type: ignore[arg-type]
    except OverflowError:
        raise NonFiniteValueError(joint, value) from None  # type: ignore[arg-type]
    if not math.isfinite(x):
        raise NonFiniteValueError(joint, x)
    return x


def _integer(field: str, value: object) -> int:
    """``value`` as an int (numpy integers too); CodecTypeError for bools, floats, str."""
    if isinstance(value, (bool, np.bool_)):
        raise CodecTypeError(field, value, "an integer (not a bool)")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise CodecTypeError(field, value, "an integer") from None


def _frame_id(arbitration_id: object, valid: tuple[int, ...]) -> int:
    """``arbitration_id`` if it is an integer among ``valid``; UnknownFrameIdError else
    (a float, a str, None or a bool is never a CAN id, even when it compares equal)."""
    if type(arbitration_id) is int and arbitration_id in valid:  # the per-frame path
        return arbitration_id
    if isinstance(arbitration_id, (bool, np.bool_)):
        raise UnknownFrameIdError(arbitration_id, valid)
    try:
        can_id = operator.index(arbitration_id)  # type: ignore[arg-type]
    except TypeError:
        raise UnknownFrameIdError(arbitration_id, valid) from None
    if can_id not in valid:
        raise UnknownFrameIdError(arbitration_id, valid)
    return can_id


# ---------------------------------------------------------------- vectorized core


def check_signs(signs: np.ndarray | Sequence[int] | int) -> np.ndarray:
    """Return ``signs`` as int64; raise InvalidSignError (joint = flat index + 1) otherwise."""
    try:
        arr = np.asarray(signs)
    except (TypeError, ValueError, OverflowError):
        raise InvalidSignError(1, signs) from None
    if arr.dtype.kind not in _REAL_KINDS:
        bad = np.ones(arr.shape, dtype=bool)
    else:
        bad = ~np.isin(arr, (1, -1))
    if np.any(bad):
        i = int(np.flatnonzero(bad.ravel())[0])
        item = arr.ravel()[i]
        raise InvalidSignError(
            i % JOINTS_PER_ARM + 1, item.item() if isinstance(item, np.generic) else item
        )
    return arr.astype(np.int64)


def truncate_counts(x: np.ndarray | float) -> np.ndarray:
    """Truncate counts toward zero, snapping values within 1e-9 count of an integer.

    Returns float64 with integral values (NaN/inf pass through).
    """
    x = _real_array(x, "counts").astype(np.float64)
    nearest = np.rint(x)
    with np.errstate(invalid="ignore"):
        snap = np.abs(x - nearest) <= TRUNCATION_TOLERANCE_COUNTS
    return np.where(snap, nearest, np.trunc(x))


def rad_to_counts_float(rad: np.ndarray | float, signs: np.ndarray | int = 1) -> np.ndarray:
    """radians -> degrees -> sign -> truncated counts, as float64 (no range checks)."""
    rad = _real_array(rad, "rad").astype(np.float64)
    signs = (
        check_signs(signs)
        if not isinstance(signs, np.ndarray) or signs.dtype != np.int64
        else signs
    )
    with np.errstate(invalid="ignore", over="ignore"):
        return truncate_counts(np.degrees(rad) * np.asarray(signs) * COUNTS_PER_DEGREE)


def is_representable(counts: np.ndarray | float) -> np.ndarray:
    """True where ``counts`` is an integer in MIN_COUNT..MAX_COUNT (exact round trip)."""
    c = _real_array(counts, "counts").astype(np.float64)
    with np.errstate(invalid="ignore"):
        return (c >= MIN_COUNT) & (c <= MAX_COUNT) & (c == np.trunc(c))


def counts_to_words(counts: np.ndarray | int, joint: int | None = None) -> np.ndarray:
    """Counts -> 16-bit wire words (uint16); raise UnrepresentableCountError for any other.

    ``joint`` only labels the error; for a (..., 7) array the column names the joint.
    """
    c = _real_array(counts, "counts")
    ok = is_representable(c)
    if not np.all(ok):
        i = int(np.flatnonzero(~ok.ravel())[0])
        bad = c.ravel()[i].item()
        if joint is None and c.ndim >= 1 and c.shape[-1] == JOINTS_PER_ARM:
            joint = i % JOINTS_PER_ARM + 1
        note = "it would flip sign: -32767 is sent as 0x8000 = +32768" if bad == -32767 else ""
        raise UnrepresentableCountError(joint, bad, MIN_COUNT, MAX_COUNT, note)
    c = c.astype(np.int64)
    return np.where(c < 0, c + NEGATIVE_OFFSET, c).astype(np.uint16)


def words_to_counts(words: np.ndarray | int) -> np.ndarray:
    """16-bit words -> signed counts (int64): ``w`` if ``w <= 0x8000`` else ``w - 65535``."""
    raw = _real_array(words, "words", "iu")  # integers only: a float word is a caller bug
    try:
        w = raw.astype(np.int64)
    except OverflowError:
        raise CodecConfigError("word", words, "0..0xFFFF") from None
    if raw.dtype.kind == "u" and np.any(raw > WORD_MAX):  # uint64 beyond int64 wraps negative
        raise CodecConfigError("word", raw[raw > WORD_MAX].ravel()[0].item(), "0..0xFFFF")
    if np.any((w < 0) | (w > WORD_MAX)):
        raise CodecConfigError("word", w[(w < 0) | (w > WORD_MAX)].ravel()[0].item(), "0..0xFFFF")
    return np.where(w <= POSITIVE_WORD_MAX, w, w - NEGATIVE_OFFSET)


def word_to_count(word: int) -> int:
    """Scalar ``words_to_counts`` for one 16-bit word (hot path: one frame at a time)."""
    if type(word) is not int:
        word = _integer("word", word)
    if not 0 <= word <= WORD_MAX:
        raise CodecConfigError("word", word, "0..0xFFFF")
    return word if word <= POSITIVE_WORD_MAX else word - NEGATIVE_OFFSET


def count_to_rad(count: int, sign: int = 1) -> float:
    """Scalar ``counts_to_rad``: the same arithmetic, bit for bit, without numpy."""
    if type(count) is not int:  # the per-frame path passes ints: keep it cheap
        count = _integer("count", count)
    if not MIN_COUNT - 1 <= count <= MAX_COUNT:  # -32767 decodes nowhere but is a number
        raise UnrepresentableCountError(None, count, MIN_COUNT, MAX_COUNT)
    if type(sign) is not int and not _is_real(sign) or sign not in (1, -1):
        raise InvalidSignError(1, sign)
    return math.radians(count / COUNTS_PER_DEGREE) * sign


def counts_to_rad(counts: np.ndarray | int, signs: np.ndarray | int = 1) -> np.ndarray:
    """Counts (drive frame) -> joint-frame radians: ``sign * radians(count / 128)``."""
    c = _real_array(counts, "counts").astype(np.float64)
    return np.radians(c / COUNTS_PER_DEGREE) * check_signs(signs)


def encode_positions(rad: np.ndarray, config: CodecConfig | None = None) -> np.ndarray:
    """Vectorized, checked encode of samples of shape (7,) or (N, 7) -> uint16 words.

    All or nothing: any value that fails raises, naming the lowest failing joint of
    the first failing sample. Checks per joint, in order: finite, within the joint
    bounds (inclusive, joint frame), representable count.
    """
    config = _config(config)
    raw = _real_array(rad, "positions_rad")
    if raw.ndim not in (1, 2) or raw.shape[-1] != JOINTS_PER_ARM:
        raise SampleShapeError(raw.shape, JOINTS_PER_ARM)
    try:
        arr = raw.astype(np.float64)
    except OverflowError:
        raise CodecTypeError("positions_rad", rad, "numbers within float range") from None
    lower = np.asarray(config.lower_rad)
    upper = np.asarray(config.upper_rad)
    counts = rad_to_counts_float(arr, config.signs_array)
    finite = np.isfinite(arr)
    with np.errstate(invalid="ignore"):
        in_bounds = finite & (arr >= lower) & (arr <= upper)
    ok = in_bounds & is_representable(counts)
    if not np.all(ok):
        flat = int(np.flatnonzero(~ok.ravel())[0])
        k = flat % JOINTS_PER_ARM
        value = arr.ravel()[flat].item()
        j = k + 1
        if not finite.ravel()[flat]:
            raise NonFiniteValueError(j, value)
        if not in_bounds.ravel()[flat]:
            raise JointBoundError(j, value, float(lower[k]), float(upper[k]))
        count = counts.ravel()[flat]
        counts_to_words(np.array([count]), joint=j)  # raises with the count named
        raise AssertionError("unreachable")  # pragma: no cover
    return counts_to_words(counts.astype(np.int64))


# ------------------------------------------------------------------- frame API


def _check_joint(joint: int) -> int:
    if type(joint) is int and 1 <= joint <= JOINTS_PER_ARM:  # the per-frame path
        return joint
    if isinstance(joint, bool) or not isinstance(joint, (int, np.integer)):
        raise JointNumberError(joint, JOINTS_PER_ARM)
    if not 1 <= int(joint) <= JOINTS_PER_ARM:
        raise JointNumberError(joint, JOINTS_PER_ARM)
    return int(joint)


def hex_bytes(data: bytes) -> str:
    """``b'\\x40\\x00\\x80'`` -> ``"40 00 80"``."""
    return " ".join(f"{b:02X}" for b in _byte_sequence(None, data))


class Frame(NamedTuple):
    """One CAN frame of the Amber protocol (standard 11-bit id). Immutable; a NamedTuple
    rather than a frozen dataclass because it is built 3,000 times per simulated second."""

    joint: int  # 1..7
    arbitration_id: int
    data: bytes
    count: int  # position count, 1/128 deg, drive frame

    @property
    def hex(self) -> str:
        return hex_bytes(self.data)


def command_frame(joint: int, word: int, count: int) -> Frame:
    """The 3-byte command frame of ``joint`` carrying ``word`` (0..0xFFFF) for ``count``."""
    j = _check_joint(joint)
    word = _integer("word", word)
    if not 0 <= word <= WORD_MAX:  # never mask a wider value into 16 bits
        raise CodecConfigError("word", word, "0..0xFFFF")
    count = _integer("count", count)
    if not MIN_COUNT <= count <= MAX_COUNT:
        raise UnrepresentableCountError(j, count, MIN_COUNT, MAX_COUNT)
    data = bytes((POSITION_OPCODE, word >> 8, word & 0xFF))
    return Frame(j, COMMAND_IDS[j - 1], data, count)


def encode_sample(
    positions_rad: np.ndarray | Sequence[float], config: CodecConfig | None = None
) -> tuple[Frame, ...]:
    """Encode one seven-joint sample [rad] into seven command frames, all or nothing.

    The per-sample hot path (the owner calls it every tick): a scalar loop with the
    same arithmetic and the same checks, in the same order, as ``encode_positions``
    (finite, bounds, representable; the lowest failing joint is named). The tests
    prove the two agree on every representable count and on random samples.
    """
    config = config if type(config) is CodecConfig else _config(config)
    arr = (
        positions_rad
        if type(positions_rad) is np.ndarray
        else _real_array(positions_rad, "positions_rad")
    )
    if arr.shape != (JOINTS_PER_ARM,):
        raise SampleShapeError(arr.shape, JOINTS_PER_ARM)
    if arr.dtype.kind not in _REAL_KINDS:
        raise CodecTypeError(
            "positions_rad", positions_rad, f"real numbers (got dtype {arr.dtype})"
        )
    try:
        values = arr.tolist() if arr.dtype.char == "d" else arr.astype(np.float64).tolist()
    except OverflowError as err:
        raise CodecTypeError("positions_rad", positions_rad, "numbers within float range") from err
    frames = []
    for j, (x, lo, hi, sign) in enumerate(
        zip(values, config.lower_rad, config.upper_rad, config.signs, strict=True), start=1
    ):
        if not math.isfinite(x):
            raise NonFiniteValueError(j, x)
        if not lo <= x <= hi:
            raise JointBoundError(j, x, float(lo), float(hi))
        scaled = math.degrees(x) * sign * COUNTS_PER_DEGREE
        # _checked_count inlined for a value inside the wire range; anything else goes
        # through it (and raises there, naming the count)
        if MIN_COUNT - 1 < scaled < MAX_COUNT + 1:  # finite and near the range
            count = round(scaled)  # half to even, like np.rint (_truncate_count)
            if not abs(scaled - count) <= TRUNCATION_TOLERANCE_COUNTS:
                count = math.trunc(scaled)
            if not MIN_COUNT <= count <= MAX_COUNT:
                count = _checked_count(scaled, j)
        else:
            count = _checked_count(scaled, j)
        word = count if count >= 0 else count + NEGATIVE_OFFSET
        frames.append(
            Frame(j, COMMAND_IDS[j - 1], bytes((POSITION_OPCODE, word >> 8, word & 0xFF)), count)
        )
    return tuple(frames)


def _checked_count(scaled: float, joint: int) -> int:
    """Truncated count of ``scaled`` [counts, float]; UnrepresentableCountError (naming the
    count, as ``counts_to_words`` does) when it falls outside MIN_COUNT..MAX_COUNT."""
    if not MIN_COUNT - 1 < scaled < MAX_COUNT + 1:  # also catches inf and NaN
        counts_to_words(truncate_counts(np.array([scaled])), joint=joint)
    count = _truncate_count(scaled)
    if not MIN_COUNT <= count <= MAX_COUNT:
        counts_to_words(np.array([float(count)]), joint=joint)
    return count


def _truncate_count(x: float) -> int:
    """Scalar ``truncate_counts`` for a finite value: snap within 1e-9 count, else truncate."""
    nearest = round(x)  # half to even, like np.rint
    return int(nearest) if abs(x - nearest) <= TRUNCATION_TOLERANCE_COUNTS else math.trunc(x)


def encode_joint(joint: int, position_rad: float, config: CodecConfig | None = None) -> Frame:
    """Encode one joint's position [rad] into its 3-byte command frame."""
    config = _config(config)
    j = _check_joint(joint)
    k = j - 1
    value = _real_scalar(j, position_rad)
    lo, hi = config.lower_rad[k], config.upper_rad[k]
    if not lo <= value <= hi:
        raise JointBoundError(j, value, lo, hi)
    count = rad_to_counts_float(value, config.signs[k]).item()
    word = int(counts_to_words(np.array([count]), joint=j)[0])
    return command_frame(j, word, int(count))


@dataclass(frozen=True)
class DecodedCommand:
    joint: int
    count: int  # 1/128 deg, drive frame
    position_rad: float  # joint frame (sign applied)
    word: int


def _byte_sequence(arbitration_id: object, data: object) -> bytes:
    """``data`` as bytes: bytes, bytearray, memoryview, or a sequence (list, tuple, integer
    array) of ints 0..255. FrameDataError for anything else: a str, a bare int (``bytes(8)``
    would make eight zero bytes), a float, bools, values beyond a byte."""
    if isinstance(data, (bytes, bytearray)):
        return bytes(data)
    if isinstance(data, memoryview):
        return data.tobytes()
    if isinstance(data, np.ndarray):
        if (
            data.ndim != 1
            or data.dtype.kind not in "iu"
            or (data.size and (data.min() < 0 or data.max() > 255))
        ):
            raise FrameDataError(arbitration_id, data)
        return bytes(data.astype(np.uint8).tolist())
    if not isinstance(data, (list, tuple)):
        raise FrameDataError(arbitration_id, data)
    out = []
    for b in data:
        if isinstance(b, (bool, np.bool_)):
            raise FrameDataError(arbitration_id, data)
        try:
            v = operator.index(b)
        except TypeError:
            raise FrameDataError(arbitration_id, data) from None
        if not 0 <= v <= 255:
            raise FrameDataError(arbitration_id, data)
        out.append(v)
    return bytes(out)


def _data_bytes(arbitration_id: int, data: bytes | bytearray | Sequence[int], n: int) -> bytes:
    """``data`` as bytes of length ``n``; FrameDataError / FrameLengthError otherwise."""
    raw = _byte_sequence(arbitration_id, data)
    if len(raw) != n:
        raise FrameLengthError(arbitration_id, len(raw), n)
    return raw


def decode_command(
    arbitration_id: int, data: bytes | Sequence[int], config: CodecConfig | None = None
) -> DecodedCommand:
    """Decode a 3-byte position command (used to read a second writer's frames)."""
    config = config if type(config) is CodecConfig else _config(config)
    arbitration_id = _frame_id(arbitration_id, COMMAND_IDS)
    raw = _data_bytes(arbitration_id, data, COMMAND_FRAME_LEN)
    if raw[0] != POSITION_OPCODE:
        raise OpcodeError(arbitration_id, raw[0], POSITION_OPCODE)
    j = COMMAND_IDS.index(arbitration_id) + 1
    word = (raw[1] << 8) | raw[2]
    count = word_to_count(word)
    return DecodedCommand(j, count, count_to_rad(count, config.signs[j - 1]), word)


# -------------------------------------------------------------------- feedback


@dataclass(frozen=True)
class JointFeedback:
    """One decoded feedback frame. Only position has verified units (1/128 deg)."""

    joint: int
    position_count: int  # 1/128 deg, drive frame
    position_rad: float  # joint frame (configured sign applied)
    velocity_raw: int  # bytes 3-4, unsigned word; units unverified: NOT rad/s
    current_raw: int  # bytes 5-6, unsigned word as sent
    current: float  # int16(current_raw) / 256, drive units (unverified)
    diagnostic: int  # byte 0, opaque
    status: int  # byte 7, raw
    data: bytes = field(repr=False, default=b"")

    @property
    def arbitration_id(self) -> int:
        return FEEDBACK_IDS[self.joint - 1]


def decode_feedback(
    arbitration_id: int, data: bytes | Sequence[int], config: CodecConfig | None = None
) -> JointFeedback:
    """Decode an 8-byte feedback frame on 0x91..0x97. Any 8 bytes decode."""
    config = config if type(config) is CodecConfig else _config(config)
    arbitration_id = _frame_id(arbitration_id, FEEDBACK_IDS)
    raw = _data_bytes(arbitration_id, data, FEEDBACK_FRAME_LEN)
    j = FEEDBACK_IDS.index(arbitration_id) + 1
    pos_word = (raw[1] << 8) | raw[2]
    count = word_to_count(pos_word)
    cur_word = (raw[5] << 8) | raw[6]
    cur_signed = cur_word - 0x10000 if cur_word >= 0x8000 else cur_word
    return JointFeedback(
        joint=j,
        position_count=count,
        position_rad=count_to_rad(count, config.signs[j - 1]),
        velocity_raw=(raw[3] << 8) | raw[4],
        current_raw=cur_word,
        current=cur_signed / CURRENT_SCALE,
        diagnostic=raw[0],
        status=raw[7],
        data=raw,
    )


def _byte_field(joint: int, name: str, value: int, upper: int) -> int:
    if type(value) is int and 0 <= value <= upper:  # the per-frame path
        return value
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, np.integer))
        or not 0 <= value <= upper
    ):
        raise FeedbackRangeError(joint, name, value, 0, upper)
    return int(value)


def encode_feedback(
    joint: int,
    position_rad: float,
    *,
    velocity_raw: int = 0,
    current: float = 0.0,
    diagnostic: int = 0,
    status: int = 0,
    config: CodecConfig | None = None,
) -> Frame:
    """Build the 8-byte feedback frame a drive would send (the inverse of decode_feedback).

    Position [rad, joint frame] is truncated like a command but NOT bounds-checked
    (a simulated arm may report an overshoot); it must be representable. ``current``
    [drive units] is rounded to the nearest 1/256 and must fit int16.
    """
    config = config if type(config) is CodecConfig else _config(config)
    j = _check_joint(joint)
    value = _real_scalar(j, position_rad)
    count = _checked_count(math.degrees(value) * config.signs[j - 1] * COUNTS_PER_DEGREE, j)
    word = count if count >= 0 else count + NEGATIVE_OFFSET
    if not _is_real(current):
        raise FeedbackRangeError(
            j, "current", current, -0x8000 / CURRENT_SCALE, 0x7FFF / CURRENT_SCALE
        )
    try:
        cur = float(current)
    except OverflowError:
        cur = math.inf
    cur_lo, cur_hi = -0x8000 / CURRENT_SCALE, 0x7FFF / CURRENT_SCALE
    # finite and near the range first: round() of an overflowing product would raise
    cur_counts = round(cur * CURRENT_SCALE) if math.isfinite(cur) and abs(cur) <= 256.0 else None
    if cur_counts is None or not -0x8000 <= cur_counts <= 0x7FFF:
        raise FeedbackRangeError(j, "current", current, cur_lo, cur_hi)
    cur_word = cur_counts & 0xFFFF
    vel = _byte_field(j, "velocity_raw", velocity_raw, 0xFFFF)
    data = bytes(
        (
            _byte_field(j, "diagnostic", diagnostic, 0xFF),
            word >> 8,
            word & 0xFF,
            vel >> 8,
            vel & 0xFF,
            cur_word >> 8,
            cur_word & 0xFF,
            _byte_field(j, "status", status, 0xFF),
        )
    )
    return Frame(j, FEEDBACK_IDS[j - 1], data, int(count))
