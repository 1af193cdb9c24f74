"""Amber position codec: seed examples, typed rejections, exhaustive vectorized sweeps."""

from __future__ import annotations

import math

import numpy as np
import pytest
from rob_twin.controllers import codec
from rob_twin.controllers.codec import (
    MAX_COUNT,
    MIN_COUNT,
    RAD_PER_COUNT,
    CodecConfig,
    counts_to_rad,
    counts_to_words,
    decode_command,
    decode_feedback,
    default_config,
    encode_feedback,
    encode_joint,
    encode_positions,
    encode_sample,
    words_to_counts,
)
from rob_twin.controllers.errors import (
    CodecConfigError,
    CodecError,
    FeedbackRangeError,
    FrameLengthError,
    InvalidSignError,
    JointBoundError,
    NonFiniteValueError,
    OpcodeError,
    SampleShapeError,
    UnknownFrameIdError,
    UnrepresentableCountError,
)
from rob_twin.models import dimensions as D
from rob_twin.models.errors import RobTwinError
from rob_twin.models.names import COMMAND_IDS, FEEDBACK_IDS, JOINTS_PER_ARM

DEG = math.pi / 180
ALT = (1, -1, 1, -1, 1, -1, 1)


# ------------------------------------------------------------------ seed examples


def test_plus_one_degree_is_40_00_80():
    f = encode_joint(1, math.radians(1.0))
    assert (f.arbitration_id, f.hex, f.count) == (0x11, "40 00 80", 128)


def test_minus_one_degree_is_40_ff_7f():
    f = encode_joint(2, -math.radians(1.0))
    assert (f.arbitration_id, f.hex, f.count) == (0x12, "40 FF 7F", -128)


def test_raw_words_decode_per_seed():
    assert int(words_to_counts(0x8000)) == 32768
    assert int(words_to_counts(0xFFFF)) == 0
    assert int(words_to_counts(0x8001)) == -32766
    assert int(words_to_counts(0x0000)) == 0


def test_minus_32767_rejected_as_sign_flip():
    with pytest.raises(UnrepresentableCountError) as info:
        counts_to_words(np.array([-32767]))
    assert "-32767" in str(info.value) and "flip sign" in str(info.value)
    assert info.value.bound == (MIN_COUNT, MAX_COUNT)


def test_sample_frames_use_ids_0x11_to_0x17_in_joint_order():
    frames = encode_sample(np.full(7, 0.5))
    assert [f.arbitration_id for f in frames] == list(COMMAND_IDS)
    assert [f.joint for f in frames] == list(range(1, 8))
    assert all(len(f.data) == 3 and f.data[0] == 0x40 for f in frames)
    # 0.5 rad = 28.6479 deg = 3666.93 counts -> truncated 3666 = 0x0E52
    assert {f.hex for f in frames} == {"40 0E 52"}


def test_sign_is_applied_after_degrees_and_truncation_is_toward_zero():
    cfg = default_config().with_signs(ALT)
    value = 0.3  # 17.188733853924695 deg -> 2200.158 counts
    frames = encode_sample(np.full(7, value), cfg)
    counts = [f.count for f in frames]
    assert counts == [2200, -2200, 2200, -2200, 2200, -2200, 2200]
    assert frames[1].hex == "40 F7 67"  # -2200 + 65535 = 0xF767


def test_decode_command_inverts_encode_with_sign():
    cfg = default_config().with_signs(ALT)
    for j, f in enumerate(encode_sample(np.full(7, -0.25), cfg.unbounded()), start=1):
        d = decode_command(f.arbitration_id, f.data, cfg)
        assert d.joint == j and d.count == f.count
        assert abs(d.position_rad - (-0.25)) < RAD_PER_COUNT


# ----------------------------------------------------------------- typed rejections


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_rejected_naming_joint(bad):
    sample = np.zeros(7)
    sample[4] = bad
    with pytest.raises(NonFiniteValueError) as info:
        encode_sample(sample)
    assert info.value.joint == 5 and "joint 5" in str(info.value)


@pytest.mark.parametrize("signs", [(1, 1, 0, 1, 1, 1, 1), (1, 1, 1, 1, 1, 1, 2), (True,) * 7])
def test_invalid_sign_rejected(signs):
    with pytest.raises(InvalidSignError) as info:
        CodecConfig(signs=signs)
    assert isinstance(info.value, CodecError)
    assert "not +1 or -1" in str(info.value)


