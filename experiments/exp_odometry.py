"""Odometry against motion-capture ground truth (seed 002's figures, their shape, on ROB).

Seed 002 (a mecanum base, optical flow + IMU in ArduPilot's EKF, judged against the lab's
motion capture): driving 5.5 m the estimate stayed within 0.74 m; spinning in place it went
155 m off, because the sensor's mounting was missing from the configuration; once fixed and
the flow gain tuned, within 5 mm.

Here (simulated, a different robot and a different estimator): ROB's tracked base drives
5.5 m straight, then, in a second run, spins in place. Five estimators run side by side on
the same motion: tread odometry, treads + gyro, floor flow + gyro, each with the IMU's
mounting (the board is mounted on its side) stated correctly, and flow + gyro and
treads + gyro with the IMU mounting missing (identity). The simulator's base pose sampled
at 100 Hz is the motion-capture stream.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from rob_twin.experiments.output import OUT_DIR, markdown_table, write_experiment
from rob_twin.experiments.registry import experiment
from rob_twin.twin.base.odometry import (
    MocapStream,
    Mounting,
    Odometry,
    OdometryConfig,
    position_errors,
)
from rob_twin.twin.base.tread_drive import BaseDrive, place_base
from rob_twin.twin.render.figures import save_png
from rob_twin.twin.sim.twin import Twin

STRAIGHT_M = 5.5
STRAIGHT_SPEED_M_S = 0.5
SPIN_RATE_RAD_S = 1.0  # commanded; the treads slip, the base turns slower

ESTIMATES = {
    "tread": OdometryConfig(estimator="tread"),
    "tread+gyro": OdometryConfig(estimator="tread+gyro"),
    "flow+gyro": OdometryConfig(estimator="flow+gyro"),
    "tread+gyro, IMU mounting missing": OdometryConfig(estimator="tread+gyro", imu=Mounting()),
    "flow+gyro, IMU mounting missing": OdometryConfig(estimator="flow+gyro", imu=Mounting()),
}


def drive_run(kind: str, seed: int, spin_s: float = 60.0) -> dict:
    """One run (``straight`` or ``spin``): estimates and ground truth, rows (t, x, y, yaw)."""
    twin = Twin()
    if kind == "straight":  # face -x: the room is long that way (the table is ahead at +x)
        place_base(twin, 0.0, 0.0, math.pi)
    else:  # clear of the table: the arms sweep a circle about 1 m across
        place_base(twin, -2.5, 0.0, 0.0)
    drive = BaseDrive(twin)
    mocap = MocapStream(twin, rate_hz=100.0)
    estimators = {
        name: Odometry(twin, drive, cfg, seed=seed + i)
        for i, (name, cfg) in enumerate(ESTIMATES.items())
    }
    if kind == "straight":
        drive.command(STRAIGHT_SPEED_M_S, 0.0)
        twin.run_for(STRAIGHT_M / STRAIGHT_SPEED_M_S)
    else:
        drive.command(0.0, SPIN_RATE_RAD_S)
        twin.run_for(spin_s)
    drive.command(0.0, 0.0)
    twin.run_for(1.0)
    truth = mocap.samples
    out = {"truth": truth, "estimates": {}}
    for name, odo in estimators.items():
        err = position_errors(odo.track, truth)
        yaw_err = odo.track[-1, 3] - truth[-1, 3]
        out["estimates"][name] = {
            "track": odo.track,
            "final_error_m": float(err[-1]),
            "max_error_m": float(err.max()),
            "final_yaw_error_rad": math.remainder(float(yaw_err), 2 * math.pi),
        }
    turned = np.unwrap(truth[:, 3])
    out["travelled_m"] = float(np.sum(np.hypot(np.diff(truth[:, 1]), np.diff(truth[:, 2]))))
    out["turned_rad"] = float(turned[-1] - turned[0])
    return out


def plot(runs: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 5.5))
    for ax, (kind, run) in zip(axes, runs.items(), strict=True):
        t = run["truth"]
        ax.plot(t[:, 1], t[:, 2], "k-", lw=3, label="ground truth (mocap)")
        for name, est in run["estimates"].items():
            tr = est["track"]
            ax.plot(tr[:, 1], tr[:, 2], lw=1.2, label=f"{name} ({est['final_error_m']:.3g} m)")
        ax.set_title(f"{kind} (simulated)")
        ax.set_xlabel("x [m]")
        ax.set_ylabel("y [m]")
        ax.axis("equal")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    save_png(fig, path, dpi=110)


@experiment("odometry")
def run(seed: int = 0, spin_s: float = 60.0) -> dict:
    runs = {
        "straight 5.5 m": drive_run("straight", seed),
        "spin in place": drive_run("spin", seed, spin_s),
    }
    png = OUT_DIR / "experiments" / "odometry" / "tracks.png"
    plot(runs, png)
    result = {"plot": str(png), "spin_s": spin_s, "runs": {}}
    rows = []
    seed_fig = {
        "straight 5.5 m": "within 0.74 m (mounting missing)",
        "spin in place": "155 m off (mounting missing); within 5 mm once fixed and tuned",
    }
    for kind, r in runs.items():
        result["runs"][kind] = {
            "travelled_m": r["travelled_m"],
            "turned_rad": r["turned_rad"],
            "estimates": {
                n: {k: v for k, v in e.items() if k != "track"} for n, e in r["estimates"].items()
            },
        }
        for name, e in r["estimates"].items():
            rows.append(
                {
                    "run": kind,
                    "estimator": name,
                    "final error [m]": f"{e['final_error_m']:.4f}",
                    "max error [m]": f"{e['max_error_m']:.4f}",
                    "final yaw error [rad]": f"{e['final_yaw_error_rad']:.3f}",
                    "seed 002": seed_fig[kind],
                }
            )
    spin = runs["spin in place"]
    result["spin_commanded_rad_s"] = SPIN_RATE_RAD_S
    result["spin_achieved_rad_s"] = spin["turned_rad"] / (spin_s + 1.0)
    note = (
        "\nOurs differ from seed 002's, as they must: a tracked base in simulation, not a "
        "mecanum base; our own planar estimators, not ArduPilot's EKF; a flow sensor that reads "
        "true floor velocity plus white noise (no gain to tune). The shape carries over: with "
        "the IMU mounting missing, straight driving stays good (no yaw to mis-read) while "
        "spinning in place drifts without bound (the flow sensor's lever-arm velocity is "
        "integrated as travel, at about omega * 0.22 m per second); with the mounting stated the "
        "spin stays within millimetres. Tread odometry alone cannot see the treads' "
        f"sideways slip: commanded {SPIN_RATE_RAD_S} rad/s, the base turned at "
        f"{result['spin_achieved_rad_s']:.3f} rad/s.\n\n![tracks](tracks.png)\n"
    )
    return write_experiment(
        "odometry",
        result,
        markdown_table(
            rows,
            [
                "run",
                "estimator",
                "final error [m]",
                "max error [m]",
                "final yaw error [rad]",
                "seed 002",
            ],
        )
        + note,
    )


if __name__ == "__main__":
    print(run())
