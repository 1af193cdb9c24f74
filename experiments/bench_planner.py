"""Benchmark: collision check cost vs bare mj_kinematics + mj_collision; dual-arm plan +
retime + check time on seeded random joint goal pairs, on the same pairs' TCP poses as
PoseGoal pairs, and on lockstep Cartesian requests (median/p95 [ms]); coal oracle
agreement per pair type; beside OMPL 2.0.1 (RRTConnect and KPIECE1 with the project's check and
with bare mj_collision, ``rob_twin.experiments.peer_compare``) on the hard ROB, hard stand and
study sets, interleaved per problem. Goal pairs come from ``rob_twin.experiments.goal_pairs``
(shared with the ``study`` experiment)."""

from __future__ import annotations

import time
from dataclasses import replace

import mujoco
import numpy as np
from rob_twin.experiments.goal_pairs import SAMPLING, cartesian_targets, goal_pairs, pose_targets
from rob_twin.experiments.registry import benchmark
from rob_twin.experiments.toppra_baseline import toppra_retime
from rob_twin.models.loading import keyframe_state, load_scene
from rob_twin.models.names import group_arms
from rob_twin.planners.cartesian import plan_cartesian
from rob_twin.planners.collision import CheckSession, CollisionChecker
from rob_twin.planners.group import ArmGroup
from rob_twin.planners.ik import default_config as ik_default
from rob_twin.planners.oracle import (
    Agreement,
    CoalOracle,
    agreement_on_configs,
    agreement_on_placements,
)
from rob_twin.planners.pose_goals import PoseGoal

ARMS = group_arms()


def _check_cost(m, home, n=20000) -> dict:
    ch = CollisionChecker(m, ARMS)
    s = ch.session(["right", "left"], home)
    q = np.concatenate([home[ch.arm_qpos[a]] for a in ARMS])
    return _cost_over(m, s, home, [q] * n, "home pose, both arms moving")


def _cost_over(m, session: CheckSession, home, qs, at: str) -> dict:
    """Mean cost [us] per configuration of ``qs`` (stacked, of the session's arms; the rest of
    the model at ``home``): MuJoCo's bare kinematics + collision, then the session's check."""
    d = mujoco.MjData(m)
    d.qpos[:] = home
    index = session.index
    t0 = time.perf_counter()
    for q in qs:
        d.qpos[index] = q
        mujoco.mj_kinematics(m, d)
        mujoco.mj_collision(m, d)
    bare = (time.perf_counter() - t0) / len(qs)
    t0 = time.perf_counter()
    for q in qs:
        session.is_free(q)
    check = (time.perf_counter() - t0) / len(qs)
    return {
        "bare_kinematics_collision_us": round(bare * 1e6, 2),
        "check_us": round(check * 1e6, 2),
        "check_vs_bare": round(check / bare, 3),
        "at": at,
    }


def _times(times_s: list[float], prefix: str) -> dict:
    t = np.array(times_s) * 1e3
    if t.size == 0:
        return {f"{prefix}_ms_median": None, f"{prefix}_ms_p95": None}
    return {
        f"{prefix}_ms_median": round(float(np.median(t)), 1),
        f"{prefix}_ms_p95": round(float(np.percentile(t, 95)), 1),
    }


def _group(m, home) -> ArmGroup:
    g = ArmGroup(m, ARMS)
    g.set_qpos(home)
    return g


def _study(m, home, n_pairs=30, seed=0) -> dict:
    """Joint goal pairs: plan + retime + check time (all requests) and outcomes."""
    g = _group(m, home)
    times, clearances, statuses, versus = [], [], {}, []
    for i, goals in enumerate(goal_pairs(g, n_pairs, np.random.default_rng(seed))):
        t0 = time.perf_counter()
        r = g.plan(goals, seed=i)
        times.append(time.perf_counter() - t0)
        statuses[r.status.value] = statuses.get(r.status.value, 0) + 1
        if r.ok:
            clearances.append(r.plan.min_clearance.distance_m)
            tp = toppra_retime(r.plan.waypoints, g.config.velocity, g.config.acceleration)
            versus.append((r.plan.duration_s, tp))
    return {
        "pairs": n_pairs,
        "success": len(clearances),
        "statuses": statuses,
        **_times(times, "plan_retime_check"),
        "min_clearance_m_min": round(float(min(clearances)), 4) if clearances else None,
        "goal_sampling": SAMPLING,
        "retiming_vs_toppra": _versus(versus, g.config.jerk),
    }


