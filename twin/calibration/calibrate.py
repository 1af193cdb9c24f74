"""``rob-twin calibrate``'s work: fit, write the calibration file, its report and plots.

``calibrate(recordings, patterns, out)`` selects the parameters (``parameters.select``),
fits them (``fit.fit``), writes ``out`` (the calibration file), ``out``'s stem +
``_report.json`` (residuals per joint before and after, on fit and validation data, the
intervals, what was not identifiable, the misfit warnings) and ``_fit.png`` (recorded vs
predicted joint positions before and after, for the joints that moved most). A fit in
which no selected parameter is excited, or none is fitted (a torque constant alone with
currents not weighed), ends in ``NotExcitedError`` (nothing written). A fit the misfit
rules flag (``fit.misfit``: a value on its bound, an interval leaving its bounds, a
residual far above the recording's quantisation floor, residual structure) is written all
the same, with its warnings under ``misfit`` in the file and the report; ``rob-twin
calibrate`` exits 4 for it unless ``--accept-misfit``. ``robot``: the robot
recorded (any robot with Amber drives; MissingCapabilityError, exit 2, for another before
anything is read); the calibration file names it (``robot``: its identity).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
from rob_twin.models.errors import InvalidValueError, RobTwinError
from rob_twin.models.robot import CAN_DRIVES, Robot, robot_of
from rob_twin.twin.calibration.calibration_file import (
    Calibration,
    calibration_document,
    save_calibration,
)
from rob_twin.twin.calibration.dataset import input_sha256, read_input
from rob_twin.twin.calibration.drive_noise import describe_noise, estimate_drive_noise
from rob_twin.twin.calibration.fit import INTERVAL_METHOD, FitConfig, FitResult, fit
from rob_twin.twin.calibration.parameters import parse_name, select
from rob_twin.twin.calibration.predict import predict
from rob_twin.twin.calibration.replay_contacts import replay_contacts


class NotExcitedError(RobTwinError, ValueError):
    """The recordings excite none of the selected parameters: no number can be given."""


def _parameters_entry(result: FitResult) -> dict[str, dict]:
    out = {}
    for name, value in result.values.items():
        p = parse_name(name)
        interval = result.interval_bounds.get(name)
        identifiable = name not in result.not_identifiable and name not in result.unweighted
        out[name] = {
            "value": value,
            "unit": p.unit,
            "nominal": result.start[name],
            "lower": result.bounds[name].lower,
            "upper": result.bounds[name].upper,
            "fitted": identifiable,
            "interval": list(interval) if interval is not None else None,
        }
    return out


def _plot(path: Path, recording, start: dict, values: dict, robot: Robot) -> Path | None:
    """Recorded vs predicted drive position, before and after, for the four joints whose
    error fell most; None when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    from rob_twin.twin.render.figures import save_png

    before = predict(recording, start, robot=robot)
    after = predict(recording, values, robot=robot)
    gain = {
        k: float(np.sqrt(np.mean(before.tracks[k].position_error ** 2)))
        - float(np.sqrt(np.mean(after.tracks[k].position_error ** 2)))
        for k in before.tracks
    }
    keys = sorted(gain, key=gain.get, reverse=True)[:4]
    fig, axes = plt.subplots(len(keys), 1, figsize=(8, 2.2 * len(keys)), sharex=True, squeeze=False)
    for ax, key in zip(axes[:, 0], keys, strict=False):
        b, a = before.tracks[key], after.tracks[key]
        ax.plot(b.t, b.position_rec, "k", lw=1.2, label="recorded")
        ax.plot(b.t, b.position_pred, "C3--", lw=1, label="twin before")
        ax.plot(a.t, a.position_pred, "C0", lw=1, label="twin calibrated")
        ax.set_ylabel(f"{key[0].value} j{key[1]} [rad]")
    axes[0, 0].legend(loc="upper right", fontsize=8)
    axes[-1, 0].set_xlabel("time [s] (simulated twin; recorded feedback)")
    fig.suptitle("drive position: recorded vs predicted, before and after calibration")
    return save_png(fig, path)