def test_invalid_sign_rejected_in_vectorized_check():
    with pytest.raises(InvalidSignError) as info:
        codec.check_signs(np.array([1, -1, 1, 3, 1, 1, 1]))
    assert info.value.joint == 4 and info.value.value == 3


def test_joint_bounds_default_to_openarm_limits_and_name_the_bound():
    cfg = default_config()
    assert cfg.lower_rad == (-1.396, -1.745, -1.571, 0.0, -1.571, -0.785, -1.571)
    assert cfg.upper_rad == (3.491, 1.745, 1.571, 2.443, 1.571, 0.785, 1.571)
    sample = np.zeros(7)
    sample[5] = 0.79
    with pytest.raises(JointBoundError) as info:
        encode_sample(sample)
    err = info.value
    assert (err.joint, err.value, err.bound) == (6, 0.79, (-0.785, 0.785))
    assert "0.79" in str(err) and "-0.785" in str(err) and "joint 6" in str(err)
    # bounds are inclusive
    edge = np.array([3.491, 1.745, 1.571, 2.443, 1.571, 0.785, 1.571])
    assert len(encode_sample(edge)) == 7
    assert len(encode_sample(np.array(cfg.lower_rad))) == 7


def test_bounds_are_configurable():
    cfg = CodecConfig(lower_rad=(-0.1,) * 7, upper_rad=(0.1,) * 7)
    with pytest.raises(JointBoundError):
        encode_sample(np.full(7, 0.2), cfg)
    with pytest.raises(CodecConfigError):
        CodecConfig(lower_rad=(1.0,) * 7, upper_rad=(0.0,) * 7)
    with pytest.raises(CodecConfigError):
        CodecConfig(signs=(1,) * 6)


def test_unrepresentable_round_trip_rejected_through_rad_path():
    wide = default_config().unbounded()
    too_neg = np.zeros(7)
    too_neg[2] = -32767 * RAD_PER_COUNT
    with pytest.raises(UnrepresentableCountError) as info:
        encode_sample(too_neg, wide)
    assert info.value.joint == 3 and info.value.value == -32767
    too_pos = np.zeros(7)
    too_pos[0] = 32769 * RAD_PER_COUNT
    with pytest.raises(UnrepresentableCountError):
        encode_sample(too_pos, wide)
    # the extremes themselves are fine
    ok = np.zeros(7)
    ok[0], ok[1] = MAX_COUNT * RAD_PER_COUNT, MIN_COUNT * RAD_PER_COUNT
    frames = encode_sample(ok, wide)
    assert frames[0].hex == "40 80 00" and frames[1].hex == "40 80 01"


@pytest.mark.parametrize("shape", [(6,), (8,), (1, 7), (7, 1), ()])
def test_wrong_shape_rejected(shape):
    with pytest.raises(SampleShapeError):
        encode_sample(np.zeros(shape))


def test_all_or_nothing_names_lowest_failing_joint():
    sample = np.zeros(7)
    sample[6] = math.nan
    sample[3] = 5.0  # out of bounds, lower joint number
    with pytest.raises(JointBoundError) as info:
        encode_sample(sample)
    assert info.value.joint == 4


def test_errors_share_the_project_base():
    assert issubclass(CodecError, RobTwinError) and issubclass(CodecError, ValueError)


# ------------------------------------------------------------------------ feedback


def test_feedback_layout_and_current_signedness():
    data = bytes([0xAB, 0xFF, 0x7F, 0x12, 0x34, 0xFE, 0x80, 0x5A])
    fb = decode_feedback(0x93, data)
    assert fb.joint == 3 and fb.position_count == -128
    assert fb.position_rad == pytest.approx(-DEG)
    assert fb.velocity_raw == 0x1234 and not hasattr(fb, "velocity_rad_s")
    assert fb.current_raw == 0xFE80 and fb.current == -1.5
    assert (fb.diagnostic, fb.status) == (0xAB, 0x5A)
    assert decode_feedback(0x91, bytes([0, 0x80, 0, 0, 0, 0x7F, 0xFF, 0])).current == 0x7FFF / 256
    assert decode_feedback(0x91, bytes([0, 0xFF, 0xFF, 0, 0, 0, 0, 0])).position_count == 0


