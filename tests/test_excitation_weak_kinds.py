"""Weak kinds in the calibration benchmark: the seeded excitation's faster band
(more acceleration for an armature the drive noise hides) and the benchmark's verdict that
tells a miss the fit warned of (its interval wider than the limit) from a wrong number."""

from __future__ import annotations

import numpy as np
import pytest
from rob_twin.experiments.bench_calibration import (
    RECOVERY_LIMIT,
    recovery_error,
    recovery_verdict,
)
from rob_twin.models.errors import InvalidValueError
from rob_twin.twin.calibration.synthetic import (
    EXCITATION_HZ,
    FAST_BANDS_HZ,
    SEEDED_BANDS_HZ,
    SEEDED_GAP_HZ,
    _seeded_waves,
    excitation_source,
)


def _targets(source, seconds=4.0, dt=1e-3):
    t = np.arange(0.0, seconds, dt)
    return t, np.array([source(x) for x in t])


def test_default_bands_unchanged():
    # the default is the waveform every earlier recording was made with
    a = excitation_source(0, seed=6100)
    b = excitation_source(0, seed=6100, bands=SEEDED_BANDS_HZ)
    for x in (0.3, 1.7, 3.9):
        np.testing.assert_array_equal(a(x), b(x))


def test_fast_bands_tones_and_more_acceleration():
    tones, _ = _seeded_waves(6100, 0, 7, FAST_BANDS_HZ)
    for i, (lo, hi) in enumerate(FAST_BANDS_HZ):
        assert np.all((tones[i] >= lo) & (tones[i] <= hi))
        assert np.all(np.abs(tones[i] - EXCITATION_HZ[i]) >= SEEDED_GAP_HZ)
    out = {}
    for name, bands in (("default", SEEDED_BANDS_HZ), ("fast", FAST_BANDS_HZ)):
        t, q = _targets(excitation_source(0, seed=6100, bands=bands))
        qdd = np.gradient(np.gradient(q, t, axis=0), t, axis=0)
        held = t > 1.05  # after the fade-in (its end is a kink in the targets' speed)
        out[name] = np.sqrt(np.mean(qdd[held] ** 2, axis=0))
        # the same motion's range: the targets stay inside the joint ranges either way
        assert np.all(np.isfinite(q))
    # J1-J6 (J7 rests on its limit at ROB's home): the faster band accelerates every joint more
    assert np.all(out["fast"][:6] > 1.3 * out["default"][:6])


@pytest.mark.parametrize(
    "bands",
    [
        ((0.13, 0.33), (0.38, 0.84)),  # two bands
        ((0.13, 0.33), (0.38, 0.84), (2.0, 1.5)),  # low above high
        ((0.22, 0.24), (0.38, 0.84), (0.9, 1.37)),  # all inside the gap around 0.23 Hz
    ],
)
def test_bad_bands_refused(bands):
    with pytest.raises(InvalidValueError):
        _seeded_waves(1, 0, 7, bands)


def _value_off(truth, percent):
    return truth * (1.0 + percent / 100.0)


def test_recovery_verdict_kinds():
    limit = RECOVERY_LIMIT["percent"]
    truth = 0.09
    near = _value_off(truth, 0.5 * limit)
    far = _value_off(truth, 3.0 * limit)
    assert recovery_error("right/j2/armature", far, truth)[0] > limit
    # within the limit: recovered, whatever the interval says
    assert recovery_verdict("right/j2/armature", near, truth, [near, near], True) == "recovered"
    # no number: the fit said so
    assert recovery_verdict("right/j2/armature", near, truth, None, False) == "not_identifiable"
    # off, the interval holds the truth and is wider than the limit: warned, undetermined
    wide = [_value_off(truth, -4 * limit), _value_off(truth, 4 * limit)]
    assert recovery_verdict("right/j2/armature", far, truth, wide, True) == "undetermined"
    # off, with an interval that excludes the truth: a wrong number, missed
    narrow = [_value_off(truth, 2.5 * limit), _value_off(truth, 3.5 * limit)]
    assert recovery_verdict("right/j2/armature", far, truth, narrow, True) == "missed"


def test_recovery_verdict_delay_in_ms():
    # delays are judged in ms: 3 ms off with an interval of +-0.5 ms around it is missed
    truth, value = 0.012, 0.015
    ci = [value - 0.0005, value + 0.0005]
    assert recovery_verdict("right/command_delay_s", value, truth, ci, True) == "missed"
    ci = [truth - 0.004, value + 0.004]
    assert recovery_verdict("right/command_delay_s", value, truth, ci, True) == "undetermined"
