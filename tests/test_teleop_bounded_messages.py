"""Teleop frames that once escaped as RecursionError or OverflowError (deep nesting, integers
of thousands of digits) end in a TeleopMessageError naming the field and the limit."""

from __future__ import annotations

import json

import pytest
from rob_twin.twin.teleop.messages import MAX_FRAME_BYTES, TeleopMessageError, parse_message


def _input(t_ms: str = "1.0", extra: str = "") -> str:
    hand = (
        '{"tracked": true, "position": [0, 1, -0.3], "orientation": [0, 0, 0, 1],'
        ' "grip": 0, "trigger": 0}'
    )
    return (
        '{"v": 1, "type": "input", "session": "s", "seq": 1, "t_ms": '
        + t_ms
        + ', "hands": {"right": '
        + hand
        + "}"
        + extra
        + "}"
    )


HOSTILE = {
    "deep nesting": ("[" * 3000, "depth"),
    "deep nesting inside a frame": (_input(extra=', "x": ' + "[" * 1900 + "]" * 1900), "depth"),
    "a 3,900-digit t_ms": (_input(t_ms="1" * 3900), "integer"),
    "a 3,900-digit seq": (_input().replace('"seq": 1', '"seq": ' + "9" * 3900), "integer"),
    "t_ms NaN": (_input(t_ms="NaN"), "number"),
    "t_ms Infinity": (_input(t_ms="Infinity"), "number"),
    "t_ms 1e400": (_input(t_ms="1e400"), "number"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_frames_are_typed_errors_naming_the_field(name):
    text, field = HOSTILE[name]
    assert len(text.encode()) <= MAX_FRAME_BYTES  # inside the size limit: the parser decides
    with pytest.raises(TeleopMessageError) as info:
        parse_message(text)
    assert info.value.field == field
    assert info.value.valid and field in str(info.value)


def test_a_good_frame_still_parses():
    msg = parse_message(_input())
    assert msg.seq == 1 and msg.t_ms == 1.0
    json.loads(_input())  # the fixture itself is plain JSON
