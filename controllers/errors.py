"""Typed exceptions of the hardware-facing layer: codec, transport and owner failures.

Every message names the offending value and the valid range, so a log line alone
says what was wrong. Codec errors are also ``ValueError`` (bad input values);
transport errors are not (they describe the bus, not the caller's data). All derive from
``rob_twin.models.errors.RobTwinError``, the project's error root.
"""

from __future__ import annotations

from rob_twin.models.errors import (
    InvalidValueError,
    RobTwinError,
    _s,
    describe,
    hex_id,
    shape_of,
)

# --------------------------------------------------------------------------- codec


class CodecError(RobTwinError, ValueError):
    """A value, sign, shape or frame the Amber codec refuses (seed 001, section 3)."""


class SampleShapeError(CodecError):
    """A sample that is not exactly seven joint values."""

    def __init__(self, shape: tuple[int, ...], expected: int):
        self.shape, self.expected = shape_of(shape), expected
        super().__init__(
            f"sample shape {_s(self.shape)} is not ({_s(expected)},): need one value per joint"
        )


class JointNumberError(CodecError):
    """A joint number outside 1..7."""

    def __init__(self, joint: object, n_joints: int):
        self.joint, self.n_joints = joint, n_joints
        super().__init__(f"joint number {describe(joint)} is outside 1..{_s(n_joints)}")


class JointValueError(CodecError):
    """Base of the per-joint value errors; carries ``joint``, ``value`` and ``bound``."""

    def __init__(self, joint: int, value: object, bound: object, message: str):
        self.joint, self.value, self.bound = joint, value, bound
        super().__init__(message)


class NonFiniteValueError(JointValueError):
    def __init__(self, joint: int, value: float):
        super().__init__(
            joint,
            value,
            "finite",
            f"joint {_s(joint)}: position {describe(value)} rad is not a finite number",
        )


class InvalidSignError(JointValueError):
    def __init__(self, joint: int, value: object):
        super().__init__(
            joint, value, (-1, 1), f"joint {_s(joint)}: sign {describe(value)} is not +1 or -1"
        )


class JointBoundError(JointValueError):
    """A position outside the joint's configured bounds [lower, upper] rad (inclusive)."""

    def __init__(self, joint: int, value: float, lower: float, upper: float):
        super().__init__(
            joint,
            value,
            (lower, upper),
            f"joint {_s(joint)}: position {describe(value)} rad is outside the joint bounds "
            f"[{describe(lower)}, {describe(upper)}] rad",
        )


class UnrepresentableCountError(JointValueError):
    """A count whose wire word would not decode back to the same count."""

    def __init__(self, joint: int | None, value: object, lower: int, upper: int, note: str = ""):
        where = f"joint {_s(joint)}: " if joint is not None else ""
        extra = f" ({_s(note)})" if note else ""
        super().__init__(
            joint if joint is not None else 0,
            value,
            (lower, upper),
            f"{where}count {describe(value)} (1/128 deg) has no exact round trip on the wire; "
            f"representable counts are {_s(lower)}..{_s(upper)}{extra}",
        )


class CodecConfigError(CodecError, InvalidValueError):
    """A codec configuration that cannot be used (wrong length, bounds not ordered)."""

    subject = "codec config"


class FrameError(CodecError):
    """Base of the received-frame errors (wrong id, length or opcode)."""


class UnknownFrameIdError(FrameError):
    def __init__(self, arbitration_id: int, valid: tuple[int, ...]):
        self.arbitration_id, self.valid = arbitration_id, tuple(valid)
        ids = ", ".join(f"0x{i:02X}" for i in self.valid)
        super().__init__(f"CAN id {hex_id(arbitration_id, 1)} is not one of {ids}")


class FrameDataError(FrameError):
    """Frame data that is not a byte sequence (bytes, bytearray, memoryview, or a sequence
    of ints 0..255; a str, a bool, a bare int or a float are refused)."""

    def __init__(self, arbitration_id: object, data: object):
        self.arbitration_id, self.data = arbitration_id, data
        super().__init__(
            f"frame on CAN id {hex_id(arbitration_id, 1)}: data {describe(data)} "
            f"({type(data).__name__}) is not a byte sequence; valid: bytes, bytearray, "
            "memoryview or a sequence of ints 0..255"
        )


class CodecTypeError(CodecError, TypeError):
    """An argument of the wrong type (a str, bool or complex where a real number or an
    integer is needed): ``field``, ``value``, ``valid``."""

    def __init__(self, field: str, value: object, valid: str):
        self.field, self.value, self.valid = field, value, valid
        super().__init__(
            f"codec {_s(field)}={describe(value)} ({type(value).__name__}) is invalid; "
            f"valid: {_s(valid)}"
        )


