"""Independent validation of a calibration: seeded excitations with other tones and phases,
and synthetic recordings whose drive noise follows their seed (simulated, short)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from rob_twin.experiments.bench_calibration import draw, excitation_seeds, recovery_error
from rob_twin.models.errors import InvalidValueError
from rob_twin.models.names import Arm
from rob_twin.models.robot import robot_of
from rob_twin.twin.calibration.synthetic import (
    EXCITATION_HZ,
    SEEDED_BANDS_HZ,
    SEEDED_GAP_HZ,
    _seeded_waves,
    excitation_source,
    record_hidden,
)

T = np.arange(0.0, 12.0, 0.01)


def _targets(k: int, seed=None, amplitude: float = 0.2) -> np.ndarray:
    source = excitation_source(k, amplitude, None, seed)
    return np.array([source(t) for t in T])


def _unseeded_reference(k: int, amplitude: float = 0.2) -> np.ndarray:
    """The waveform every baseline was made with, written out: shared tones, phases
    0.9 j + 1.7 k + 0.5 i, faded in over the first second, clipped to the joint ranges."""
    robot = robot_of(None)
    arm = list(Arm)[k]
    home = np.asarray(robot.home(arm), float)
    lower, upper = (np.array(b, float) for b in zip(*robot.joint_ranges(arm), strict=True))
    j = np.arange(home.size)
    rows = []
    for t in T:
        wave = sum(
            w
            * (
                np.sin(2 * math.pi * f * t + (0.9 * j + 1.7 * k + 0.5 * i))
                - np.sin(0.9 * j + 1.7 * k + 0.5 * i)
            )
            for i, (w, f) in enumerate(zip((0.6, 0.3, 0.15), EXCITATION_HZ, strict=True))
        )
        rows.append(np.clip(home + min(1.0, t) ** 2 * amplitude * wave, lower, upper))
    return np.array(rows)


@pytest.mark.parametrize("k", [0, 1])
def test_no_seed_keeps_the_baseline_waveform(k):
    assert np.array_equal(_targets(k), _unseeded_reference(k))


def test_a_seed_gives_other_tones_and_phases_repeatably():
    for k in (0, 1):
        a, b = _seeded_waves(500, k, 7), _seeded_waves(501, k, 7)
        tones, phases = a
        assert tones.shape == phases.shape == (3, 7)
        for i, (lo, hi) in enumerate(SEEDED_BANDS_HZ):
            assert np.all((tones[i] >= lo) & (tones[i] <= hi))
            assert np.all(np.abs(tones[i] - EXCITATION_HZ[i]) >= SEEDED_GAP_HZ)
        assert np.all(tones <= max(EXCITATION_HZ))  # no faster than the unseeded motion
        # another seed: every tone and phase moves
        assert np.all(a[0] != b[0]) and np.all(a[1] != b[1])
    assert np.array_equal(_targets(0, 500), _targets(0, 500))
    fit, val, base = _targets(0, 500), _targets(0, 501), _targets(0)
    assert np.abs(fit - val).max() > 0.05 and np.abs(fit - base).max() > 0.05


@pytest.mark.parametrize("seed", [None, 0, 501])
def test_every_excitation_starts_at_rest_and_keeps_the_joint_ranges(seed):
    robot = robot_of(None)
    for k, arm in enumerate(Arm):
        q = _targets(k, seed, amplitude=0.4)
        lower, upper = (np.array(b, float) for b in zip(*robot.joint_ranges(arm), strict=True))
        assert np.all(q >= lower) and np.all(q <= upper)
        home = np.clip(np.asarray(robot.home(arm), float), lower, upper)
        assert np.allclose(q[0], home) and np.abs(q[1] - q[0]).max() < 1e-5  # at rest
        assert np.ptp(q[:, 1]) > 0.1  # and moving


@pytest.mark.parametrize("seed", [-1, 1.5, True, "3"])
def test_a_bad_excitation_seed_is_a_typed_error(seed):
    with pytest.raises(InvalidValueError, match="excitation seed"):
        excitation_source(0, 0.2, None, seed)


def test_drive_noise_follows_the_seed(tmp_path):
    def log(name: str, **kw) -> bytes:
        return record_hidden(tmp_path / f"{name}.log", {}, 0.6, **kw).read_bytes()

    noisy = {s: log(f"noisy{s}", seed=s, noise=True) for s in (0, 500)}
    assert noisy[0] != noisy[500]  # other seeds, other recordings
    assert log("again", seed=0, noise=True) == noisy[0]  # the same seed, byte for byte
    # without noise the seed changes nothing; noise changes the recording
    quiet = log("quiet0", seed=0)
    assert log("quiet500", seed=500) == quiet and quiet != noisy[0]
    # and the excitation seed changes the motion
    assert log("other_motion", seed=0, excitation_seed=7) != quiet


@pytest.mark.parametrize("noise", [-1e-3, math.nan, "loud"])
def test_a_bad_noise_is_a_typed_error_and_writes_nothing(tmp_path, noise):
    with pytest.raises(InvalidValueError, match="noise"):
        record_hidden(tmp_path / "x.log", {}, 0.2, noise=noise)
    assert not any(tmp_path.iterdir())


def test_the_benchmark_never_validates_on_its_fit_motion():
    seeds = [s for k in range(50) for s in excitation_seeds(k)]
    assert len(set(seeds)) == len(seeds)  # fit and validation apart, and apart from other draws
    assert recovery_error("right/command_delay_s", 0.012, 0.010) == pytest.approx((2.0, "ms"))
    assert recovery_error("left/j4/zero_offset_rad", 0.0105, 0.01)[1] == "mrad"
    assert recovery_error("left/j4/damping", 1.1, 1.0) == pytest.approx((10.0, "percent"))


def test_the_benchmark_draws_each_drive_familys_own_kinds_and_skips_ideal_drives(tmp_path):
    from rob_twin.experiments.robot_factory import generate_robot
    from rob_twin.models.robot import robot_of
    from rob_twin.twin.calibration.coverage import hidden_draw
    from rob_twin.twin.calibration.parameters import FAMILY_JOINT_KINDS

    openarm = robot_of("openarm")
    kinds = set()
    for k in range(4):  # every Damiao kind in four draws, both arms in two
        kinds |= {n.rsplit("/", 1)[-1] for n in hidden_draw(k, robot=openarm) if "/j" in n}
    assert kinds == set(FAMILY_JOINT_KINDS["damiao"])
    ideal = generate_robot(tmp_path, 2, family="ideal", joints=5).robot_file
    result = draw(str(ideal), 0)  # no CAN drives: nothing to calibrate, said why
    assert result["capability"] == "can_drives" and str(ideal) in result["skipped"]
