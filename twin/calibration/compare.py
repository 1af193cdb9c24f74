"""How far the twin's prediction of a recording is from what was recorded, joint by joint.

``compare_recording(recording, calibration, config, robot)`` replays the recording's host
commands into ``robot``'s twin (any robot with Amber drives; ROB by default;
``rob_twin.twin.calibration.predict.predict``, with the calibration's parameters or the twin
as it is) and reduces every joint's recorded and predicted feedback
to figures:

- ``rms_mrad`` / ``max_mrad``: RMS and largest position error [mrad], drive frame;
- ``lag_ms``: how much later the recording moves than the prediction [ms] (positive: the
  recorded arm is behind the twin), from the peak of the normalised cross-correlation of the
  two positions resampled on a 1 ms grid, refined between grid points by a parabola through
  the peak and its neighbours; ``None`` when the joint moved too little to tell
  (``CompareConfig.min_motion_rad``);
- ``current_rms`` / ``current_max``: current error [drive units, as the feedback reports];
- ``over_tolerance_s``: time [s] the position error spent above the tolerance (each
  feedback sample counts for the interval to the next one).

The comparison is within tolerance when every joint's ``max_mrad`` is at most the
tolerance. The report is simulated (``hardware_io: false``): the recording may be real, the
prediction is the twin's. ``compare_plots`` draws predicted vs recorded positions and
currents of every joint, one PNG per arm.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rob_twin.models.errors import InvalidValueError
from rob_twin.models.names import Arm
from rob_twin.models.robot import CAN_DRIVES, Robot, robot_of
from rob_twin.twin.bus.replay import Recording, check_robot_ids, read_recording
from rob_twin.twin.calibration.calibration_file import Calibration, calibration_label
from rob_twin.twin.calibration.predict import JointTrack, NoFeedbackError, Prediction, predict


@dataclass(frozen=True)
class CompareConfig:
    """tolerance_rad: the largest position error a joint may show [rad]; max_lag_s: the
    cross-correlation searches lags within +- this [s]; grid_s: the resampling step of the
    lag search [s]; min_motion_rad: a joint whose recorded position varies less than this
    (standard deviation) gets no lag [rad]."""

    tolerance_rad: float = 0.01
    max_lag_s: float = 0.2
    grid_s: float = 0.001
    min_motion_rad: float = 0.002

    def __post_init__(self) -> None:
        for name, low in (("tolerance_rad", 0.0), ("max_lag_s", 0.0), ("grid_s", 0.0)):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > low):
                raise InvalidValueError(name, value, "a finite number > 0")


def default_config() -> CompareConfig:
    """Tolerance 10 mrad; lags searched within +-200 ms on a 1 ms grid."""
    return CompareConfig()


@dataclass(frozen=True)
class JointComparison:
    """One joint's figures (see the module docstring for units)."""

    joint: str
    samples: int
    rms_mrad: float
    max_mrad: float
    lag_ms: float | None
    current_rms: float
    current_max: float
    over_tolerance_s: float

    def as_dict(self) -> dict:
        return {
            "samples": self.samples,
            "rms_mrad": round(self.rms_mrad, 4),
            "max_mrad": round(self.max_mrad, 4),
            "lag_ms": None if self.lag_ms is None else round(self.lag_ms, 3),
            "current_rms": round(self.current_rms, 4),
            "current_max": round(self.current_max, 4),
            "over_tolerance_s": round(self.over_tolerance_s, 4),
        }


def _parabola_peak(y_minus: float, y0: float, y_plus: float) -> float:
    """Offset of the vertex of the parabola through (-1, y-), (0, y0), (1, y+) [grid steps],
    within +-0.5; 0 when the three points are collinear."""
    denom = y_minus - 2.0 * y0 + y_plus
    if denom >= 0.0:  # not a maximum
        return 0.0
    return float(np.clip(0.5 * (y_minus - y_plus) / denom, -0.5, 0.5))