def calibrate(
    recordings: list[str | Path],
    patterns: list[str],
    out: str | Path,
    validate: list[str | Path] = (),
    name: str | None = None,
    start: Calibration | None = None,
    config: FitConfig | None = None,
    progress=None,
    robot: Robot | None = None,
    replay_noise: float | str | None = None,
) -> dict:
    """Fit the parameters matching ``patterns`` to ``recordings`` of ``robot`` (None: the
    default robot) and write the calibration file ``out`` with its report and plot; returns
    the report. ``replay_noise``: the rollouts' drive noise std [rad], "auto" (measured on
    the first fit recording, ``drive_noise.estimate_drive_noise``; where it is not
    measurable, the drive family's assumed level (Damiao) or noiseless, said in the fit's
    notes) or None (``config``'s
    ``replay_noise_rad``)."""
    robot = robot_of(robot)
    robot.require(CAN_DRIVES, "a calibration (fitted drive parameters)")
    config = config or FitConfig()
    if replay_noise is not None and replay_noise != "auto":
        config = replace(config, replay_noise_rad=replay_noise)  # checked: InvalidValueError
    elif replay_noise == "auto" and config.current_weight > 0:
        raise InvalidValueError(
            "replay_noise",
            replay_noise,
            "off (0) when currents are weighed (current_weight "
            f"{config.current_weight}): a noisy replay's currents pull a torque constant "
            "toward zero",
        )
    names = select(patterns, robot)
    recs = [read_input(r, robot) for r in recordings]  # every input checked before any fit
    vals = [read_input(r, robot) for r in validate]
    noise = None
    if replay_noise == "auto":
        if progress:
            progress("calibrate: measuring the drive noise in the first recording's currents")
        noise = estimate_drive_noise(
            recs[0], robot, start.values if start is not None else None, config.seconds
        )
        config = replace(config, replay_noise_rad=noise.std_rad or 0.0)
        if progress:
            progress(
                f"calibrate: drive noise {describe_noise(noise.std_rad, robot)} "
                f"({'measured' if noise.measured else 'assumed'}): every rollout replays "
                "with it"
                if noise.std_rad
                else f"calibrate: drive noise {noise.reason}: rollouts replay noiseless"
            )
    result = fit(
        recs,
        names,
        start=start.values if start is not None else None,
        validate=vals,
        config=config,
        progress=progress,
        robot=robot,
    )
    if noise is not None and noise.std_rad is None:
        result.notes.append(f"replayed noiseless: the drive noise is {noise.reason}")
    elif noise is not None and not noise.measured:
        result.notes.append(f"replayed with assumed drive noise: {noise.reason}")
    if len(result.not_identifiable) == len(names):
        raise NotExcitedError(
            f"the recordings excite none of the {len(names)} selected parameters "
            f"({', '.join(names[:6])}{', ...' if len(names) > 6 else ''}): record an "
            "excitation (rob-twin excite) and calibrate again"
        )
    if len(result.not_identifiable) + len(result.unweighted) == len(names):
        held = result.unweighted
        raise NotExcitedError(
            f"none of the {len(names)} selected parameters was fitted: "
            f"{', '.join(held[:6])}{', ...' if len(held) > 6 else ''} show only in the "
            "drives' current feedback, which this fit weighs 0 (positions only): pass "
            "--current-weight W (e.g. 0.03 rad per drive unit)"
            + (
                f"; the recordings excite none of {', '.join(result.not_identifiable[:6])}"
                if result.not_identifiable
                else ""
            )
        )
    if progress:
        progress("calibrate: checking the replay with the fitted values for contact")
    contacts = replay_contacts(recs[0], result.values, robot, config.seconds)
    if contacts:
        result.notes.append(
            "the twin's replay of the first recording with the fitted values touches: "
            + "; ".join(c.describe() for c in contacts[:3])
            + ": the fit is partly a fit of the contact (its friction reads as joint "
            "friction); record an excitation that keeps clear (rob-twin excite)"
        )
    out = Path(out)
    model = robot.model()
    recordings_entry = [
        {"file": Path(r.path).name, "sha256": input_sha256(r.path), "role": role}
        for role, group in (("fit", recs), ("validate", vals))
        for r in group
    ]
    residuals = {"rms_before_rad": result.rms_before, "rms_after_rad": result.rms_after}
    doc = calibration_document(
        name or out.stem,
        model,
        _parameters_entry(result),
        recordings_entry,
        residuals,
        result.not_identifiable,
        fit={
            "optimizer": "mujoco.sysid.optimize (mujoco.minimize least squares)",
            "evaluations": result.evaluations,
            "wall_s": round(result.wall_s, 2),
            "cost_before_rad": result.cost_before,
            "cost_after_rad": result.cost_after,
            "current_weight": config.current_weight,
            "replay_noise_rad": config.replay_noise_rad,
            "drive_noise_estimate": noise.as_dict() if noise is not None else None,
            "intervals": INTERVAL_METHOD,
            "residual": result.residual,
            "notes": result.notes,
        },
        misfit=result.misfit,
        robot=robot,
    )
    save_calibration(out, doc)
    plot = _plot(out.with_name(out.stem + "_fit.png"), recs[0], result.start, result.values, robot)
    report = {
        "calibration": str(out),
        "hardware_io": False,
        "robot": doc["robot"],
        "parameters": doc["parameters"],
        "not_identifiable": result.not_identifiable,
        "not_weighed": result.unweighted,
        "misfit": result.misfit,
        "contacts": [c.as_dict() for c in contacts],
        "residuals": residuals,
        "fit": doc["fit"],
        "plot": str(plot) if plot else None,
    }
    out.with_name(out.stem + "_report.json").write_text(json.dumps(report, indent=1))
    return report
