"""Experiment ``sequential`` (seed 002): a crossing two-arm plan run one arm after the
other vs synchronized through the owners and the motor bank (simulated, hardware_io false).

The same dual-arm crossing as the ``crossing`` experiment: start and goals from
``rob_twin.experiments.crossing_goals`` (the hands swap sides in front of the chest; the straight
joint interpolation between them collides arm against arm). ArmGroup plans both arms
together (with limits inside the owners'). Then, through the closed loop with the
synchronized executor:

(a) sequential: the right arm runs its whole trajectory while the left holds at its
    start, then the left runs (how the peer's ROS layer ran multi-arm plans);
(b) synchronized: both arms from one shared start stamp.

Every published commanded state (both arms at the same 200 Hz owner tick) and one
joint-space state between consecutive ones (400 Hz, denser than the planner's own 250 Hz
check) is judged by coal on a freshly loaded model (``rob_twin.experiments.judging``; a state
collides when some judged pair penetrates). Writes result.json, report.md and
clearance.png under out/experiments/sequential/.
"""

from __future__ import annotations

import numpy as np
from rob_twin.experiments.crossing_goals import rob_crossing_goals, rob_crossing_start
from rob_twin.experiments.judging import JUDGE_HORIZON_M, FreshJudge
from rob_twin.experiments.output import OUT_DIR, markdown_table, write_experiment
from rob_twin.experiments.registry import experiment
from rob_twin.experiments.seed_spread import seed_spread
from rob_twin.models.loading import CROSSING_START_KEY, apply_keyframe, arm_qpos_indices
from rob_twin.models.names import Arm, group_arms
from rob_twin.planners.group import ArmGroup, GroupConfig
from rob_twin.planners.oracle import densify
from rob_twin.twin.render.figures import save_png
from rob_twin.twin.sim.closed_loop import ClosedLoop, twin_owner_config
from rob_twin.twin.sim.execution import execute_arrays, executed_states, plan_arrays
from rob_twin.twin.sim.twin import Twin, TwinConfig

ARMS = group_arms()
START = {a: tuple(rob_crossing_start()[a.value]) for a in Arm}  # [rad], shared with crossing
GOAL = {a: tuple(rob_crossing_goals()[a.value]) for a in Arm}
EXECUTED_DENSITY = 2  # judged states per published owner tick: 400 Hz vs the planner's 250 Hz


def planning_config() -> GroupConfig:
    """Plan limits inside the owners' (v 1.0, a 3.0, jerk 30): v 0.9, a 2.5, jerk 15,
    leaving Ruckig headroom to follow the moving target."""
    owner = twin_owner_config()
    cfg = GroupConfig(velocity=0.9, acceleration=2.5, jerk=15.0)
    assert cfg.velocity < min(owner.max_velocity) and cfg.acceleration < min(owner.max_acceleration)
    assert cfg.jerk < min(owner.max_jerk)
    return cfg


def crossing_loop(keyframe: str = CROSSING_START_KEY) -> ClosedLoop:
    """A closed loop with the arms at the model's ``keyframe`` (servos commanded there),
    settled 0.2 s."""
    tw = Twin(TwinConfig())
    apply_keyframe(tw.model, tw.data, keyframe)
    loop = ClosedLoop(twin=tw)
    loop.run_for(0.2)
    return loop


def plan_crossing(loop: ClosedLoop, seed: int = 0):
    group = ArmGroup.for_loop(loop, planning_config(), arms=ARMS)
    plan = group.plan({a.value: np.array(GOAL[a]) for a in Arm}, seed=seed).unwrap()
    return group, plan


def judged_states(model, reference: np.ndarray, states) -> np.ndarray:
    """Full-model states to judge: the reference qpos with both arms' commanded states written
    in, ``EXECUTED_DENSITY`` times as dense as published."""
    idx = {a: arm_qpos_indices(model, a) for a in Arm}
    stacked = densify(np.hstack([states[a] for a in Arm]), EXECUTED_DENSITY)
    out = np.repeat(reference[None, :], len(stacked), axis=0)
    out[:, idx[Arm.RIGHT]] = stacked[:, :7]
    out[:, idx[Arm.LEFT]] = stacked[:, 7:]
    return out


def run_sequential(plan):
    """Right's trajectory with left holding at start, then left's; returns stamps, states."""
    arrays = plan_arrays(plan)
    loop = crossing_loop()
    try:
        hold = {a: loop.commanded(a) for a in Arm}
        reports = [execute_arrays(loop, {arm: arrays[arm]}) for arm in (Arm.RIGHT, Arm.LEFT)]
        parts = []
        for rep in reports:
            stamps, states = executed_states(rep, hold)
            hold = {a: states[a][-1] for a in Arm}
            parts.append((stamps, states))
        stamps = np.concatenate([p[0] for p in parts])
        states = {a: np.vstack([p[1][a] for p in parts]) for a in Arm}
        return stamps, states, reports
    finally:
        loop.close()


def run_synchronized(plan):
    loop = crossing_loop()
    try:
        hold = {a: loop.commanded(a) for a in Arm}
        rep = execute_arrays(loop, plan_arrays(plan))
        stamps, states = executed_states(rep, hold)
        return stamps, states, rep
    finally:
        loop.close()


def _window(stamps, states, t0, t1):
    w = (stamps >= t0 - 1e-9) & (stamps <= t1 + 1e-9)
    return stamps[w], {a: s[w] for a, s in states.items()}


def _plot(path, series) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.5))
    for label, t, c in series:
        ax.plot(t, np.minimum(c, JUDGE_HORIZON_M) * 1e3, label=label)
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set_xlabel("time since the first planned sample [s] (simulated)")
    ax.set_ylabel(f"clearance [mm] (capped at {JUDGE_HORIZON_M * 1e3:.0f})")
    ax.set_title("Crossing plan: sequential vs synchronized execution (hardware_io: false)")
    ax.legend()
    fig.tight_layout()
    save_png(fig, path, dpi=110)


