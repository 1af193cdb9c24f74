"""The codec's scalar hot paths agree bit for bit with its vectorized reference."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rob_twin.controllers.codec import (
    MAX_COUNT,
    MIN_COUNT,
    RAD_PER_COUNT,
    count_to_rad,
    counts_to_rad,
    default_config,
    encode_positions,
    encode_sample,
    word_to_count,
    words_to_counts,
)
from rob_twin.controllers.errors import CodecConfigError, CodecError


def test_word_to_count_matches_vectorized_on_every_word():
    words = np.arange(0x10000)
    ref = words_to_counts(words)
    assert [word_to_count(int(w)) for w in words] == ref.tolist()
    with pytest.raises(CodecConfigError, match="0x10000|65536"):
        word_to_count(0x10000)


@pytest.mark.parametrize("sign", [1, -1])
def test_count_to_rad_matches_vectorized_bitwise(sign):
    counts = np.arange(MIN_COUNT, MAX_COUNT + 1)
    ref = counts_to_rad(counts, sign)
    ours = np.array([count_to_rad(int(c), sign) for c in counts])
    assert np.array_equal(ours, ref)


def _frames_words(sample, config):
    return [int.from_bytes(f.data[1:], "big") for f in encode_sample(sample, config)]


@pytest.mark.parametrize("sign", [1, -1])
def test_encode_sample_matches_encode_positions_on_every_count(sign):
    cfg = default_config().unbounded().with_signs((sign,) * 7)
    counts = np.arange(MIN_COUNT, MAX_COUNT + 1, dtype=float)
    # exact multiples, and the neighbouring doubles on both sides of each
    x = (
        np.concatenate(
            [
                counts * RAD_PER_COUNT,
                np.nextafter(counts * RAD_PER_COUNT, np.inf),
                np.nextafter(counts * RAD_PER_COUNT, -np.inf),
            ]
        )
        * sign
    )
    n = len(x) // 7 * 7
    samples = x[:n].reshape(-1, 7)
    ok = np.all(np.abs(samples) < (MAX_COUNT - 1) * RAD_PER_COUNT, axis=1)  # drop edge samples
    ref = encode_positions(samples[ok], cfg)
    ours = np.array([_frames_words(s, cfg) for s in samples[ok]])
    assert np.array_equal(ours, ref)


finite = st.floats(-4.0, 4.0, allow_nan=False)
anything = st.one_of(finite, st.just(math.nan), st.just(math.inf), st.floats(-10.0, 10.0))


@settings(max_examples=400, deadline=None)
@given(st.lists(anything, min_size=7, max_size=7))
def test_encode_sample_raises_like_encode_positions(values):
    cfg = default_config()
    try:
        ref = encode_positions(np.array(values), cfg)
    except CodecError as err:
        with pytest.raises(type(err)) as got:
            encode_sample(values, cfg)
        assert getattr(got.value, "joint", None) == getattr(err, "joint", None)
        return
    assert _frames_words(values, cfg) == ref.tolist()
