"""The drive noise a recording shows (``twin.calibration.drive_noise``) and fits that replay
with it (``FitConfig.replay_noise_rad``, ``rob-twin calibrate --replay-noise``).

Simulated: the twin records itself with a known servo-target noise, and the estimate, taken
from the recorded current feedback through two replays, must find that std again."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from rob_twin.cli.main import main
from rob_twin.models.errors import InvalidValueError
from rob_twin.models.names import Arm
from rob_twin.models.robot import robot_of
from rob_twin.twin.calibration.drive_noise import (
    ASSUMED_DRIVE_NOISE,
    describe_noise,
    estimate_drive_noise,
)
from rob_twin.twin.calibration.fit import FitConfig, fit, noise_level
from rob_twin.twin.calibration.predict import predict
from rob_twin.twin.calibration.synthetic import record_hidden

SECONDS = 3.0
NOISE_RAD = 2e-3  # not the probe's 1 mrad: the estimate must scale, not echo its probe


@pytest.fixture(scope="module")
def recs(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("drive_noise")
    return {
        "noisy": record_hidden(folder / "noisy.log", {}, SECONDS, seed=11, noise=NOISE_RAD),
        "quiet": record_hidden(folder / "quiet.log", {}, SECONDS, seed=11, noise=False),
        "friction": record_hidden(
            folder / "friction.log",
            {"right/j2/frictionloss": 0.5},
            SECONDS,
            seed=12,
            excitation_seed=12,
            noise=True,
        ),
    }


def test_the_estimate_finds_the_recorded_servo_noise_in_the_currents(recs):
    estimate = estimate_drive_noise(recs["noisy"], robot_of("rob"))
    assert estimate.std_rad == pytest.approx(NOISE_RAD, rel=0.15)
    assert estimate.joints == 14 and len(estimate.per_joint) >= 10
    assert estimate.as_dict()["std_rad"] == estimate.std_rad


@pytest.mark.parametrize("seed", [12, 5])
def test_the_estimate_holds_on_a_generated_amber_robot(tmp_path, seed):
    from rob_twin.experiments.robot_factory import generate_robot

    # Amber drives come with seven joints only (robot_factory); the geometry is the seed's
    made = generate_robot(tmp_path / "robot", seed, family="amber")
    robot = robot_of(str(made.robot_file))
    assert robot.family == "amber" and robot.joint_count(Arm.RIGHT) == 7
    rec = record_hidden(tmp_path / "gen.log", {}, SECONDS, seed=seed, noise=NOISE_RAD, robot=robot)
    assert estimate_drive_noise(rec, robot).std_rad == pytest.approx(NOISE_RAD, rel=0.15)


def test_a_noiseless_recording_is_called_not_measurable_not_given_a_number(recs):
    estimate = estimate_drive_noise(recs["quiet"], robot_of("rob"))
    assert estimate.std_rad is None and estimate.unit == "rad"
    assert "not measurable" in estimate.reason


def test_damiao_torque_noise_below_the_torque_count_takes_the_assumed_level(tmp_path):
    """OpenArm's torque count hides its drive noise: the estimate is the Damiao drives'
    stated level, marked assumed and in N m, never a number passed off as measured."""
    robot = robot_of("openarm")
    rec = record_hidden(tmp_path / "openarm.log", {}, 2.0, seed=5, noise=1e-3, robot=robot)
    estimate = estimate_drive_noise(rec, robot)
    assert estimate.std_rad == ASSUMED_DRIVE_NOISE["damiao"]
    assert not estimate.measured and estimate.unit == "N m"
    assert "not measurable" in estimate.reason and "ASSUMED" in estimate.reason
    assert estimate.as_dict()["measured"] is False
    assert describe_noise(estimate.std_rad, robot) == "0.020 N m on each motor torque"


def test_a_noisy_replay_repeats_itself_and_is_not_the_recorded_realisation(recs):
    rob = robot_of("rob")
    one = predict(recs["noisy"], None, robot=rob, drive_noise_rad=NOISE_RAD)
    two = predict(recs["noisy"], None, robot=rob, drive_noise_rad=NOISE_RAD)
    quiet = predict(recs["noisy"], None, robot=rob)
    key = next(iter(one.tracks))
    a, b, q = one.tracks[key], two.tracks[key], quiet.tracks[key]
    assert np.array_equal(a.current_pred, b.current_pred)  # one seeded realisation
    assert not np.array_equal(a.current_pred, q.current_pred)
    # another realisation than the run's: the noisy replay misses the recorded currents by
    # about sqrt(2) x their noise level (the same realisation would leave only the count)
    miss = float(np.sqrt(np.mean((a.current_pred - a.current_rec) ** 2)))
    assert miss > noise_level(a.current_rec)


@pytest.mark.parametrize("bad", [-1e-3, math.nan, math.inf, True, 0.06])
def test_a_bad_replay_noise_is_refused_with_its_range(bad):
    with pytest.raises(InvalidValueError, match="replay_noise_rad"):
        FitConfig(replay_noise_rad=bad)


@pytest.mark.parametrize("bad", [-1, 21, 1.5, True])
def test_a_bad_count_of_noise_realisations_is_refused_with_its_range(bad):
    with pytest.raises(InvalidValueError, match="noise_realisations"):
        FitConfig(noise_realisations=bad)


def test_the_replay_noise_spread_widens_the_intervals_and_leaves_the_values(recs):
    """Other realisations of the replay's noise measure how far the estimate moves with
    it; the intervals take that spread in quadrature, the fitted values stay."""
    name = "right/j2/frictionloss"
    fits = {
        n: fit(
            [recs["friction"]],
            [name],
            config=FitConfig(replay_noise_rad=1e-3, noise_realisations=n),
            robot=robot_of("rob"),
        )
        for n in (0, 2)
    }
    assert fits[2].values[name] == fits[0].values[name]
    assert fits[2].intervals[name] > fits[0].intervals[name]
    assert any("other realisations" in note for note in fits[2].notes)
    assert not any("other realisations" in note for note in fits[0].notes)


def test_replay_noise_with_weighed_currents_is_refused():
    with pytest.raises(InvalidValueError, match="torque constant"):
        FitConfig(replay_noise_rad=1e-3, current_weight=0.03)


def test_the_command_measures_the_noise_and_replays_with_it(recs, tmp_path, capsys):
    out = tmp_path / "cal.json"
    code = main(
        [
            "calibrate",
            str(recs["friction"]),
            "--fit",
            "right/j2/frictionloss",
            "--replay-noise",
            "auto",
            "--out",
            str(out),
            "--quiet",
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0, printed
    fit = json.loads(out.read_text())["fit"]
    assert fit["replay_noise_rad"] == pytest.approx(1e-3, rel=0.15)
    assert fit["drive_noise_estimate"]["std_rad"] == fit["replay_noise_rad"]
    assert "mrad on each servo target (measured in the currents)" in printed
    value = json.loads(out.read_text())["parameters"]["right/j2/frictionloss"]["value"]
    assert value == pytest.approx(0.5, rel=0.05)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--replay-noise", "-0.001"], "give auto, off or a std"),
        (["--replay-noise", "loud"], "give auto, off or a std"),
        (["--replay-noise", "auto", "--current-weight", "0.03"], "torque constant"),
    ],
)
def test_the_command_refuses_a_bad_replay_noise_and_writes_nothing(
    recs, tmp_path, capsys, extra, message
):
    out = tmp_path / "cal.json"
    args = ["calibrate", str(recs["quiet"]), "--fit", "right/j2/damping", "--out", str(out)]
    with pytest.raises(SystemExit) as exited:
        code = main(args + extra)
        raise SystemExit(code)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err
    assert not out.exists()
