"""The error root of the project and the input errors every layer shares.

``RobTwinError`` is the base of every error the project raises on purpose; it lives here, at
the bottom layer, so no layer imports a higher one for it. Each layer adds its own classes
deriving from it (``rob_twin.controllers.errors``: codec, transport, owner;
``rob_twin.planners.errors``; ``rob_twin.twin.errors``), so ``except RobTwinError`` catches
every error the project raises on purpose. Every message names the offending value and the
valid range, so a log line alone says what was wrong. An input error is also a ``ValueError``
(an unknown name also a ``KeyError``) so that callers that catch those keep working.
"""

from __future__ import annotations

import operator

MAX_VALUE_CHARS = 400  # longer reprs are cut in messages


class RobTwinError(Exception):
    """Base of every error this project raises on purpose."""


def describe(value: object) -> str:
    """``repr(value)`` for an error message; never raises (a repr that fails, or an int too
    long for ``repr``, is described by its type) and cuts very long reprs."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - formatting an error must never raise
        text = f"<unprintable {type(value).__name__}>"
    if len(text) > MAX_VALUE_CHARS:
        text = text[:MAX_VALUE_CHARS] + f"... ({type(value).__name__})"
    return text


def _s(value: object) -> str:
    """``value`` itself when it is a str, else ``describe(value)`` (never raises)."""
    return value if isinstance(value, str) else describe(value)


def hex_id(value: object, width: int = 2) -> str:
    """A CAN id as ``0x91``; anything that is not an integer (a float, a string, None, a
    bool) as its repr, so a bad id is named, never re-raised."""
    if isinstance(value, bool):
        return describe(value)
    try:
        n = operator.index(value)  # int, numpy integers
    except TypeError:
        return describe(value)
    text = f"0x{n:0{width}X}" if n >= 0 else f"-0x{-n:0{width}X}"
    return text if len(text) <= 40 else text[:40] + "..."


def shape_of(shape: object) -> tuple:
    """``shape`` as a tuple for messages; a non-iterable is kept as a one-element tuple."""
    try:
        return tuple(shape)  # type: ignore[arg-type]
    except TypeError:
        return (shape,)


class UnknownNameError(RobTwinError, KeyError):
    """A name that the model, the mapping or a registry does not define; lists the valid ones."""

    def __init__(self, kind: str, value: object, valid: list[str] | tuple[str, ...]):
        self.kind, self.value, self.valid = kind, value, list(valid)
        super().__init__(
            f"unknown {_s(kind)} {describe(value)}; valid: {', '.join(map(_s, self.valid))}"
        )

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
        super().__init__(f"{where}{_s(field)}={describe(value)} is invalid; valid: {_s(valid)}")