class FrameLengthError(FrameError):
    def __init__(self, arbitration_id: int, length: int, expected: int):
        self.arbitration_id, self.length, self.expected = arbitration_id, length, expected
        super().__init__(
            f"frame on CAN id {hex_id(arbitration_id, 1)} has {_s(length)} data bytes; "
            f"expected {_s(expected)}"
        )


class OpcodeError(FrameError):
    def __init__(self, arbitration_id: int, opcode: int, expected: int):
        self.arbitration_id, self.opcode, self.expected = arbitration_id, opcode, expected
        super().__init__(
            f"frame on CAN id {hex_id(arbitration_id, 1)} has opcode {hex_id(opcode)}; "
            f"expected 0x{expected:02X}"
        )


class FeedbackRangeError(CodecError):
    """A simulated-drive feedback field that does not fit its wire field."""

    def __init__(self, joint: int, field: str, value: object, lower: object, upper: object):
        self.joint, self.field, self.value, self.bound = joint, field, value, (lower, upper)
        super().__init__(
            f"joint {_s(joint)}: feedback {_s(field)} {describe(value)} is outside "
            f"{describe(lower)}..{describe(upper)}"
        )


# ----------------------------------------------------------------------- transport


class TransportError(RobTwinError):
    """A CAN transport boundary failure (configuration, closed bus)."""


class TransportConfigError(TransportError, InvalidValueError):
    """A transport configuration value outside its valid range."""

    subject = "transport config"


class TransportClosedError(TransportError):
    def __init__(self) -> None:
        super().__init__("the CAN transport is closed; create a new one")


# --------------------------------------------------------------------------- owner


class OwnerError(RobTwinError):
    """A ContinuousArm owner refusal that is the caller's mistake (not a latched fault)."""


class TargetShapeError(OwnerError, ValueError):
    """A target vector that is not one finite value per joint."""

    def __init__(self, field: str, shape: tuple[int, ...], expected: int):
        self.field, self.shape, self.expected = field, shape_of(shape), expected
        super().__init__(
            f"target {_s(field)} has shape {_s(self.shape)}; "
            f"expected ({_s(expected)},) finite values [rad-based units]"
        )


class NonFiniteTargetError(OwnerError, ValueError):
    def __init__(self, field: str, joint: int, value: float):
        self.field, self.joint, self.value = field, joint, value
        super().__init__(f"target {_s(field)} joint {_s(joint)}: {describe(value)} is not finite")


class TargetTypeError(OwnerError, TypeError):
    """A target (or one of its fields) of the wrong type: a sequence that is not an
    integer, a bool where a number is needed, a lease that is not a Lease..."""

    def __init__(self, field: str, value: object, valid: str):
        self.field, self.value, self.valid = field, value, valid
        super().__init__(
            f"target {_s(field)}={describe(value)} ({type(value).__name__}) is invalid; "
            f"valid: {_s(valid)}"
        )


class TargetRefusedError(OwnerError, ValueError):
    """Why ``ArmOwner.submit`` refused a target. Returned in ``OfferResult.error`` (a refusal
    is an answer, not an exception); ``raise_if_refused()`` raises it.

    reason: the mailbox ``RejectReason``; field: what was wrong (``velocity_rad_s``...);
    joint: 1-based joint or None; value: the offending value; valid: the valid range."""

    def __init__(
        self, reason: object, field: str, value: object, valid: str, joint: int | None = None
    ):
        self.reason, self.field, self.value, self.valid, self.joint = (
            reason,
            field,
            value,
            valid,
            joint,
        )
        where = f" joint {_s(joint)}" if joint is not None else ""
        code = getattr(reason, "value", reason)
        super().__init__(
            f"target refused ({_s(code)}): {_s(field)}{where}={describe(value)}; valid: {_s(valid)}"
        )


class FeedbackError(OwnerError, ValueError):
    """A feedback observation the owner refuses (its stamp is not a finite time on the
    owner's clock, or lies in the future beyond the stated tolerance). The observation is
    dropped: the feedback age keeps growing, so stale-feedback supervision still trips."""

    def __init__(self, field: str, value: object, valid: str):
        self.field, self.value, self.valid = field, value, valid
        super().__init__(f"feedback {_s(field)}={describe(value)} is invalid; valid: {_s(valid)}")


class OwnerConfigError(OwnerError, InvalidValueError):
    """An owner / checker configuration value outside its valid range."""

    subject = "owner config"


class OwnerStateError(OwnerError):
    """An owner operation that the current mode does not allow (e.g. reset while tracking)."""

    def __init__(self, operation: str, mode: str, valid: str):
        self.operation, self.mode, self.valid = operation, mode, valid
        super().__init__(
            f"owner cannot {_s(operation)} in mode {describe(mode)}; allowed in: {_s(valid)}"
        )


class SegmentError(InvalidValueError):
    """A jerk segment that cannot be integrated (negative or non-finite duration)."""

    subject = "jerk segment"
