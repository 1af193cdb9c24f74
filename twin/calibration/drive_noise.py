"""The drive noise a recording shows, measured in its current feedback through the twin.

A drive's servo loop is noisy: the twin models it as white noise on every servo target at
every physics step (``TwinConfig.control_noise``, rad; N m on a torque actuator). A replay
without it is smooth where the robot was not, and a fit then reads the difference as
parameters: simulated, ROB with 1 mrad of drive noise, friction loss fitted 2.7-16 % off
from 60 s recordings (four seeds) (the noise dithers the Coulomb friction, a noiseless
replay does not). A fit that replays with noise of the recorded level
(``FitConfig.replay_noise_rad``) compares like with like.

The level is measured, not assumed: the servo noise reaches the drive's reported current
directly (a position servo's torque is kp times its target error), while the positions
hardly show it (simulated, ROB: 0.04-0.07 mrad of position noise against a feedback count
of 0.14 mrad). ``estimate_drive_noise`` replays the recording twice, noiseless and with a
probe std, and takes for each joint

    std_j = probe x sqrt((L_rec^2 - q^2 / 12 - L_0^2) / (L_probe^2 - L_0^2))

where L is the white-noise level of a current signal (``fit.noise_level``: from second
differences) recorded, predicted noiseless and predicted with the probe, and q one count of
the current feedback (its quantisation's variance is q^2 / 12). The estimate is the median
over the joints whose recorded level stands clear of what the noiseless twin and the
quantisation already explain (``CLEAR_RATIO``); with fewer than half of them clear the
noise is not measurable (None, with the reason; a drive family's stated level where it
has one, below): it is then below what the currents show. Simulated: ROB recordings
made with 0.4 / 1.0 / 2.5 mrad gave medians within 6 % of each (14 joints, 4 s);
OpenArm's 1 mN m on its torque actuators is below its drives' torque count (4.9-22 mN m)
and is reported not measurable.

Where the noise is not measurable and the drive family has a stated level
(``ASSUMED_DRIVE_NOISE``: Damiao), the estimate is that level, marked assumed
(``NoiseEstimate.measured`` False). Simulated, the calibration benchmark's OpenArm draws at
seed 6400 (4 s recordings made with 0.02 N m of torque noise, excitations kept off the
torso): replayed noiseless, 14 of 20 truths inside their 95 % intervals (3 of 4 draws within
5 %); replayed with the assumed level, 20 of 20 (2 of 4 within 5 %, the other two off by
more but inside their intervals: warned, not missed). The level is a claim of the twin's
drive model, not a measurement of an OpenArm: ``rob-twin calibrate --replay-noise STD``
gives another.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from rob_twin.models.robot import Robot, robot_of
from rob_twin.twin.bus.replay import Recording, read_recording

PROBE_STD_RAD = 1e-3  # the probe replay's servo-target noise std [rad]
# a joint is measured when its recorded current's noise variance is at least this many times
# what the noiseless twin and the feedback's quantisation explain
CLEAR_RATIO = 4.0
# a drive family's stated noise level where a recording cannot show it: Damiao, white noise
# on each motor torque at each 1 ms physics step [N m]. ASSUMED (no OpenArm measurement
# behind it): the level the twin's synthetic Damiao recordings carry
# (experiments/bench_calibration.py); its torque count (4.9-22 mN m) hides it
ASSUMED_DRIVE_NOISE = {"damiao": 0.02}


def noise_unit(robot: Robot) -> str:
    """The unit of ``robot``'s drive noise: "N m" on a torque motor (Damiao), "rad" on a
    servo target (the rest)."""
    return "N m" if robot.family == "damiao" else "rad"


def describe_noise(std: float, robot: Robot) -> str:
    """``std`` of ``robot``'s drive noise for a person: "0.020 N m on each motor torque" or
    "1.000 mrad on each servo target"."""
    if noise_unit(robot) == "N m":
        return f"{std:.3f} N m on each motor torque"
    return f"{1000 * std:.3f} mrad on each servo target"


@dataclass(frozen=True)
class NoiseEstimate:
    """std_rad: the drive noise std [``unit``: rad on a servo target, N m on a torque
    motor] (None: not measurable, see ``reason``); per_joint: each measured joint's estimate
    [``unit``], keyed ``right/j1``; joints: how many joints had current feedback;
    measured: False when ``std_rad`` is the family's assumed level
    (``ASSUMED_DRIVE_NOISE``), not a measurement."""

    std_rad: float | None
    per_joint: dict[str, float]
    joints: int
    reason: str
    measured: bool = True
    unit: str = "rad"

    def as_dict(self) -> dict:
        return {
            "std_rad": self.std_rad,
            "per_joint_rad": self.per_joint,
            "joints": self.joints,
            "method": "current-feedback noise level against the twin's, probe "
            f"{PROBE_STD_RAD:g} rad (rob_twin.twin.calibration.drive_noise)",
            "reason": self.reason,
            "measured": self.measured,
            "unit": self.unit,
        }


def estimate_drive_noise(
    recording: Recording | str,
    robot: Robot | None = None,
    parameters: dict[str, float] | None = None,
    seconds: float | None = None,
) -> NoiseEstimate:
    """The servo-target noise std [rad] that ``recording`` of ``robot`` shows in its current
    feedback (see the module docstring), with the twin at ``parameters`` (None: nominal),
    over its first ``seconds`` (None: all; ``replay`` checks it). Two replays of the
    recording."""
    from rob_twin.twin.calibration.fit import noise_level
    from rob_twin.twin.calibration.predict import predict

    robot = robot_of(robot)
    rec = recording if isinstance(recording, Recording) else read_recording(recording)
    quiet = predict(rec, parameters, seconds=seconds, robot=robot)
    probed = predict(rec, parameters, seconds=seconds, robot=robot, drive_noise_rad=PROBE_STD_RAD)
    floor = quiet.current_quantum**2 / 12.0
    per_joint: dict[str, float] = {}
    for key, track in quiet.tracks.items():
        level_rec = noise_level(track.current_rec) ** 2
        level_quiet = noise_level(track.current_pred) ** 2
        level_probe = noise_level(probed.tracks[key].current_pred) ** 2
        excess = level_rec - floor - level_quiet
        gain = level_probe - level_quiet
        if gain <= 0 or excess < (CLEAR_RATIO - 1.0) * (floor + level_quiet):
            continue
        per_joint[f"{key[0].value}/j{key[1]}"] = PROBE_STD_RAD * math.sqrt(excess / gain)
    joints, unit = len(quiet.tracks), noise_unit(robot)
    if joints == 0 or 2 * len(per_joint) < joints:
        reason = (
            f"not measurable: {len(per_joint)} of {joints} joints show current noise clear "
            f"of the noiseless twin's and the feedback's quantisation ({CLEAR_RATIO:g}x); the "
            "drive noise is below what these currents resolve"
        )
        assumed = ASSUMED_DRIVE_NOISE.get(robot.family)
        if assumed is None:
            return NoiseEstimate(None, per_joint, joints, reason, unit=unit)
        return NoiseEstimate(
            assumed,
            per_joint,
            joints,
            f"{reason}: the {robot.family.capitalize()} drives' assumed level, "
            f"{describe_noise(assumed, robot)} (ASSUMED, drive_noise.ASSUMED_DRIVE_NOISE; "
            "--replay-noise gives another)",
            measured=False,
            unit=unit,
        )
    std = float(np.median(list(per_joint.values())))
    return NoiseEstimate(
        std,
        per_joint,
        joints,
        f"median of {len(per_joint)} of {joints} joints' current noise against the twin's",
        unit=unit,
    )
