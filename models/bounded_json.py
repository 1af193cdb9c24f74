"""One JSON reader, with limits, for every input that comes from outside the process.

The bank's control port, teleop messages, plan files, study specs and replay sidecars are
read by this function and no other: it checks the size (bytes), the UTF-8, the nesting
depth, the length of integers and the magnitude of numbers *before* Python's ``json`` turns
them into objects, so a hostile or damaged input ends in one typed ``JsonInputError`` that
names the field and the limit, never in a RecursionError, an OverflowError, a 4,300-digit
ValueError, a silent ``inf`` or gigabytes of memory.

Rules (all standard JSON, RFC 8259, plus limits):

- ``NaN``, ``Infinity`` and ``-Infinity`` are refused (Python's ``json`` accepts them);
- a number that is not finite as a float (``1e400``) is refused;
- an integer with more than ``max_int_digits`` digits is refused;
- nesting deeper than ``max_depth`` arrays/objects is refused;
- with ``reject_duplicate_keys`` an object that repeats a key is refused.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from itertools import accumulate

from rob_twin.models.errors import InvalidValueError

_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")


@dataclass(frozen=True)
class JsonLimits:
    """Limits on one JSON document.

    ``max_bytes``: size of the encoded document (bytes); ``max_depth``: nested arrays and
    objects; ``max_int_digits``: digits of one integer literal; ``max_abs_number``: largest
    magnitude of any number (unitless, checked after parsing).
    """

    max_bytes: int = 1_000_000
    max_depth: int = 32
    max_int_digits: int = 20
    max_abs_number: float = 1e300
    reject_duplicate_keys: bool = False


def default_config() -> JsonLimits:
    """The limits for small control and teleop messages (1 MB, depth 32)."""
    return JsonLimits()


class JsonInputError(InvalidValueError):
    """An outward JSON input that breaks a rule or a limit; ``field`` says which, ``value``
    what was found and ``valid`` the limit."""

    def __init__(self, what: str, field: str, value: object, valid: str):
        self.what = what
        self.subject = what
        super().__init__(field, value, valid)


def _refuse_constant(what: str):
    def parse_constant(name: str):
        raise JsonInputError(what, "number", name, "a finite JSON number (NaN/Infinity refused)")

    return parse_constant


def _int_parser(what: str, limits: JsonLimits):
    def parse_int(text: str) -> int:
        digits = len(text.lstrip("-"))
        if digits > limits.max_int_digits:
            raise JsonInputError(
                what,
                "integer",
                f"{text[:12]}... ({digits} digits)",
                f"at most {limits.max_int_digits} digits",
            )
        value = int(text)
        if abs(value) > limits.max_abs_number:
            raise JsonInputError(what, "number", value, f"|x| <= {limits.max_abs_number:g}")
        return value

    return parse_int


def _float_parser(what: str, limits: JsonLimits):
    def parse_float(text: str) -> float:
        if len(text) > 64:
            raise JsonInputError(
                what, "number", f"{text[:12]}... ({len(text)} chars)", "at most 64 characters"
            )
        value = float(text)
        if not math.isfinite(value) or abs(value) > limits.max_abs_number:
            raise JsonInputError(what, "number", text, f"finite, |x| <= {limits.max_abs_number:g}")
        return value

    return parse_float


def _pairs_hook(what: str):
    def object_pairs(pairs: list[tuple[str, object]]) -> dict:
        out: dict = {}
        for key, value in pairs:
            if key in out:
                raise JsonInputError(what, "key", key, "each key once per object")
            out[key] = value
        return out

    return object_pairs


def nesting_depth(text: str) -> int:
    """Deepest nesting of arrays and objects in ``text`` (brackets inside strings ignored);
    linear time, no recursion."""
    brackets = _BRACKETS.findall(_STRINGS.sub('""', text))
    if not brackets:
        return 0
    return max(accumulate(1 if b in "[{" else -1 for b in brackets))


def read_bounded_json(
    data: bytes | bytearray | str, what: str = "JSON input", limits: JsonLimits | None = None
) -> object:
    """Parse ``data`` (bytes in UTF-8, or str) under ``limits``; ``what`` names the input in
    errors ("control message", "plan file x.json"). Raises ``JsonInputError`` for any
    violation, including malformed JSON (``field`` = ``"syntax"``)."""
    limits = limits or default_config()
    if isinstance(data, (bytes, bytearray)):
        if len(data) > limits.max_bytes:
            raise JsonInputError(what, "size", f"{len(data)} bytes", f"<= {limits.max_bytes} bytes")
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as err:
            raise JsonInputError(
                what, "encoding", f"byte {err.start}: {data[err.start : err.start + 1]!r}", "UTF-8"
            ) from None
    elif isinstance(data, str):
        text = data
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > limits.max_bytes:
            raise JsonInputError(what, "size", f"{size} bytes", f"<= {limits.max_bytes} bytes")
    else:
        raise JsonInputError(what, "type", type(data).__name__, "bytes or str")
    depth = nesting_depth(text)
    if depth > limits.max_depth:
        raise JsonInputError(what, "depth", depth, f"<= {limits.max_depth} nested arrays/objects")
    try:
        return json.loads(
            text,
            parse_constant=_refuse_constant(what),
            parse_int=_int_parser(what, limits),
            parse_float=_float_parser(what, limits),
            object_pairs_hook=_pairs_hook(what) if limits.reject_duplicate_keys else None,
        )
    except json.JSONDecodeError as err:
        raise JsonInputError(
            what, "syntax", f"line {err.lineno} column {err.colno}", f"valid JSON ({err.msg})"
        ) from None
    except RecursionError:  # depth check makes this unreachable; kept typed regardless
        raise JsonInputError(what, "depth", "too deep", f"<= {limits.max_depth}") from None
