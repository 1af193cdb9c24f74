"""The one JSON reader for outward input: every limit refuses with a typed error naming the
field and the limit, and plain JSON still reads."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rob_twin.models.bounded_json import JsonInputError, JsonLimits, read_bounded_json
from rob_twin.models.errors import InvalidValueError


def test_plain_json_reads_the_same_as_json_loads():
    doc = {"cmd": "fault", "fault": {"kind": "drop", "at": 1.5, "n": [1, 2, {"x": None}]}}
    assert read_bounded_json(json.dumps(doc)) == doc
    assert read_bounded_json(json.dumps(doc).encode()) == doc


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('{"at": NaN}', "number"),
        ('{"at": Infinity}', "number"),
        ('{"at": -Infinity}', "number"),
        ('{"at": 1e400}', "number"),
        ('{"at": ' + "9" * 5000 + "}", "integer"),
        ("[" * 100_000 + "]" * 100_000, "depth"),
        ('{"a": 1', "syntax"),
        ("", "syntax"),
    ],
)
def test_each_rule_refuses_with_the_field_named(text, field):
    with pytest.raises(JsonInputError) as err:
        read_bounded_json(text, what="control message")
    assert err.value.field == field
    assert isinstance(err.value, InvalidValueError) and isinstance(err.value, ValueError)
    assert "control message" in str(err.value)


def test_invalid_utf8_and_size_are_refused_before_parsing():
    with pytest.raises(JsonInputError, match="UTF-8"):
        read_bounded_json(b'{"a": "\xff\xfe"}')
    with pytest.raises(JsonInputError) as err:
        read_bounded_json(b"[" + b"0," * 600 + b"0]", limits=JsonLimits(max_bytes=1000))
    assert err.value.field == "size" and "1000" in str(err.value)


def test_brackets_inside_strings_do_not_count_as_depth():
    assert read_bounded_json(json.dumps({"s": "[" * 1000})) == {"s": "[" * 1000}


def test_duplicate_keys_refused_only_when_asked():
    assert read_bounded_json('{"a": 1, "a": 2}') == {"a": 2}
    with pytest.raises(JsonInputError, match="each key once"):
        read_bounded_json('{"a": 1, "a": 2}', limits=JsonLimits(reject_duplicate_keys=True))


@pytest.mark.fuzz
@settings(deadline=None)
@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_any_bytes_give_a_value_or_the_typed_error(data):
    try:
        read_bounded_json(data)
    except JsonInputError:
        pass