def _versus(pairs: list, jerk_limit: float) -> dict:
    """Our jerk-limited retiming next to TOPP-RA on the same waypoint paths."""
    if not pairs:
        return {}
    ratio = [tp["duration_s"] / ours for ours, tp in pairs]
    return {
        "plans": len(pairs),
        "toppra_duration_vs_ours_median": round(float(np.median(ratio)), 3),
        "toppra_max_discrete_jerk": round(max(tp["max_discrete_jerk"] for _, tp in pairs), 1),
        "jerk_limit": jerk_limit,
        "toppra_max_deviation_from_checked_path_rad": float(
            max(tp["max_deviation_from_checked_path_rad"] for _, tp in pairs)
        ),
        "note": "same waypoints, velocity and acceleration limits; TOPP-RA is faster but its "
        "bang-bang acceleration breaks the jerk limit (ours holds it by construction); "
        "with several waypoints its spline also leaves the collision-checked straight "
        "segments (tests/test_toppra_baseline.py), which these mostly one-segment "
        "plans do not show",
    }


def _pose_goals(m, home, n_pairs=20, seed=0) -> dict:
    """The TCP poses of seeded joint goal pairs as PoseGoal pairs (IK candidates, goal
    resampling, plan, retime, check): time of every request [ms]."""
    g = _group(m, home)
    targets = pose_targets(g, goal_pairs(g, n_pairs, np.random.default_rng(seed)))
    times, goal_stage, durations, statuses, resamples, solutions = [], [], [], {}, 0, []
    for i, pair in enumerate(targets):
        goals = {
            a: PoseGoal(t, ik_config=replace(ik_default(), rng_seed=i)) for a, t in pair.items()
        }
        t0 = time.perf_counter()
        r = g.plan(goals, seed=i)
        times.append(time.perf_counter() - t0)
        goal_stage.append(r.stage_times_s.get("goals", 0.0))
        statuses[r.status.value] = statuses.get(r.status.value, 0) + 1
        solutions += [goal.calls["streamed"] for goal in goals.values()]
        if r.ok:
            resamples += r.plan.goal_resamples
            durations.append(r.plan.duration_s)
    return {
        "pairs": n_pairs,
        "success": statuses.get("success", 0),
        "statuses": statuses,
        **_times(times, "ik_plan_retime_check"),
        **_times(goal_stage, "goals_stage"),
        "path_duration_s_median": round(float(np.median(durations)), 3) if durations else None,
        "streamed_ik_solutions_per_arm_mean": round(float(np.mean(solutions)), 3),
        "goal_resample_rounds": resamples,
        "targets": "TCP poses of the joint goal pairs (" + SAMPLING + "), seed "
        f"{seed}; PoseGoal defaults (up to 4 candidates taken lazily, IK rng_seed = pair index)",
    }


def _cartesian(m, home, n=20, seed=0) -> dict:
    """Lockstep Cartesian requests from home: IK samples, spline time law, check."""
    g = _group(m, home)
    times, ok_times, statuses = [], [], {}
    for targets in cartesian_targets(g, n, np.random.default_rng(seed)):
        t0 = time.perf_counter()
        r = plan_cartesian(g, targets)
        dt = time.perf_counter() - t0
        times.append(dt)
        statuses[r.status.value] = statuses.get(r.status.value, 0) + 1
        if r.ok:
            ok_times.append(dt)
    return {
        "requests": n,
        "success": len(ok_times),
        "statuses": statuses,
        **_times(times, "all_requests"),
        **_times(ok_times, "successful"),
        "targets": "both TCPs from home, mirrored: forward 0..10 cm, outward -5..+5 cm, "
        f"up -5..+15 cm, turn 0..0.3 rad about z; seed {seed}",
    }


