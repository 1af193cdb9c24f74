"""Typed exceptions of the project: one base, then one class per failure kind.

Every message names the offending value and the valid range, so a log line alone
says what was wrong. Codec errors are also ``ValueError`` (bad input values);
transport errors are not (they describe the bus, not the caller's data).
Others may add their own classes here, deriving from ``RobTwinError``; the planners'
(``planners.errors``) and the twin's errors derive from it too, so ``except RobTwinError``
catches every error the project raises on purpose. An input error is also a ``ValueError``
(an unknown name also a ``KeyError``) so that callers that catch those keep working.
"""

from __future__ import annotations


class RobTwinError(Exception):
    """Base of every error this project raises on purpose."""


class UnknownNameError(RobTwinError, KeyError):
    """A name that the model, the mapping or a registry does not define; lists the valid ones."""

    def __init__(self, kind: str, value: object, valid: list[str] | tuple[str, ...]):
        self.kind, self.value, self.valid = kind, value, list(valid)
        super().__init__(f"unknown {kind} {value!r}; valid: {', '.join(map(str, self.valid))}")

    def __str__(self) -> str:  # KeyError would quote the whole message
        return self.args[0]


class InvalidValueError(RobTwinError, ValueError):
    """A named field (a configuration value, an argument) whose value is not valid.

    Carries ``field``, ``value`` and ``valid`` (the valid range or set, in words); the
    message reads ``<subject >field=value is invalid; valid: ...``, where subclasses name
    their subject (``"owner config"``, ``"codec config"``, ...).
    """

    subject = ""

    def __init__(self, field: str, value: object, valid: str):
        self.field, self.value, self.valid = field, value, valid
        where = f"{self.subject} " if self.subject else ""
        super().__init__(f"{where}{field}={value!r} is invalid; valid: {valid}")


# --------------------------------------------------------------------------- codec


class CodecError(RobTwinError, ValueError):
    """A value, sign, shape or frame the Amber codec refuses (seed 001, section 3)."""


class SampleShapeError(CodecError):
    """A sample that is not exactly seven joint values."""

    def __init__(self, shape: tuple[int, ...], expected: int):
        self.shape, self.expected = tuple(shape), expected
        super().__init__(f"sample shape {self.shape} is not ({expected},): need one value per joint")


class JointNumberError(CodecError):
    """A joint number outside 1..7."""

    def __init__(self, joint: object, n_joints: int):
        self.joint, self.n_joints = joint, n_joints
        super().__init__(f"joint number {joint!r} is outside 1..{n_joints}")


class JointValueError(CodecError):
    """Base of the per-joint value errors; carries ``joint``, ``value`` and ``bound``."""

    def __init__(self, joint: int, value: object, bound: object, message: str):
        self.joint, self.value, self.bound = joint, value, bound
        super().__init__(message)


class NonFiniteValueError(JointValueError):
    def __init__(self, joint: int, value: float):
        super().__init__(
            joint, value, "finite", f"joint {joint}: position {value!r} rad is not a finite number"
        )


class InvalidSignError(JointValueError):
    def __init__(self, joint: int, value: object):
        super().__init__(
            joint, value, (-1, 1), f"joint {joint}: sign {value!r} is not +1 or -1"
        )


class JointBoundError(JointValueError):
    """A position outside the joint's configured bounds [lower, upper] rad (inclusive)."""

    def __init__(self, joint: int, value: float, lower: float, upper: float):
        super().__init__(
            joint,
            value,
            (lower, upper),
            f"joint {joint}: position {value!r} rad is outside the joint bounds "
            f"[{lower!r}, {upper!r}] rad",
        )


class UnrepresentableCountError(JointValueError):
    """A count whose wire word would not decode back to the same count."""

    def __init__(self, joint: int | None, value: object, lower: int, upper: int, note: str = ""):
        where = f"joint {joint}: " if joint is not None else ""
        extra = f" ({note})" if note else ""
        super().__init__(
            joint if joint is not None else 0,
            value,
            (lower, upper),
            f"{where}count {value!r} (1/128 deg) has no exact round trip on the wire; "
            f"representable counts are {lower}..{upper}{extra}",
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
        super().__init__(f"CAN id 0x{arbitration_id:X} is not one of {ids}")


class FrameLengthError(FrameError):
    def __init__(self, arbitration_id: int, length: int, expected: int):
        self.arbitration_id, self.length, self.expected = arbitration_id, length, expected
        super().__init__(
            f"frame on CAN id 0x{arbitration_id:X} has {length} data bytes; expected {expected}"
        )


class OpcodeError(FrameError):
    def __init__(self, arbitration_id: int, opcode: int, expected: int):
        self.arbitration_id, self.opcode, self.expected = arbitration_id, opcode, expected
        super().__init__(
            f"frame on CAN id 0x{arbitration_id:X} has opcode 0x{opcode:02X}; "
            f"expected 0x{expected:02X}"
        )


class FeedbackRangeError(CodecError):
    """A simulated-drive feedback field that does not fit its wire field."""

    def __init__(self, joint: int, field: str, value: object, lower: object, upper: object):
        self.joint, self.field, self.value, self.bound = joint, field, value, (lower, upper)
        super().__init__(
            f"joint {joint}: feedback {field} {value!r} is outside {lower!r}..{upper!r}"
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
        self.field, self.shape, self.expected = field, tuple(shape), expected
        super().__init__(
            f"target {field} has shape {self.shape}; expected ({expected},) finite values [rad-based units]"
        )


class NonFiniteTargetError(OwnerError, ValueError):
    def __init__(self, field: str, joint: int, value: float):
        self.field, self.joint, self.value = field, joint, value
        super().__init__(f"target {field} joint {joint}: {value!r} is not finite")


class OwnerConfigError(OwnerError, InvalidValueError):
    """An owner / checker configuration value outside its valid range."""

    subject = "owner config"


class OwnerStateError(OwnerError):
    """An owner operation that the current mode does not allow (e.g. reset while tracking)."""

    def __init__(self, operation: str, mode: str, valid: str):
        self.operation, self.mode, self.valid = operation, mode, valid
        super().__init__(f"owner cannot {operation} in mode {mode!r}; allowed in: {valid}")


class SegmentError(InvalidValueError):
    """A jerk segment that cannot be integrated (negative or non-finite duration)."""

    subject = "jerk segment"