def test_feedback_sign_applies():
    cfg = default_config().with_signs((-1,) * 7)
    fb = decode_feedback(0x97, bytes([0, 0x00, 0x80, 0, 0, 0, 0, 0]), cfg)
    assert fb.position_count == 128 and fb.position_rad == pytest.approx(-DEG)


@pytest.mark.parametrize("n", [0, 3, 7, 9])
def test_feedback_wrong_length_rejected(n):
    with pytest.raises(FrameLengthError) as info:
        decode_feedback(0x92, bytes(n))
    assert info.value.length == n and info.value.expected == 8


@pytest.mark.parametrize("can_id", [0x90, 0x98, 0x11, 0x00, 0x7FF])
def test_feedback_unknown_id_rejected(can_id):
    with pytest.raises(UnknownFrameIdError) as info:
        decode_feedback(can_id, bytes(8))
    assert f"0x{can_id:X}" in str(info.value)


def test_command_decode_rejections():
    with pytest.raises(UnknownFrameIdError):
        decode_command(0x91, b"\x40\x00\x80")
    with pytest.raises(FrameLengthError):
        decode_command(0x11, b"\x40\x00")
    with pytest.raises(OpcodeError):
        decode_command(0x11, b"\x41\x00\x80")


def test_feedback_encoder_is_the_inverse():
    cfg = default_config().with_signs(ALT)
    for j in range(1, 8):
        f = encode_feedback(
            j,
            0.3 * j - 1.0,
            velocity_raw=0xBEEF,
            current=-2.25,
            diagnostic=0x11,
            status=0x80,
            config=cfg,
        )
        assert f.arbitration_id == FEEDBACK_IDS[j - 1] and len(f.data) == 8
        fb = decode_feedback(f.arbitration_id, f.data, cfg)
        assert fb.data == f.data and fb.position_count == f.count
        assert abs(fb.position_rad - (0.3 * j - 1.0)) < RAD_PER_COUNT
        assert (fb.velocity_raw, fb.current, fb.diagnostic, fb.status) == (
            0xBEEF,
            -2.25,
            0x11,
            0x80,
        )


def test_feedback_encoder_range_errors():
    with pytest.raises(FeedbackRangeError):
        encode_feedback(1, 0.0, current=128.0)
    with pytest.raises(FeedbackRangeError):
        encode_feedback(1, 0.0, status=256)
    with pytest.raises(FeedbackRangeError):
        encode_feedback(1, 0.0, velocity_raw=-1)
    with pytest.raises(UnrepresentableCountError):
        encode_feedback(1, 4.5)  # 257.8 deg > 256 deg
    assert len(encode_feedback(4, -0.2).data) == 8  # feedback is not bounds-checked


# --------------------------------------------------------- exhaustive, vectorized


def test_every_word_decodes_and_only_0xffff_fails_to_reencode():
    """All 65,536 16-bit words decode; re-encoding the count gives back the same word for
    every word but 0xFFFF, the second spelling of zero (decodes 0, which encodes 0x0000)."""
    words = np.arange(0x10000, dtype=np.int64)
    counts = words_to_counts(words)
    assert counts.min() == MIN_COUNT and counts.max() == MAX_COUNT
    back = counts_to_words(counts).astype(np.int64)
    bad = words[back != words]
    assert bad.tolist() == [0xFFFF]
    assert np.unique(counts).size == 65535  # 0x0000 and 0xFFFF share count 0


def test_representable_set_is_exactly_minus_32766_to_32768():
    candidates = np.arange(-70000, 70001)
    ok = codec.is_representable(candidates)
    assert candidates[ok].min() == -32766 and candidates[ok].max() == 32768
    assert ok.sum() == codec.N_REPRESENTABLE_COUNTS == 65535


def full_domain_round_trips() -> int:
    """Every representable count for all 7 joints and both signs, through the rad path.

    Ours: 65,535 counts (-32766..+32768) x 7 joints x 2 signs = 917,490. The seed
    reports 917,476 = 65,534 x 14: exactly one count fewer per (joint, sign). The seed
    does not say which count it left out; a domain of -32766..+32767 (a loop bounded
    by the int16 maximum, missing +32768 = 0x8000) would give its figure. We include
    +32768 because the seed itself says raw 0x8000 decodes to +32768.
    """
    counts = np.arange(MIN_COUNT, MAX_COUNT + 1, dtype=np.int64)
    grid = np.repeat(counts[:, None], JOINTS_PER_ARM, axis=1)
    n = 0
    for signs in (ALT, tuple(-s for s in ALT)):
        cfg = CodecConfig(signs=signs).unbounded()
        sign_arr = np.asarray(signs)
        rad = counts_to_rad(grid, sign_arr)  # joint-frame radians of exactly `count`
        words = encode_positions(rad, cfg)  # checked path, same as encode_sample
        expected = np.where(grid < 0, grid + 65535, grid)
        assert np.array_equal(words.astype(np.int64), expected)
        decoded = words_to_counts(words)
        assert np.array_equal(decoded, grid)
        assert np.array_equal(counts_to_rad(decoded, sign_arr), rad)
        n += grid.size
    return n