def estimate_lag_s(
    t: np.ndarray,
    recorded: np.ndarray,
    predicted: np.ndarray,
    config: CompareConfig | None = None,
) -> float | None:
    """How much later ``recorded`` follows ``predicted`` [s] (both sampled at ``t`` [s]): the
    lag of the largest normalised cross-correlation within ``config.max_lag_s``, refined by
    a parabola; None when the recorded signal barely moves or the samples are too few."""
    config = config or default_config()
    if len(t) < 4 or t[-1] - t[0] <= 2 * config.max_lag_s:
        return None
    if float(np.std(recorded)) < config.min_motion_rad:
        return None
    grid = np.arange(t[0], t[-1], config.grid_s)
    rec = np.interp(grid, t, recorded)
    pred = np.interp(grid, t, predicted)
    n_lag = int(round(config.max_lag_s / config.grid_s))
    scores = np.full(2 * n_lag + 1, -np.inf)
    for k in range(-n_lag, n_lag + 1):
        # recorded(t) against predicted(t - k grid steps)
        a = rec[k:] if k >= 0 else rec[: len(rec) + k]
        b = pred[: len(pred) - k] if k >= 0 else pred[-k:]
        a = a - a.mean()
        b = b - b.mean()
        norm = math.sqrt(float(a @ a) * float(b @ b))
        if norm > 0:
            scores[k + n_lag] = float(a @ b) / norm
    best = int(np.argmax(scores))
    if not math.isfinite(scores[best]):
        return None
    offset = 0.0
    if 0 < best < len(scores) - 1:
        offset = _parabola_peak(scores[best - 1], scores[best], scores[best + 1])
    return (best - n_lag + offset) * config.grid_s


def compare_joint(name: str, track: JointTrack, config: CompareConfig) -> JointComparison:
    """The figures of one joint's track."""
    err = track.position_error
    cur = track.current_pred - track.current_rec
    dt = np.diff(track.t)
    last = float(np.median(dt)) if len(dt) else 0.0
    intervals = np.append(dt, last)
    lag = estimate_lag_s(track.t, track.position_rec, track.position_pred, config)
    return JointComparison(
        joint=name,
        samples=len(err),
        rms_mrad=1e3 * float(np.sqrt(np.mean(err**2))),
        max_mrad=1e3 * float(np.max(np.abs(err))),
        lag_ms=None if lag is None else 1e3 * lag,
        current_rms=float(np.sqrt(np.mean(cur**2))),
        current_max=float(np.max(np.abs(cur))),
        over_tolerance_s=float(np.sum(intervals[np.abs(err) > config.tolerance_rad])),
    )


@dataclass
class Comparison:
    """Every joint's figures, the prediction they came from and the verdict."""

    recording: Path
    calibration: dict | str
    config: CompareConfig
    joints: dict[str, JointComparison]
    prediction: Prediction
    wall_s: float
    robot: dict | None = None  # the identity of the robot whose twin predicted

    @property
    def exceeded(self) -> list[str]:
        """Joints whose largest position error is above the tolerance."""
        limit = 1e3 * self.config.tolerance_rad
        return [name for name, c in self.joints.items() if c.max_mrad > limit]

    def report(self) -> dict:
        """The JSON report (``hardware_io: false``)."""
        return {
            "hardware_io": False,
            "evidence_class": "simulated prediction of a recording (the recording may be real)",
            "recording": str(self.recording),
            "robot": self.robot,
            "calibration": self.calibration,
            "tolerance_rad": self.config.tolerance_rad,
            "within_tolerance": not self.exceeded,
            "exceeded": self.exceeded,
            "joints": {name: c.as_dict() for name, c in self.joints.items()},
            "worst_max_mrad": round(max(c.max_mrad for c in self.joints.values()), 4),
            "simulated_s": round(self.prediction.simulated_s, 6),
            "wall_s": round(self.wall_s, 3),
            "notes": list(self.prediction.notes),
        }


def check_comparable(rec: Recording, robot: Robot | None = None) -> None:
    """RecordingError when an Amber robot's ``rec`` carries ids that are not ROB's,
    NoFeedbackError when it has no drive feedback (``robot``'s reply ids; None: the default
    robot): checked before anything is replayed."""
    from rob_twin.twin.bus.replay import reply_ids_of

    robot = robot_of(robot)
    if robot.family != "damiao":
        check_robot_ids(rec)
    replies = reply_ids_of(robot)
    if not any(f.arbitration_id in replies for f in rec.frames):
        ids = ", ".join(f"0x{i:02X}" for i in sorted(replies))
        raise NoFeedbackError(
            f"{rec.path}: no drive feedback frames (ids {ids}) to compare the twin with"
        )


