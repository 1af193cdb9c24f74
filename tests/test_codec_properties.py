"""Property tests: the codec either returns valid frames or raises a typed CodecError."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from rob_twin.controllers.codec import (
    MAX_COUNT,
    MIN_COUNT,
    RAD_PER_COUNT,
    CodecConfig,
    decode_command,
    decode_feedback,
    default_config,
    encode_feedback,
    encode_joint,
    encode_sample,
)
from rob_twin.controllers.errors import (
    CodecError,
    FrameLengthError,
    JointBoundError,
    NonFiniteValueError,
    UnknownFrameIdError,
    UnrepresentableCountError,
)
from rob_twin.models.names import COMMAND_IDS, FEEDBACK_IDS

SETTINGS = settings(max_examples=300, deadline=None)
any_float = st.floats(allow_nan=True, allow_infinity=True)
signs = st.tuples(*[st.sampled_from((1, -1))] * 7)


def _check_frames(frames, sample, cfg):
    assert [f.arbitration_id for f in frames] == list(COMMAND_IDS)
    for f, x, s in zip(frames, sample, cfg.signs, strict=True):
        assert len(f.data) == 3 and f.data[0] == 0x40
        assert MIN_COUNT <= f.count <= MAX_COUNT
        d = decode_command(f.arbitration_id, f.data, cfg)
        assert d.count == f.count
        assert abs(d.position_rad - x) < RAD_PER_COUNT
        # truncation toward zero in the drive frame
        assert abs(f.count) <= abs(s * math.degrees(x) * 128) + 1e-9


@SETTINGS
@given(st.lists(any_float, min_size=7, max_size=7), signs)
def test_encode_random_floats_gives_frames_or_typed_error(values, sgn):
    cfg = default_config().with_signs(sgn)
    sample = np.array(values)
    try:
        frames = encode_sample(sample, cfg)
    except (NonFiniteValueError, JointBoundError) as err:
        k = err.joint - 1
        assert 0 <= k < 7 and (err.value == sample[k] or math.isnan(sample[k]))
        if isinstance(err, NonFiniteValueError):
            assert not math.isfinite(sample[k])
        else:
            assert not cfg.lower_rad[k] <= sample[k] <= cfg.upper_rad[k]
        # all joints before the named one were fine
        assert all(cfg.lower_rad[i] <= sample[i] <= cfg.upper_rad[i] for i in range(k))
        return
    _check_frames(frames, sample, cfg)


@SETTINGS
@given(st.lists(st.floats(-5.0, 5.0), min_size=7, max_size=7), signs)
def test_encode_unbounded_round_trips_within_one_count(values, sgn):
    cfg = CodecConfig(signs=sgn).unbounded()
    sample = np.array(values)
    try:
        frames = encode_sample(sample, cfg)
    except UnrepresentableCountError as err:
        assert abs(sample[err.joint - 1]) * 180 / math.pi * 128 >= 32767 - 1e-6
        return
    _check_frames(frames, sample, cfg)


@SETTINGS
@given(st.integers(1, 7), st.floats(-4.0, 4.0), st.sampled_from((1, -1)))
def test_scalar_and_batch_paths_agree(joint, value, sign):
    cfg = CodecConfig(signs=(sign,) * 7).unbounded()
    sample = np.zeros(7)
    sample[joint - 1] = value
    assert encode_joint(joint, value, cfg) == encode_sample(sample, cfg)[joint - 1]


@SETTINGS
@given(st.integers(0, 0x7FF), st.binary(min_size=0, max_size=12))
def test_feedback_decode_never_crashes(can_id, data):
    try:
        fb = decode_feedback(can_id, data)
    except (UnknownFrameIdError, FrameLengthError):
        assert can_id not in FEEDBACK_IDS or len(data) != 8
        return
    assert can_id in FEEDBACK_IDS and len(data) == 8
    assert MIN_COUNT <= fb.position_count <= MAX_COUNT
    assert 0 <= fb.velocity_raw <= 0xFFFF and -128 <= fb.current < 128
    # the encoder reproduces the bytes, except that 0xFFFF (zero) re-encodes as 0x0000
    back = encode_feedback(
        fb.joint,
        fb.position_rad,
        velocity_raw=fb.velocity_raw,
        current=fb.current,
        diagnostic=fb.diagnostic,
        status=fb.status,
    )
    expected = bytearray(data)
    if data[1:3] == b"\xff\xff":
        expected[1:3] = b"\x00\x00"
    assert back.data == bytes(expected)


@SETTINGS
@given(st.sampled_from(FEEDBACK_IDS), st.binary(min_size=8, max_size=8))
def test_every_8_byte_feedback_decodes(can_id, data):
    fb = decode_feedback(can_id, data)
    assert fb.arbitration_id == can_id and fb.data == data


@SETTINGS
@given(st.integers(0, 0x7FF), st.binary(min_size=0, max_size=8))
def test_command_decode_only_typed_errors(can_id, data):
    try:
        d = decode_command(can_id, data)
    except CodecError:
        return
    assert MIN_COUNT <= d.count <= MAX_COUNT
