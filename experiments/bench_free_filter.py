"""Benchmark ``free-filter``: the conservative free-space filter in front of MuJoCo
(``rob_twin.planners.free_filter``): is it sound, how much does it prove, what does a filtered
state cost, and does it speed the planner up.

- property: ``FF_STATES`` (default 10^5) uniform random states of both arms per robot (ROB at
  home, OpenArm v2, generated robot seed 3, and Baxter in MotionBenchMaker's first easy
  bookshelf when the ``vamp-planner`` sdist is cached), at margins 0 and 5 mm: the share the
  filter proves free, the share MuJoCo's exact check calls free (the first 5,000), and every
  proven state's checked pairs measured by ``mj_geomDistance`` (``exact_violations``): the
  pairs found within the margin must be 0;
- cost: the filter's time per state amortised over batches of 16 to 1,024 states (its compiled
  kernel where numba imports, and its numpy path), beside ``CheckSession.is_free`` (one
  MuJoCo ``mj_kinematics`` + ``mj_collision``) on the same states; the property rows also
  give the kernel's and the numpy path's time and whether they prove the same states (the
  first 8,192), the filter's build time (its joint-space distance tables) and table count;
- planner: the hard ROB set (``rob_twin.experiments.hard_problems``), every problem planned
  with ``GroupConfig.free_filter`` off and on (same seed, interleaved): plans bit-identical,
  median and p95 of the request time, search and shortcut stage medians, the share of the
  search's states the filter proved.

Simulated; the 2-core machine is shared, so per-state times are ranges and the ratios taken
in the same run are what count. Units: seconds, metres.
"""

from __future__ import annotations

import os
import time
import warnings
from dataclasses import replace
from pathlib import Path
from tempfile import TemporaryDirectory

import numpy as np
from rob_twin.experiments.registry import benchmark
from rob_twin.models.names import ROB
from rob_twin.planners.collision import CollisionChecker
from rob_twin.planners.free_filter import exact_violations
from rob_twin.planners.group import ArmGroup

BATCHES = (16, 64, 256, 1024)
EXACT_SAMPLE = 5000
NUMPY_SAMPLE = 8192  # states timed on the numpy path beside the kernel


def _groups(folder: Path) -> dict[str, ArmGroup]:
    from rob_twin.experiments import mbm_loader as mbm
    from rob_twin.experiments import robot_factory as F
    from rob_twin.models.loading import keyframe_state
    from rob_twin.models.names import group_arms
    from rob_twin.models.robot_model import load_robot_model

    seven = {a: [f"{a}/j{k}" for k in range(1, 8)] for a in ("right", "left")}
    out = {}
    m, home = keyframe_state()
    out[ROB] = ArmGroup(m, group_arms())
    out[ROB].set_qpos(home)
    m = load_robot_model("openarm")
    out["openarm"] = ArmGroup(m, seven)
    out["openarm"].set_qpos(m.key("home").qpos)
    robot = F.generate_robot(folder / "gen3", 3)
    m = load_robot_model(robot.robot_file)
    out["generated_seed3"] = ArmGroup(m, robot.canonical_joints)
    out["generated_seed3"].set_qpos(m.key("home").qpos)
    if mbm.cached_sdist() is not None:
        problem = mbm.load_problem("easy", 1, mbm.baxter_dir())
        m = mbm.problem_model(problem)
        out["baxter_bookshelf_easy_0001"] = ArmGroup(m, seven)
        out["baxter_bookshelf_easy_0001"].set_qpos(m.key("home").qpos)
    return out


def _states(group: ArmGroup, n: int, seed: int) -> np.ndarray:
    lo = np.concatenate([group.joint_limits(a)[0] for a in group.arm_names])
    hi = np.concatenate([group.joint_limits(a)[1] for a in group.arm_names])
    return np.random.default_rng(seed).uniform(lo, hi, (n, lo.size))


def property_rows(group: ArmGroup, n: int, seed: int = 2) -> dict:
    out = {}
    qs = _states(group, n, seed)
    for margin in (0.0, 0.005):
        cfg = replace(group.checker.config, margin_m=margin, horizon_m=margin)
        checker = CollisionChecker(group.model, group.checker.arm_joints, cfg)
        s = checker.session(group.arm_names, group.reference_qpos)
        t = time.perf_counter()
        flt = checker.free_filter(s)
        build_s = time.perf_counter() - t
        s.prove_free(qs[:1])  # a first call compiles (or loads) the kernel
        t = time.perf_counter()
        proven = np.concatenate([s.prove_free(qs[k : k + 1024]) for k in range(0, n, 1024)])
        filter_s = time.perf_counter() - t
        head = min(n, NUMPY_SAMPLE)
        t = time.perf_counter()
        reference = np.concatenate(
            [flt.proven_free_numpy(qs[k : k + 1024]) for k in range(0, head, 1024)]
        )
        numpy_s = time.perf_counter() - t
        exact = np.array([s.is_free(q) for q in qs[:EXACT_SAMPLE]])
        t = time.perf_counter()
        bad, smallest = exact_violations(
            checker.source_model, s.reference_qpos, s.index, s.checked, margin, qs[proven]
        )
        out[f"margin_{margin * 1e3:g}mm"] = {
            "states": n,
            "proven_free": int(proven.sum()),
            "proven_share": round(float(proven.mean()), 4),
            "exact_free_share_first_5000": round(float(exact.mean()), 4),
            "proven_share_of_exact_free_first_5000": (
                round(float(proven[:EXACT_SAMPLE][exact].mean()), 4) if exact.any() else None
            ),
            "pairs_within_margin_of_proven_states": bad,
            "smallest_measured_distance_m": None if smallest == float("inf") else smallest,
            "judge_s": round(time.perf_counter() - t, 1),
            "filter_us_per_state_batch_1024": round(filter_s / n * 1e6, 2),
            "numpy_path_us_per_state_batch_1024": round(numpy_s / head * 1e6, 2),
            "numpy_path_same_answers_first_8192": bool(np.array_equal(reference, proven[:head])),
            "kernel": flt.kernel is not None,
            "tables": len(flt.tab_off),
            "build_s": round(build_s, 2),
        }
    return out


