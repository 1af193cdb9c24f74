"""Benchmark: collision check cost vs bare mj_kinematics + mj_collision, dual-arm plan +
retime + check time on seeded random goal pairs, and coal oracle agreement per pair type."""

from __future__ import annotations

import time

import mujoco
import numpy as np

from controllers.names import Arm, arm_joints
from experiments.registry import benchmark
from planners.collision import CollisionChecker
from planners.group import ArmGroup
from planners.oracle import Agreement, CoalOracle, agreement_on_configs, agreement_on_placements
from twin.model.loading import apply_home, load_scene

ARMS = {"right": list(arm_joints(Arm.RIGHT)), "left": list(arm_joints(Arm.LEFT))}


def _check_cost(m, home, n=20000) -> dict:
    ch = CollisionChecker(m, ARMS)
    s = ch.session(["right", "left"], home)
    q = np.concatenate([home[ch.arm_qpos[a]] for a in ARMS])
    d = mujoco.MjData(m)
    d.qpos[:] = home
    t0 = time.perf_counter()
    for _ in range(n):
        mujoco.mj_kinematics(m, d)
        mujoco.mj_collision(m, d)
    bare = (time.perf_counter() - t0) / n
    t0 = time.perf_counter()
    for _ in range(n):
        s.is_free(q)
    check = (time.perf_counter() - t0) / n
    return {"bare_kinematics_collision_us": round(bare * 1e6, 2), "check_us": round(check * 1e6, 2),
            "check_vs_bare": round(check / bare, 3), "at": "home pose, both arms moving"}


def _study(m, home, n_pairs=30, seed=0) -> dict:
    g = ArmGroup(m, ARMS)
    g.set_qpos(home)
    rng = np.random.default_rng(seed)
    times, ok, clearances, statuses = [], 0, [], {}
    for i in range(n_pairs):
        goals = {}
        for a in ARMS:
            lo, hi = g.joint_limits(a)
            while True:
                q = np.clip(g.arm_q(a) + rng.normal(0.0, 0.8, lo.size), lo, hi)
                if g.clearance({a: q}).distance_m >= 0.01:
                    break
            goals[a] = q
        t0 = time.perf_counter()
        r = g.plan(goals, seed=i)
        times.append(time.perf_counter() - t0)
        statuses[r.status.value] = statuses.get(r.status.value, 0) + 1
        if r.ok:
            ok += 1
            clearances.append(r.plan.min_clearance.distance_m)
    t = np.array(times) * 1e3
    return {"pairs": n_pairs, "success": ok, "statuses": statuses,
            "plan_retime_check_ms_median": round(float(np.median(t)), 1),
            "plan_retime_check_ms_p95": round(float(np.percentile(t, 95)), 1),
            "min_clearance_m_min": round(float(min(clearances)), 4) if clearances else None,
            "goal_sampling": "home + N(0, 0.8 rad) per joint, clipped, goal pair clearance >= 10 mm"}


def _oracle(m, home, configs=300, placements=2000, seed=1) -> dict:
    ch = CollisionChecker(m, ARMS)
    s = ch.session(["right", "left"], home)
    ids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, j) for a in ARMS for j in ARMS[a]]
    rng = np.random.default_rng(seed)
    by_configs = Agreement(ch.config.margin_m, 1e-4)
    agreement_on_configs(s, CoalOracle(load_scene()), rng.uniform(m.jnt_range[ids, 0], m.jnt_range[ids, 1],
                                                                  (configs, len(ids))), by_configs)
    by_placements = Agreement(ch.config.margin_m, 1e-4)
    agreement_on_placements(s, CoalOracle(load_scene()), placements, rng, by_placements)
    return {"random_configs": configs, "placements_per_type": placements,
            "on_configs": by_configs.as_dict(), "on_placements": by_placements.as_dict()}


@benchmark("planner")
def run() -> dict:
    m = load_scene()
    d = mujoco.MjData(m)
    apply_home(m, d)
    home = d.qpos.copy()
    return {"model": "models/rob/scene.xml", "collision_check": _check_cost(m, home),
            "dual_arm_study": _study(m, home), "oracle_agreement": _oracle(m, home)}
