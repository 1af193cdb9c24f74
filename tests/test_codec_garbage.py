"""Garbage in, typed errors out: no input makes the codec raise anything but RobTwinError.

Every public entry point of ``rob_twin.controllers.codec`` gets hypothesis-generated garbage in each
argument (None, bools, huge ints, NaN/inf, complex, str, bytes, lists, numpy arrays of any
dtype, objects whose repr raises). It must either return or raise one of the project's
typed errors, whose message formats without raising; numpy warnings (a complex value
silently cast to real, say) count as failures. The error constructors themselves are fed
garbage too: formatting a bad id or value never raises.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rob_twin.controllers import codec
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
from rob_twin.models.errors import RobTwinError


class BadRepr:
    def __repr__(self):
        raise RuntimeError("repr is broken")

    __str__ = __repr__


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.just(10**5000),
    st.just(-(10**400)),
    st.floats(allow_nan=True, allow_infinity=True),
    st.complex_numbers(),
    st.text(max_size=8),
    st.binary(max_size=9),
    st.just(BadRepr()),
    st.just(np.bool_(True)),
    st.just(np.complex128(1 + 0j)),
    st.sampled_from([0x11, 0x91, 145.0, 0x97, 8, 3, 1, -1, 0x40]),
)
arrays = st.sampled_from(
    [
        np.zeros(7, complex),
        np.array(["1"] * 7),
        np.zeros(7, bool),
        np.zeros(3),
        np.zeros((2, 7)),
        np.array([None] * 7),
        np.zeros(8, np.uint8),
        np.full(8, 300),
        np.array([1.5] * 8),
        np.zeros(0),
    ]
)
garbage = st.one_of(scalars, arrays, st.lists(scalars, max_size=9), st.tuples(scalars, scalars))

ENTRY_POINTS = {
    "encode_sample": lambda g: codec.encode_sample(g),
    "encode_sample config": lambda g: codec.encode_sample(np.zeros(7), g),
    "encode_positions": lambda g: codec.encode_positions(g),
    "encode_joint joint": lambda g: codec.encode_joint(g, 0.1),
    "encode_joint value": lambda g: codec.encode_joint(1, g),
    "encode_feedback position": lambda g: codec.encode_feedback(1, g),
    "encode_feedback current": lambda g: codec.encode_feedback(1, 0.1, current=g),
    "encode_feedback velocity_raw": lambda g: codec.encode_feedback(1, 0.1, velocity_raw=g),
    "encode_feedback status": lambda g: codec.encode_feedback(1, 0.1, status=g),
    "decode_command id": lambda g: codec.decode_command(g, b"\x40\x00\x80"),
    "decode_command data": lambda g: codec.decode_command(0x11, g),
    "decode_feedback id": lambda g: codec.decode_feedback(g, bytes(8)),
    "decode_feedback data": lambda g: codec.decode_feedback(0x91, g),
    "decode_feedback config": lambda g: codec.decode_feedback(0x91, bytes(8), g),
    "command_frame joint": lambda g: codec.command_frame(g, 0, 0),
    "command_frame word": lambda g: codec.command_frame(1, g, 0),
    "command_frame count": lambda g: codec.command_frame(1, 0, g),
    "word_to_count": lambda g: codec.word_to_count(g),
    "words_to_counts": lambda g: codec.words_to_counts(g),
    "counts_to_words": lambda g: codec.counts_to_words(g),
    "count_to_rad count": lambda g: codec.count_to_rad(g),
    "count_to_rad sign": lambda g: codec.count_to_rad(1, g),
    "counts_to_rad": lambda g: codec.counts_to_rad(g),
    "counts_to_rad signs": lambda g: codec.counts_to_rad(1, g),
    "rad_to_counts_float": lambda g: codec.rad_to_counts_float(g),
    "rad_to_counts_float signs": lambda g: codec.rad_to_counts_float(0.1, g),
    "truncate_counts": lambda g: codec.truncate_counts(g),
    "is_representable": lambda g: codec.is_representable(g),
    "check_signs": lambda g: codec.check_signs(g),
    "hex_bytes": lambda g: codec.hex_bytes(g),
    "CodecConfig signs": lambda g: codec.CodecConfig(signs=g),
    "CodecConfig sign entry": lambda g: codec.CodecConfig(signs=(g,) + (1,) * 6),
    "CodecConfig lower entry": lambda g: codec.CodecConfig(lower_rad=(g,) + (-1.0,) * 6),
    "CodecConfig upper": lambda g: codec.CodecConfig(upper_rad=g),
}


@pytest.mark.parametrize("name", list(ENTRY_POINTS))
@settings(max_examples=40, deadline=None)
@given(g=garbage)
def test_only_typed_errors_escape(name, g):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a lossy cast that only warns is a silent bug
        try:
            ENTRY_POINTS[name](g)
        except RobTwinError as err:
            assert str(err)  # the message formats


ERROR_CONSTRUCTORS = [
    lambda g: UnknownFrameIdError(g, (0x91, 0x92)),
    lambda g: FrameLengthError(g, g, 8),
    lambda g: OpcodeError(g, g, 0x40),
    lambda g: FrameDataError(g, g),
    lambda g: JointNumberError(g, 7),
    lambda g: SampleShapeError(g, 7),
    lambda g: NonFiniteValueError(1, g),
    lambda g: InvalidSignError(1, g),
    lambda g: JointBoundError(1, g, g, g),
    lambda g: UnrepresentableCountError(None, g, -32766, 32768),
    lambda g: CodecConfigError("x", g, "y"),
    lambda g: CodecTypeError("x", g, "y"),
    lambda g: FeedbackRangeError(1, "current", g, g, g),
]


@pytest.mark.parametrize("k", range(len(ERROR_CONSTRUCTORS)))
@settings(max_examples=25, deadline=None)
@given(g=garbage)
def test_error_constructors_never_raise_while_formatting(k, g):
    err = ERROR_CONSTRUCTORS[k](g)
    assert isinstance(err, RobTwinError) and str(err)


@pytest.mark.parametrize(
    "value,fragment",
    [
        ("0x91", "'0x91'"),
        (None, "None"),
        (10**5000, "0x"),
        (145.0, "145.0"),
        (True, "True"),
    ],
    ids=["str", "None", "huge int", "float", "bool"],
)
def test_unknown_id_message_names_the_bad_id(value, fragment):
    with pytest.raises(UnknownFrameIdError) as info:
        codec.decode_feedback(value, bytes(8))
    assert fragment in str(info.value) and "0x91" in str(info.value)


@pytest.mark.parametrize(
    "data,error",
    [
        (8, FrameDataError),  # bytes(8) would be eight zero bytes
        ("\x00" * 8, FrameDataError),
        ([True] * 8, FrameDataError),
        ([0.0] * 8, FrameDataError),
        ([0] * 7 + [256], FrameDataError),
        (bytearray(7), FrameLengthError),
    ],
)
def test_feedback_data_must_be_bytes(data, error):
    with pytest.raises(error):
        codec.decode_feedback(0x91, data)


def test_valid_byte_sequences_still_decode():
    ref = codec.decode_feedback(0x91, bytes(range(8)))
    for data in (
        bytearray(range(8)),
        memoryview(bytes(range(8))),
        list(range(8)),
        tuple(range(8)),
        np.arange(8, dtype=np.uint8),
    ):
        assert codec.decode_feedback(0x91, data) == ref


@pytest.mark.parametrize(
    "call,error",
    [
        (lambda: codec.encode_joint(1, "0.1"), NonFiniteValueError),  # a str is never parsed
        (lambda: codec.encode_joint(1, True), NonFiniteValueError),
        (lambda: codec.encode_joint(1, 0.1j), NonFiniteValueError),
        (lambda: codec.encode_sample(["0.1"] * 7), CodecTypeError),
        (lambda: codec.encode_sample([True] + [0.0] * 6), CodecTypeError),
        (lambda: codec.encode_sample(np.zeros(7, complex)), CodecTypeError),
        (lambda: codec.encode_positions(np.full((2, 7), "0")), CodecTypeError),
        (lambda: codec.encode_feedback(1, 0.0, current=True), FeedbackRangeError),
        (lambda: codec.encode_feedback(1, 0.0, current="1"), FeedbackRangeError),
        (lambda: codec.command_frame(1, 0x1FFFF, 0), CodecConfigError),  # never masked to 16 bits
        (lambda: codec.word_to_count(1.5), CodecTypeError),
        (lambda: codec.decode_feedback(145.0, bytes(8)), UnknownFrameIdError),  # 145.0 == 0x91
        (lambda: codec.CodecConfig(signs=(np.True_,) * 7), InvalidSignError),
        (lambda: codec.CodecConfig(signs=(1 + 0j,) * 7), InvalidSignError),
        (lambda: codec.decode_feedback(0x91, bytes(8), config="default"), CodecConfigError),
    ],
)
def test_str_bool_complex_and_wrong_types_are_typed_errors(call, error):
    with pytest.raises(error):
        call()


@pytest.mark.parametrize("current", [1.7e308, -1.7e308, 10**400, 128.0])
def test_feedback_current_far_out_of_range_is_a_range_error(current):
    with pytest.raises(FeedbackRangeError):
        codec.encode_feedback(1, 0.0, current=current)
