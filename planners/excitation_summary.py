"""What an excitation excites: per joint the range of motion it covers, and per model
parameter the figure that excites it, for a system-identification fit to judge.

Per joint (from the sampled plan): position min/max and span [rad], peak and RMS |qd|
[rad/s] and |qdd| [rad/s^2], direction reversals (sign changes of qd away from rest), the
harmonics [Hz].

Per parameter, the figure that excites it and whether every joint reaches the
``ExcitationThresholds`` (else the weakest joints are named):

- armature (rotor inertia): acceleration, peak |qdd|;
- damping (viscous): velocity, peak |qd|;
- friction loss (Coulomb): direction reversals, each a pass through zero speed;
- drive lag, position-loop gain and transport delay: frequency content, the highest
  harmonic [Hz] (and, given the drive's lag, the phase it shifts there [deg]);
- gravity and payload: pose range, the position span [rad] (the gravity torque changes
  with the pose).

Units: radians, seconds, hertz.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ExcitationThresholds:
    """The least figure per joint that counts as excited: ``velocity_rad_s`` (peak |qd|),
    ``acceleration_rad_s2`` (peak |qdd|), ``reversals`` (count), ``frequency_hz`` (highest
    harmonic), ``span_rad`` (position span)."""

    velocity_rad_s: float = 0.1
    acceleration_rad_s2: float = 0.5
    reversals: int = 2
    frequency_hz: float = 1.0
    span_rad: float = 0.05


def default_config() -> ExcitationThresholds:
    """0.1 rad/s, 0.5 rad/s^2, 2 reversals, a harmonic at 1 Hz or above, 0.05 rad span."""
    return ExcitationThresholds()


REST_RAD_S = 1e-3  # |qd| below this is rest, not a reversal

# (parameter, excited by, figure, per-joint key, threshold field)
PARAMETERS = (
    ("armature", "acceleration", "peak |qdd| [rad/s^2]", "peak_acceleration_rad_s2",
     "acceleration_rad_s2"),
    ("damping", "velocity", "peak |qd| [rad/s]", "peak_velocity_rad_s", "velocity_rad_s"),
    ("frictionloss", "direction reversals", "reversals [count]", "reversals", "reversals"),
    ("drive lag, position-loop gain, transport delay", "frequency content",
     "highest harmonic [Hz]", "highest_frequency_hz", "frequency_hz"),
    ("gravity, payload", "pose range", "position span [rad]", "span_rad", "span_rad"),
)  # fmt: skip


def joint_figures(name: str, q, qd, qdd, frequencies_hz, amplitudes) -> dict:
    """The figures of one joint's samples (q, qd, qdd (N,)) and harmonics (Hz, rad)."""
    moving = qd[np.abs(qd) > REST_RAD_S]
    reversals = int(np.count_nonzero(np.diff(np.sign(moving)) != 0))
    used = np.asarray(frequencies_hz)[np.asarray(amplitudes) > 0]
    return {
        "joint": name,
        "position_min_rad": round(float(q.min()), 4),
        "position_max_rad": round(float(q.max()), 4),
        "span_rad": round(float(q.max() - q.min()), 4),
        "peak_velocity_rad_s": round(float(np.abs(qd).max()), 4),
        "rms_velocity_rad_s": round(float(np.sqrt(np.mean(qd**2))), 4),
        "peak_acceleration_rad_s2": round(float(np.abs(qdd).max()), 4),
        "rms_acceleration_rad_s2": round(float(np.sqrt(np.mean(qdd**2))), 4),
        "reversals": reversals,
        "harmonics_hz": [round(float(f), 4) for f in used],
        "highest_frequency_hz": round(float(used.max()) if used.size else 0.0, 4),
    }


def excitation_summary(
    plan,
    path,
    thresholds: ExcitationThresholds | None = None,
    drive_lag_s: float | None = None,
) -> dict:
    """The summary of ``plan`` (the certified ``Plan`` of the excitation ``path``, a
    ``rob_twin.planners.excitation.MultiSinePath`` stacked over ``plan.moving``): per arm
    the joints' figures, per parameter the figure per joint, its range and the joints below
    the threshold; ``drive_lag_s`` [s]: the drive's lag, to state the phase it shifts at
    the highest harmonic. Simulated: ``hardware_io`` false."""
    thresholds = thresholds or default_config()
    joints: dict[str, list[dict]] = {}
    col = 0
    for arm, tr in plan.arms.items():
        rows = []
        for j, name in enumerate(tr.joint_names):
            rows.append(
                joint_figures(
                    name,
                    tr.q[:, j],
                    tr.qd[:, j],
                    tr.qdd[:, j],
                    path.frequencies_hz[col + j],
                    path.amplitudes[col + j],
                )
            )
        joints[arm] = rows
        col += len(tr.joint_names)
    parameters = []
    for parameter, by, figure, key, field in PARAMETERS:
        least = getattr(thresholds, field)
        per_joint = {arm: [row[key] for row in rows] for arm, rows in joints.items()}
        values = [v for vs in per_joint.values() for v in vs]
        weak = [
            f"{row['joint']} {row[key]:g}"
            for arm, rows in joints.items()
            for row in rows
            if row[key] < least
        ]
        entry = {
            "parameter": parameter,
            "excited_by": by,
            "figure": figure,
            "range": [min(values), max(values)],
            "threshold": least,
            "excited": not weak,
            "weak_joints": weak,
            "per_joint": per_joint,
        }
        if key == "highest_frequency_hz" and drive_lag_s is not None:
            f = max(values)
            entry["drive_lag_s"] = drive_lag_s
            entry["drive_lag_corner_hz"] = round(1.0 / (2 * math.pi * drive_lag_s), 2)
            entry["phase_at_highest_deg"] = round(math.degrees(2 * math.pi * f * drive_lag_s), 3)
        parameters.append(entry)
    return {
        "hardware_io": False,
        "simulated": True,
        "duration_s": round(float(plan.t[-1]), 4),
        "samples": int(plan.t.size),
        "joints": joints,
        "parameters": parameters,
    }


def summary_lines(summary: dict) -> list[str]:
    """One line per parameter: what excites it, the range over the joints, the weak ones."""
    out = []
    for p in summary["parameters"]:
        lo, hi = p["range"]
        line = f"{p['parameter']}: {p['excited_by']}, {p['figure']} {lo:g} to {hi:g}"
        if "phase_at_highest_deg" in p:
            line += (
                f" (the drive's {p['drive_lag_s'] * 1e3:g} ms lag: corner "
                f"{p['drive_lag_corner_hz']:g} Hz, {p['phase_at_highest_deg']:g} deg there)"
            )
        if p["weak_joints"]:
            shown = ", ".join(p["weak_joints"][:4])
            more = len(p["weak_joints"]) - 4
            line += f"; weak (< {p['threshold']:g}): {shown}" + (f" +{more}" if more > 0 else "")
        else:
            line += f"; every joint >= {p['threshold']:g}"
        out.append(line)
    return out