def cost_rows(group: ArmGroup, seed: int = 4) -> dict:
    s = group.checker.session(group.arm_names, group.reference_qpos)
    q0 = np.concatenate([group.arm_q(a) for a in group.arm_names])
    qs = q0 + np.random.default_rng(seed).normal(0.0, 0.3, (4096, q0.size))
    lo = np.concatenate([group.joint_limits(a)[0] for a in group.arm_names])
    hi = np.concatenate([group.joint_limits(a)[1] for a in group.arm_names])
    qs = np.clip(qs, lo, hi)
    s.prove_free(qs[:16])  # builds the filter (and compiles or loads the kernel)
    flt = group.checker.free_filter(s)
    t = time.perf_counter()
    for q in qs:
        s.is_free(q)
    mujoco_us = (time.perf_counter() - t) / len(qs) * 1e6
    out = {"mujoco_is_free_us": round(mujoco_us, 2), "states": len(qs)}
    for b in BATCHES:
        t = time.perf_counter()
        proven = np.concatenate([s.prove_free(qs[k : k + b]) for k in range(0, len(qs), b)])
        us = (time.perf_counter() - t) / len(qs) * 1e6
        t = time.perf_counter()
        for k in range(0, len(qs), b):
            flt.proven_free_numpy(qs[k : k + b])
        numpy_us = (time.perf_counter() - t) / len(qs) * 1e6
        out[f"batch_{b}"] = {
            "filter_us_per_state": round(us, 2),
            "vs_mujoco": round(us / mujoco_us, 2),
            "numpy_path_us_per_state": round(numpy_us, 2),
        }
    out["proven_share"] = round(float(proven.mean()), 3)
    out["states_drawn"] = "home + N(0, 0.3 rad) per joint, clipped to the limits"
    return out


def planner_rows(seeds: tuple[int, ...] = (0,)) -> dict:
    from rob_twin.experiments.hard_problems import groups, load, place_start

    plain = groups()[ROB]
    ref = plain.reference_qpos.copy()
    arms = {a: plain.joint_names(a) for a in plain.arm_names}
    filtered = ArmGroup(plain.model, arms, replace(plain.config, free_filter=True))
    problems = load(ROB)
    t_off, t_on, same, stages = [], [], 0, {"off": [], "on": []}
    for rnd in seeds:
        for i, p in enumerate(problems):
            res = {}
            for key, g, acc in (("off", plain, t_off), ("on", filtered, t_on)):
                place_start(g, ref, p.start)
                t = time.perf_counter()
                r = g.plan(p.goal, seed=i + 1000 * rnd)
                acc.append(time.perf_counter() - t)
                res[key] = r
                stages[key].append(r.stage_times_s)
            a, b = res["off"], res["on"]
            same += bool(
                a.status == b.status
                and (
                    not a.ok
                    or (
                        np.array_equal(a.plan.waypoints, b.plan.waypoints)
                        and np.array_equal(a.plan.t, b.plan.t)
                        and all(
                            np.array_equal(a.plan.arms[k].q, b.plan.arms[k].q) for k in a.plan.arms
                        )
                    )
                )
            )
    flt = [f for f in filtered.padded._filters.values() if f is not None]
    asked = sum(f.states for f in flt)

    def med(key, stage):
        return round(float(np.median([s.get(stage, 0.0) for s in stages[key]])) * 1e3, 2)

    return {
        "problems": len(problems) * len(seeds),
        "identical_plans": same,
        "off_ms": {
            "median": round(float(np.median(t_off)) * 1e3, 1),
            "p95": round(float(np.percentile(t_off, 95)) * 1e3, 1),
        },
        "on_ms": {
            "median": round(float(np.median(t_on)) * 1e3, 1),
            "p95": round(float(np.percentile(t_on, 95)) * 1e3, 1),
        },
        "speedup_median": round(float(np.median(t_off) / np.median(t_on)), 3),
        "stage_median_ms": {
            k: {st: med(k, st) for st in ("search", "shortcut", "total")} for k in ("off", "on")
        },
        "padded_search_states_asked": asked,
        "padded_search_states_proven": sum(f.proven for f in flt),
        "note": "on = GroupConfig(free_filter=True): a tree edge's interior states from "
        "search.EDGE_PROVE_MIN_STATES on (after its end's exact check), other motions' from "
        "search.PROVE_MIN_STATES on (after search.PROVE_HEAD exact checks), go to the filter",
    }


@benchmark("free-filter")
def run() -> dict:
    n = int(os.environ.get("FF_STATES", "100000"))
    with TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # weak-collider notes of the Baxter scene
        groups = _groups(Path(tmp))
        result = {
            "property": {name: property_rows(g, n) for name, g in groups.items()},
            "cost": {name: cost_rows(g) for name, g in groups.items()},
            "planner_hard_rob": planner_rows(),
        }
    result["aims"] = {
        "filtered_state_check_us_aim": 1.0,
        "hard_rob_median_ms_aim": 5.0,
    }
    result["command"] = f"FF_STATES={n} python -m rob_twin.experiments.bench free-filter"
    result["hardware_io"] = False
    result["simulated"] = True
    return result