def _oracle(m, home, configs=300, placements=2000, seed=1) -> dict:
    ch = CollisionChecker(m, ARMS)
    s = ch.session(["right", "left"], home)
    ids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, j) for a in ARMS for j in ARMS[a]]
    rng = np.random.default_rng(seed)
    by_configs = Agreement(ch.config.margin_m, 1e-4)
    agreement_on_configs(
        s,
        CoalOracle(load_scene()),
        rng.uniform(m.jnt_range[ids, 0], m.jnt_range[ids, 1], (configs, len(ids))),
        by_configs,
    )
    by_placements = Agreement(ch.config.margin_m, 1e-4)
    agreement_on_placements(s, CoalOracle(load_scene()), placements, rng, by_placements)
    return {
        "random_configs": configs,
        "placements_per_type": placements,
        "on_configs": by_configs.as_dict(),
        "on_placements": by_placements.as_dict(),
    }


@benchmark("planner")
def run() -> dict:
    m, home = keyframe_state()
    return {
        "model": "models/rob/scene.xml",
        "collision_check": _check_cost(m, home),
        "collision_check_random": _check_cost_random(m, home),
        "dual_arm_study": _study(m, home),
        "versus_ompl": peer_sets(),
        "pose_goal_pairs": _pose_goals(m, home),
        "lockstep_cartesian": _cartesian(m, home),
        "oracle_agreement": _oracle(m, home),
        "hardware_io": False,
        "simulated": True,
    }


def peer_sets(per_set: int | None = None, seeds: tuple[int, ...] = (0, 1)) -> dict:
    """ArmGroup beside OMPL (``rob_twin.experiments.peer_compare``) on the hard ROB, hard stand
    and study sets: the first ``per_set`` problems of each (None: all), per seed round."""
    from rob_twin.experiments.hard_problems import groups, load
    from rob_twin.experiments.peer_compare import compare_set

    m, home = keyframe_state()
    study = _group(m, home)
    pairs = goal_pairs(study, 30, np.random.default_rng(0))
    hard = groups()
    sets = {
        f"hard_{name}": (g, [(p.start, p.goal, i) for i, p in enumerate(load(name))])
        for name, g in hard.items()
    }
    sets |= {
        "study": (study, [(None, goals, i) for i, goals in enumerate(pairs)]),
    }
    return {
        name: compare_set(group, requests[:per_set], seeds)
        for name, (group, requests) in sets.items()
    }


def _median(values: list[float]):
    return round(float(np.median(values)), 3) if values else None


def _check_cost_random(m, home, n=5000, seed=2) -> dict:
    """Check cost over uniformly random configurations of both arms (many near contacts)."""
    ch = CollisionChecker(m, ARMS)
    s = ch.session(["right", "left"], home)
    ids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, j) for a in ARMS for j in ARMS[a]]
    qs = np.random.default_rng(seed).uniform(
        m.jnt_range[ids, 0], m.jnt_range[ids, 1], (n, len(ids))
    )
    return _cost_over(
        m, s, home, qs, f"{n} uniformly random configurations of both arms (seed {seed})"
    )


@benchmark("planner_hard")
def run_hard() -> dict:
    """The check cost and the sets beside OMPL (the quick way to measure search)."""
    m, home = keyframe_state()
    return {
        "collision_check": _check_cost(m, home),
        "collision_check_random": _check_cost_random(m, home),
        "versus_ompl": peer_sets(),
        "hardware_io": False,
        "simulated": True,
    }


@benchmark("pose_goals")
def run_pose_goals() -> dict:
    """The planner benchmark's PoseGoal pairs alone (seconds: for iterating on goals/IK)."""
    m, home = keyframe_state()
    return {"model": "models/rob/scene.xml", "pose_goal_pairs": _pose_goals(m, home)}
