"""Benchmark: Damiao MIT drives with gravity compensation at 500 Hz (``out/bench/damiao.json``).

1. Host cost per arm per tick: Pinocchio RNEA gravity at the commanded position plus
   seven MIT encodes (median and p99 of this thread's CPU time, ``time.thread_time_ns``:
   on a shared 2-core machine wall time adds other processes' preemption; 5,000 random
   samples inside the joint bounds), each part alone too.
2. Holding error at three right-arm poses of OpenArm's own model (its ``home`` keyframe,
   a forward reach from there, elbow out; the left arm at its home), with and without the
   gravity feed-forward (OpenArm gains kp/kd in both): the largest joint deviation over
   1 s and at its end (the owner's tracking-error latch raised to 1 rad for the
   uncompensated run, so the sag is measured, not cut short).
3. Tracking error on the ``wave`` scenario (experiments/scenarios/wave.json) for both
   drive families side by side: ROB's Amber position drives (200 Hz owners) and the
   OpenArm-class Damiao drives (500 Hz owners), commanded vs simulated joint angle.
4. Closed-loop cost of the Damiao bank (both arms streaming the wave at 60 Hz) vs bare
   ``mj_step`` on the same model, thread CPU time, interleaved rounds.

All figures are simulated (hardware_io: false).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import mujoco
import numpy as np
from rob_twin.controllers.damiao_codec import MitCommand, Scaling, encode_mit
from rob_twin.experiments.output import OUT_DIR
from rob_twin.experiments.registry import benchmark
from rob_twin.models.damiao_motors import OPENARM_ARM_MOTORS, OPENARM_KD, OPENARM_KP
from rob_twin.models.loading import arm_qpos_indices, keyframe_arm_q
from rob_twin.models.names import DEFAULT_ROBOT, Arm
from rob_twin.models.robot_model import arm_joint_ranges, load_robot_model
from rob_twin.twin.drives.gravity import ModelGravity
from rob_twin.twin.rehearsal import wave_source
from rob_twin.twin.rehearsal.gates import owner_bounds, robot_home
from rob_twin.twin.render.figures import save_png
from rob_twin.twin.scenario.run import demo_scenario, run_scenario
from rob_twin.twin.sim.damiao_loop import DamiaoOptions, openarm_config
from rob_twin.twin.sim.loops import make_closed_loop
from rob_twin.twin.sim.twin import Twin, TwinConfig

ROBOT = "openarm"  # the Damiao robot of the host-cost, holding and loop-cost parts
SAMPLES = 5000
HOLD_S = 1.0
ROUNDS = 3
LOOP_S = 2.0
REACH_FROM_HOME = np.array([0.25, 0.35, 0.0, -0.6, 0.0, 0.3, 0.0])  # [rad]
ELBOW_OUT = np.array([0.0, 0.9, 0.0, 1.2, 0.0, 0.0, 0.0])  # [rad]


def poses(model: mujoco.MjModel) -> dict[str, np.ndarray]:
    """The right-arm holding poses [rad] of ``model``: its own ``home`` keyframe, a forward
    reach from there and elbow out, each clipped into the right arm's joint ranges (ROB's
    home is outside OpenArm's: its J2 -1.22 rad is below OpenArm's -0.17)."""
    home = keyframe_arm_q(model, Arm.RIGHT)
    lo, hi = _ranges(model, Arm.RIGHT)
    return {
        "home": home,
        "forward_reach": np.clip(home + REACH_FROM_HOME, lo, hi),
        "elbow_out": np.clip(ELBOW_OUT, lo, hi),
    }


def _ranges(model: mujoco.MjModel, arm: Arm) -> tuple[np.ndarray, np.ndarray]:
    qi = arm_qpos_indices(model, arm)
    joints = [int(np.flatnonzero(model.jnt_qposadr == a)[0]) for a in qi]
    return model.jnt_range[joints, 0].copy(), model.jnt_range[joints, 1].copy()


def _pct(x: list[float]) -> dict:
    a = np.array(x) * 1e6
    return {
        "median_us": round(float(np.median(a)), 2),
        "p99_us": round(float(np.percentile(a, 99)), 2),
    }


def host_cost(samples: int = SAMPLES) -> dict:
    rng = np.random.default_rng(0)
    lo, hi = np.array(arm_joint_ranges(ROBOT, Arm.RIGHT)).T
    qs = rng.uniform(lo, hi, size=(samples, 7))
    gravity = ModelGravity(load_robot_model(ROBOT), Arm.RIGHT)
    scalings = [Scaling.of(m) for m in OPENARM_ARM_MOTORS]
    rnea, enc, both = [], [], []
    for q in qs:
        t0 = time.thread_time_ns()
        tau = gravity(q)
        t1 = time.thread_time_ns()
        for k in range(7):
            encode_mit(
                MitCommand(
                    float(q[k]),
                    0.0,
                    OPENARM_KP[k],
                    OPENARM_KD[k],
                    float(np.clip(tau[k], -scalings[k].tmax_nm, scalings[k].tmax_nm)),
                ),
                scalings[k],
                k + 1,
            )
        t2 = time.thread_time_ns()
        rnea.append((t1 - t0) * 1e-9)
        enc.append((t2 - t1) * 1e-9)
        both.append((t2 - t0) * 1e-9)
    return {
        "samples": samples,
        "rnea_gravity": _pct(rnea),
        "encode_7_mit_frames": _pct(enc),
        "rnea_plus_encode": _pct(both),
        "clock": "thread CPU time",
        "share_of_500hz_tick_median": round(float(np.median(both)) / 0.002, 4),
    }


def _hold(
    pose: np.ndarray, compensation: bool, series: list | None = None, seconds: float = HOLD_S
) -> dict:
    """The right arm held at ``pose`` for ``seconds`` (the left arm at its own home, where
    the twin starts it: a right-arm pose need not be inside the left arm's mirrored ranges)."""
    twin = Twin(TwinConfig(), model=load_robot_model(ROBOT))
    twin.data.qpos[arm_qpos_indices(twin.model, Arm.RIGHT)] = pose
    twin.data.qvel[:] = 0.0
    mujoco.mj_forward(twin.model, twin.data)
    cfg = openarm_config(robot=ROBOT, damiao=DamiaoOptions(gravity_compensation=compensation))
    cfg = dataclasses.replace(cfg, owner=dataclasses.replace(cfg.owner, tracking_error_rad=1.0))
    with make_closed_loop(cfg, twin=twin) as lp:
        q0 = lp.measured(Arm.RIGHT)
        worst = 0.0
        for _ in range(max(1, int(round(seconds / 0.01)))):
            lp.run_for(0.01)
            dev = lp.measured(Arm.RIGHT) - q0
            worst = max(worst, float(np.abs(dev).max()))
            if series is not None:
                series.append((lp.time, dev))
        final = np.abs(lp.measured(Arm.RIGHT) - q0)
        fault = lp.drivers[Arm.RIGHT].owner.fault
        ff = lp.drivers[Arm.RIGHT].transport.last_feedforward_nm
    return {
        "max_error_rad": round(worst, 5),
        "final_error_rad": round(float(final.max()), 5),
        "final_per_joint_rad": [round(float(x), 5) for x in final],
        "feedforward_nm": [round(float(x), 3) for x in ff],
        "owner_fault": fault.value if fault else None,
    }


def holding(plot_path: Path | None = None, seconds: float = HOLD_S) -> dict:
    out, traces = {}, {}
    for name, q in poses(load_robot_model(ROBOT)).items():
        on, off = [], []
        out[name] = {
            "pose_rad": [round(float(x), 5) for x in q],
            "with_compensation": _hold(q, True, on, seconds),
            "without_compensation": _hold(q, False, off, seconds),
        }
        traces[name] = (on, off)
    if plot_path is not None:
        out["plot"] = str(_plot(traces, plot_path))
    return out


def _plot(traces: dict, path: Path) -> Path:
    """Right-arm joint deviation from the start pose, with vs without compensation (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(traces), figsize=(12, 3.6), sharey=True)
    for ax, (name, (on, off)) in zip(axes, traces.items(), strict=True):
        for series, style, label in ((off, "-", "compensation off"), (on, "--", "compensation on")):
            t = np.array([x[0] for x in series])
            dev = np.array([x[1] for x in series])
            for j in range(7):
                ax.plot(
                    t - t[0],
                    dev[:, j],
                    style,
                    lw=1.2,
                    color=f"C{j}",
                    label=f"j{j + 1}" if style == "-" else None,
                )
            ax.plot([], [], style, color="k", label=label)
        ax.set_title(name)
        ax.set_xlabel("simulated time [s]")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("joint deviation from start [rad]")
    axes[-1].legend(fontsize=7, ncol=2, loc="lower right")
    fig.suptitle(
        "Damiao MIT drives holding under gravity (OpenArm kp/kd), RNEA feed-forward "
        "on vs off - simulated"
    )
    fig.tight_layout()
    save_png(fig, path, dpi=90)
    return path


def _tracking(robot: str, duration: float | None = None) -> dict:
    """``robot``'s demo (from its own home), the first ``duration`` s of it (None: all)."""
    sc = dataclasses.replace(demo_scenario(robot), cameras=[])
    if duration is not None:
        keep = [k for k in sc.keyframes if k.t <= duration]
        sc = dataclasses.replace(sc, duration=duration, keyframes=keep)
    res = run_scenario(sc, record=False, progress=False)
    err = np.abs(res.commanded["right"] - res.measured["right"])
    return {
        "max_error_rad": round(float(err.max()), 5),
        "rms_error_rad": round(float(np.sqrt((err**2).mean())), 5),
        "per_joint_max_rad": [round(float(x), 5) for x in err.max(axis=0)],
        "owner_fault": res.pipeline["right"]["owner_fault"],
        "samples_published": res.pipeline["right"]["samples_published"],
    }


TRACKING_ROBOTS = {"amber_position_drives_rob": DEFAULT_ROBOT, "damiao_mit_drives_openarm": ROBOT}


def tracking(duration: float | None = None) -> dict:
    out = {
        "scenario": "each robot's demo (both arms reach and wave from its home, 6.5 s; right "
        "arm reported)",
    }
    for key, robot in TRACKING_ROBOTS.items():
        out[key] = _tracking(robot, duration)
    return out


def damiao_loop_rtf(seconds: float = LOOP_S) -> tuple[float, float]:
    """(simulated s per CPU s of the whole Damiao loop on OpenArm v2, both arms streaming 60 Hz
    waves; the same of bare ``mj_step`` on its model), over ``seconds`` simulated each."""
    with make_closed_loop(openarm_config(robot=ROBOT)) as lp:
        for k, arm in enumerate(Arm):
            lp.stream_targets(arm, wave_source(k, robot_home(lp, arm), *owner_bounds(lp, arm)), 60)
        lp.run_for(0.2)
        c0 = time.thread_time()
        lp.run_for(seconds)
        loop = seconds / (time.thread_time() - c0)
        m, d = lp.twin.model, lp.twin.data
        steps = int(round(seconds / m.opt.timestep))
        c0 = time.thread_time()
        for _ in range(steps):
            mujoco.mj_step(m, d)
        bare = seconds / (time.thread_time() - c0)
    return loop, bare


def loop_cost(seconds: float = LOOP_S, rounds: int = ROUNDS) -> dict:
    loop, bare = zip(*(damiao_loop_rtf(seconds) for _ in range(rounds)), strict=True)
    lo, b = float(np.median(loop)), float(np.median(bare))
    return {
        "what": "simulated s per CPU s: both arms streaming 60 Hz wave targets through 500 Hz "
        "owners, RNEA feed-forward, MIT codec, virtual buses, Damiao bank (1 kHz "
        "physics, one reply per frame)",
        "rounds": rounds,
        "simulated_s_per_round": seconds,
        "damiao_loop_rtf_median": round(lo, 2),
        "bare_mj_step_rtf_median": round(b, 2),
        "damiao_loop_cost_vs_bare": round(b / lo, 2),
        "damiao_loop_rtf_all": [round(x, 2) for x in loop],
        "bare_mj_step_rtf_all": [round(x, 2) for x in bare],
        "clock": "thread CPU time",
    }


@benchmark("damiao")
def run(
    samples: int = SAMPLES,
    hold_s: float = HOLD_S,
    demo_s: float | None = None,
    loop_s: float = LOOP_S,
    rounds: int = ROUNDS,
    plot_path: Path | None = None,
) -> dict:
    """The benchmark; the arguments shorten it (tests): host-cost samples, holding time [s],
    demo time [s] (None: the whole demo), loop-cost time [s] and rounds, the plot's path
    (None: ``out/bench/damiao_holding.png``)."""
    return {
        "gravity_compensation_rate_hz": 500.0,
        "host_cost_per_arm_per_tick": host_cost(samples),
        "holding_error_three_poses": holding(
            plot_path or OUT_DIR / "bench" / "damiao_holding.png", hold_s
        ),
        "wave_tracking_both_families": tracking(demo_s),
        "closed_loop_cost": loop_cost(loop_s, rounds),
    }