def compare_recording(
    recording: Recording | Path | str,
    calibration: Calibration | None = None,
    config: CompareConfig | None = None,
    robot: Robot | None = None,
) -> Comparison:
    """Replay ``recording`` into ``robot``'s twin (None: the default robot; with
    ``calibration``'s parameters, or the twin as it is) and compare its prediction with the
    recorded feedback. RecordingError for an unreadable recording or another robot's ids,
    NoFeedbackError when it has no feedback, MissingCapabilityError for a robot without
    Amber drives (``calibration``: checked against the robot's model by the caller,
    ``rob_twin.cli.common.calibration_arg``)."""
    robot = robot_of(robot)
    robot.require(CAN_DRIVES, "a comparison with recorded drive feedback")
    config = config or default_config()
    t0 = time.perf_counter()
    rec = recording if isinstance(recording, Recording) else read_recording(recording)
    check_comparable(rec, robot)
    values = calibration.values if calibration is not None else None
    prediction = predict(rec, values, robot=robot)
    joints = {
        f"{arm.value}/j{j}": compare_joint(f"{arm.value}/j{j}", track, config)
        for (arm, j), track in sorted(
            prediction.tracks.items(), key=lambda item: (list(Arm).index(item[0][0]), item[0][1])
        )
    }
    if not joints:
        raise NoFeedbackError(f"{rec.path}: no feedback frame falls within the replayed time")
    return Comparison(
        rec.path,
        calibration_label(calibration),
        config,
        joints,
        prediction,
        time.perf_counter() - t0,
        robot.identity(),
    )


COLUMNS = (
    ("joint", "joint"),
    ("RMS error [mrad]", "rms_mrad"),
    ("max error [mrad]", "max_mrad"),
    ("lag [ms]", "lag_ms"),
    ("current RMS error", "current_rms"),
    ("time over tolerance [s]", "over_tolerance_s"),
)


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


def format_table(comparison: Comparison) -> str:
    """The figures as a Markdown table for people, one row per joint."""
    head = "| " + " | ".join(title for title, _ in COLUMNS) + " |"
    rows = [head, "|" + "---|" * len(COLUMNS)]
    for name, c in comparison.joints.items():
        figures = c.as_dict() | {"joint": name}
        rows.append("| " + " | ".join(_cell(figures[key]) for _, key in COLUMNS) + " |")
    return "\n".join(rows) + "\n"


def compare_plots(comparison: Comparison, out_dir: Path) -> list[Path]:
    """One PNG per arm in ``out_dir`` (``compare_right.png``, ``compare_left.png``): every
    joint's recorded and predicted position [rad] and current [drive units] over time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from rob_twin.twin.render.figures import save_png

    label = comparison.calibration
    label = label if isinstance(label, str) else label.get("name", "calibrated")
    paths = []
    for arm in Arm:
        tracks = {j: tr for (a, j), tr in comparison.prediction.tracks.items() if a is arm}
        if not tracks:
            continue
        fig, axes = plt.subplots(len(tracks), 2, figsize=(11, 1.6 * len(tracks) + 1), sharex=True)
        axes = np.atleast_2d(axes)
        for row, (j, tr) in enumerate(sorted(tracks.items())):
            for col, (rec, pred, unit) in enumerate(
                (
                    (tr.position_rec, tr.position_pred, "rad"),
                    (tr.current_rec, tr.current_pred, "current"),
                )
            ):
                ax = axes[row, col]
                ax.plot(tr.t, rec, lw=1.4, label="recorded")
                ax.plot(tr.t, pred, "--", lw=1.1, label="predicted")
                ax.set_ylabel(f"j{j} [{unit}]", fontsize=8)
                ax.tick_params(labelsize=7)
                ax.grid(alpha=0.3)
        axes[0, 0].legend(fontsize=7, loc="upper right")
        axes[0, 0].set_title("position (drive frame)", fontsize=9)
        axes[0, 1].set_title("current (drive units)", fontsize=9)
        for ax in axes[-1]:
            ax.set_xlabel("time [s]")
        fig.suptitle(
            f"{arm.value} arm: recorded vs predicted by the twin ({label}); simulated "
            "prediction, hardware_io: false",
            fontsize=9,
        )
        fig.tight_layout()
        paths.append(save_png(fig, out_dir / f"compare_{arm.value}.png"))
    return paths