def test_full_domain_round_trips_every_joint_both_signs():
    assert full_domain_round_trips() == 917_490


@pytest.mark.parametrize("count", [-32767, -32768, 32769, 40000])
@pytest.mark.parametrize("sign", [1, -1])
def test_just_outside_domain_rejected_every_joint(count, sign):
    cfg = CodecConfig(signs=(sign,) * 7).unbounded()
    for j in range(7):
        sample = np.zeros(7)
        sample[j] = sign * count * RAD_PER_COUNT
        with pytest.raises(UnrepresentableCountError) as info:
            encode_positions(sample, cfg)
        assert info.value.joint == j + 1


def quantization_sweep() -> tuple[int, float]:
    """30,001 evenly spaced positions over each joint's bounds, each sign: 420,014 checks
    (the seed's figure). Returns (checks, max |rad - decode(encode(rad))|)."""
    lo = np.asarray(D.ARM_LOWER_RAD)
    hi = np.asarray(D.ARM_UPPER_RAD)
    grid = np.linspace(lo, hi, 30_001)  # (30001, 7)
    worst, n = 0.0, 0
    for signs in (ALT, tuple(-s for s in ALT)):
        cfg = default_config().with_signs(signs)
        words = encode_positions(grid, cfg)
        back = counts_to_rad(words_to_counts(words), np.asarray(signs))
        err = grid - back
        # truncation toward zero in the drive frame: never overshoots the magnitude
        assert np.all(np.abs(back) <= np.abs(grid) + 1e-12)
        worst = max(worst, float(np.abs(err).max()))
        n += grid.size
    return n, worst


def test_quantization_error_below_one_count():
    n, worst = quantization_sweep()
    assert n == 420_014
    assert worst < RAD_PER_COUNT
    assert worst > 0.9 * RAD_PER_COUNT  # the sweep does reach near-worst-case points


def test_whole_degrees_encode_exactly_despite_float_error():
    """radians(k/128 deg) -> degrees*128 often lands a few ulps below k; plain trunc would
    lose a count. Every exact count in the domain must come back as itself."""
    counts = np.arange(MIN_COUNT, MAX_COUNT + 1)
    x = np.degrees(np.radians(counts / 128.0)) * 128
    assert np.any(np.trunc(x) != counts)  # the hazard is real
    assert np.array_equal(codec.truncate_counts(x), counts)


def test_codec_experiment_figures_match_the_tests():
    from rob_twin.experiments import exp_codec

    fig = exp_codec.figures(seed=1)
    assert fig["sweep_round_trips"] == full_domain_round_trips() == 917_490
    assert fig["round_trip_difference"]["difference"] == 14
    assert fig["quantization_sweep_checks"] == 420_014
    assert fig["max_quantization_error_rad"] == quantization_sweep()[1] < RAD_PER_COUNT
    assert fig["words_not_round_tripping"] == ["0xFFFF"]
    assert fig["examples"]["+1 deg"] == "40 00 80" and fig["examples"]["-1 deg"] == "40 FF 7F"
    assert fig["examples"]["raw 0x8000 decodes"] == 32768
    assert fig["examples"]["raw 0xFFFF decodes"] == 0
    assert fig["examples"]["min count -32766 sent as"] == "40 80 01"
    assert fig["rejected_just_outside_checks"] == 42 and fig["virtual_bus"]["ok"]


def test_scalar_encoders_reject_non_numbers_typed():
    with pytest.raises(NonFiniteValueError):
        encode_joint(2, "0.1x")
    with pytest.raises(NonFiniteValueError):
        encode_feedback(2, None)
    with pytest.raises(codec.JointNumberError):
        encode_joint(8, 0.0)