def run(seed: int = 0, write: bool = True, n_seeds: int = 1) -> dict:
    loop = crossing_loop()
    try:
        group, plan = plan_crossing(loop, seed)
        reference = loop.twin.data.qpos.copy()
        model = loop.twin.model
    finally:
        loop.close()
    judge = FreshJudge()
    start = np.concatenate([START[a] for a in Arm])
    goal = np.concatenate([GOAL[a] for a in Arm])
    straight = start + (goal - start) * np.linspace(0, 1, 120)[:, None]
    straight_full = judged_states(
        model, reference, {Arm.RIGHT: straight[:, :7], Arm.LEFT: straight[:, 7:]}
    )
    straight_hits = int((judge.clearances(straight_full[::EXECUTED_DENSITY])[0] < 0).sum())

    s_stamps, s_states, s_reps = run_sequential(plan)
    y_stamps, y_states, y_rep = run_synchronized(plan)
    s_t0 = s_reps[0].start_s
    s_stamps, s_states = _window(
        s_stamps, s_states, s_t0, s_reps[1].start_s + plan.duration_s + 0.05
    )
    y_stamps, y_states = _window(
        y_stamps, y_states, y_rep.start_s, y_rep.start_s + plan.duration_s + 0.05
    )
    s_clear = judge.clearances(judged_states(model, reference, s_states))[0]
    y_clear = judge.clearances(judged_states(model, reference, y_states))[0]
    result = {
        "plan_duration_s": plan.duration_s,
        "plan_min_clearance_m": plan.min_clearance.distance_m,
        "straight_interpolation_colliding_states": straight_hits,
        "straight_interpolation_states": len(straight),
        "judged_per_published_state": EXECUTED_DENSITY,
        "sequential_colliding_states": int((s_clear < 0).sum()),
        "sequential_states": int(s_clear.size),
        "sequential_colliding_published_states": int((s_clear[::EXECUTED_DENSITY] < 0).sum()),
        "sequential_published_states": int(s_stamps.size),
        "sequential_duration_s": float(s_stamps[-1] - s_stamps[0]),
        "sequential_min_clearance_m": float(s_clear.min()),
        "sequential_outcomes": [r.outcome.value for r in s_reps],
        "synchronized_colliding_states": int((y_clear < 0).sum()),
        "synchronized_states": int(y_clear.size),
        "synchronized_duration_s": float(y_stamps[-1] - y_stamps[0]),
        "synchronized_min_clearance_m": float(y_clear.min()),
        "synchronized_outcome": y_rep.outcome.value,
        "start_skew_s": y_rep.start_skew_s,
        "max_start_offset_s": y_rep.max_start_offset_s,
        "max_tracking_deviation_rad": y_rep.max_deviation_rad,
        "judge": "coal on a freshly loaded model (experiments/judging.py): every published 200 Hz "
        "state and one state between consecutive ones (400 Hz >= the planner's 250 Hz); "
        "colliding = distance < 0 m; clearances capped at the 5 cm horizon",
        "seed": seed,
    }
    if n_seeds > 1:
        result["seed_distribution"] = seed_distribution(range(seed, seed + n_seeds))
    if write:
        folder = OUT_DIR / "experiments" / "sequential"
        _plot(
            folder / "clearance.png",
            [
                (
                    "sequential (right, then left)",
                    s_stamps - s_stamps[0],
                    s_clear[::EXECUTED_DENSITY],
                ),
                (
                    "synchronized (one start stamp)",
                    y_stamps - y_stamps[0],
                    y_clear[::EXECUTED_DENSITY],
                ),
            ],
        )
        result["plot"] = str(folder / "clearance.png")
        rows = [
            {
                "execution": k,
                "colliding": result[f"{k}_colliding_states"],
                "states": result[f"{k}_states"],
                "min clearance [mm]": round(result[f"{k}_min_clearance_m"] * 1e3, 2),
                "duration [s]": round(result[f"{k}_duration_s"], 3),
            }
            for k in ("sequential", "synchronized")
        ]
        md = markdown_table(rows)
        if n_seeds > 1:
            d = result["seed_distribution"]["summary"]["sequential_colliding_fraction"]
            md += (
                f"\nsequential colliding fraction over {n_seeds} planner seeds: median "
                f"{d['median']} (range {d['min']} .. {d['max']})\n"
            )
        return write_experiment("sequential", result, md)
    return result


def seed_distribution(seeds: range) -> dict:
    """The seed-dependent figures over planner ``seeds`` (about 12 s each): the fraction of
    judged states in contact run one arm after the other, and synchronized; median and range."""
    per_seed = []
    for s in seeds:
        r = run(s, write=False)
        per_seed.append(
            {
                "seed": s,
                "sequential_colliding_fraction": r["sequential_colliding_states"]
                / r["sequential_states"],
                "synchronized_colliding_states": r["synchronized_colliding_states"],
                "synchronized_min_clearance_m": r["synchronized_min_clearance_m"],
            }
        )
    keys = (
        "sequential_colliding_fraction",
        "synchronized_colliding_states",
        "synchronized_min_clearance_m",
    )
    return {**seed_spread(seeds, per_seed, keys), "per_seed": per_seed}


@experiment("sequential")
def sequential(seed: int = 0, n_seeds: int = 1) -> dict:
    """The frozen example at planner ``seed``; with ``n_seeds`` > 1 also the distribution over
    planner seeds ``seed`` .. ``seed + n_seeds - 1`` (about 12 s per seed)."""
    return run(seed, n_seeds=n_seeds)
