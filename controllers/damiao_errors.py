"""Typed errors of the Damiao MIT codec, transport and drives.

All derive from ``rob_twin.models.errors.RobTwinError`` (codec ones also from ``CodecError``,
so from ``ValueError``). Each message names the value and its valid range.
"""

from __future__ import annotations

from rob_twin.controllers.errors import CodecError
from rob_twin.models.errors import RobTwinError


class DamiaoCodecError(CodecError):
    """Base of the Damiao codec's refusals."""


class DamiaoFieldError(DamiaoCodecError):
    """A field value outside its wire range (or not finite): never clamped."""

    def __init__(
        self, field: str, value: object, lower: float, upper: float, joint: int | None = None
    ):
        self.field, self.value, self.bound, self.joint = field, value, (lower, upper), joint
        where = f"joint {joint}: " if joint is not None else ""
        super().__init__(
            f"{where}{field} {value!r} is outside [{lower!r}, {upper!r}] "
            "(finite values only; never clamped)"
        )


class DamiaoScalingError(DamiaoCodecError):
    """A PMAX/VMAX/TMAX mapping range that is not finite and > 0."""

    def __init__(self, field: str, value: object):
        self.field, self.value = field, value
        super().__init__(f"mapping range {field}={value!r} is invalid; valid: finite and > 0")


class ReservedPatternError(DamiaoCodecError):
    """An MIT command whose bytes would read as a special command (FF x7 + FB..FE)."""

    def __init__(self, data: bytes, joint: int | None = None):
        self.data = bytes(data)
        where = f"joint {joint}: " if joint is not None else ""
        super().__init__(
            f"{where}MIT payload {self.data.hex(' ').upper()} equals a reserved "
            "special command (FF FF FF FF FF FF FF FB..FE); change q, dq, kp, kd "
            "or tau by one step"
        )


class DamiaoFrameError(DamiaoCodecError):
    """A received frame of the wrong length, id or kind."""


class DamiaoFrameLengthError(DamiaoFrameError):
    def __init__(self, what: str, length: int, expected: int):
        self.length, self.expected = length, expected
        super().__init__(f"{what} has {length} data bytes; expected {expected}")


class UnknownMotorIdError(DamiaoFrameError):
    def __init__(self, motor_id: object, valid: tuple[int, ...] | str):
        self.motor_id = motor_id
        ids = valid if isinstance(valid, str) else ", ".join(f"0x{i:02X}" for i in valid)
        super().__init__(f"motor id {motor_id!r} is not one of {ids}")


class UnknownRegisterError(DamiaoCodecError):
    def __init__(self, rid: object, valid: dict[int, str]):
        self.rid = rid
        listed = ", ".join(f"{k} {v}" for k, v in sorted(valid.items()))
        super().__init__(f"register id {rid!r} is not known; valid: {listed}")


class RegisterOperationError(DamiaoFrameError):
    def __init__(self, op: int, valid: dict[int, str]):
        self.op = op
        listed = ", ".join(f"0x{k:02X} {v}" for k, v in sorted(valid.items()))
        super().__init__(f"register operation 0x{op:02X} is not one of {listed}")


class DamiaoTransportError(RobTwinError):
    """A Damiao transport refusal (configuration, closed bus, handshake not done)."""
