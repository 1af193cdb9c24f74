"""Seeded plan requests on OpenArm v2's published bimanual MJCF, as shipped (simulated).

The model is ``openarm-mujoco``'s ``v2/openarm_bimanual.xml``, loaded raw: no exclusion, no
edit. ArmGroup plans both arms (joints ``openarm_{right,left}_joint1..7``; the fingers are
not planned and stay closed at ``qpos0``) to seeded goal pairs (``goal_pairs``), every plan
must come back certified, and each delivered plan is re-checked every 1 ms by the dense coal
judge (``rob_twin.experiments.dense_clearance``) against its certificate.

Goals are sampled free by ``MIN_GOAL_CLEARANCE_M`` (8 mm, not ROB's 10 mm): OpenArm v2's
closed gripper keeps two of its own pads a constant 8.49 mm apart (a checked pair no arm
joint moves), so no state of this model is 10 mm free.

    python -m rob_twin.experiments.openarm_v2_plans --requests 40 --seed 0
"""

from __future__ import annotations

import argparse
import statistics
import time

import mujoco
import numpy as np
from rob_twin.experiments.dense_clearance import check_plan, for_group
from rob_twin.experiments.goal_pairs import goal_pairs
from rob_twin.experiments.output import OUT_DIR, write_json
from rob_twin.planners.geom_pairs import ADJACENT_WORLD_PARENT, RIGID_AT_REFERENCE
from rob_twin.planners.group import ArmGroup

ARMS = {side: [f"openarm_{side}_joint{i}" for i in range(1, 8)] for side in ("right", "left")}
MIN_GOAL_CLEARANCE_M = 0.008  # goal pairs are free by this [m] (see the module)
TIME_BUDGET_S = 60.0  # per plan request [s]


def load_openarm_v2() -> mujoco.MjModel:
    """OpenArm v2's bimanual model from the installed ``openarm-mujoco`` package, unedited."""
    import openarm_mujoco.v2 as v2

    return mujoco.MjModel.from_xml_path(str(v2.openarm_bimanual_xml()))


def openarm_v2_group() -> ArmGroup:
    """ArmGroup of OpenArm v2's two arms, default configuration, reference state ``qpos0``."""
    return ArmGroup(load_openarm_v2(), ARMS)


def run(requests: int, seed: int = 0, dense: bool = True) -> dict:
    """Plan ``requests`` seeded goal pairs (planner seed = request index) and re-check each
    delivered plan densely. Returns per-request rows and the summary figures (simulated)."""
    group = openarm_v2_group()
    at_start = group.clearance({a: group.arm_q(a) for a in group.arm_names})
    if at_start.distance_m < MIN_GOAL_CLEARANCE_M:  # goal sampling could never end
        return {
            "requests": requests,
            "success": 0,
            "certified": 0,
            "start_clearance_m": at_start.distance_m,
            "start_pair": str(at_start.pair),
            "rows": [],
        }
    pairs = goal_pairs(
        group, requests, np.random.default_rng(seed), min_clearance_m=MIN_GOAL_CLEARANCE_M
    )
    rows, judge = [], None
    for i, goals in enumerate(pairs):
        t0 = time.perf_counter()
        res = group.plan(goals, seed=i, time_budget_s=TIME_BUDGET_S)
        row = {
            "request": i,
            "status": res.status.value,
            "plan_s": time.perf_counter() - t0,
            "reason": "" if res.ok else res.reason,
        }
        if res.ok:
            cert = res.plan.certificate
            row.update(certified=bool(cert.certified), certified_min_m=cert.certified_min_m)
            if dense:
                judge = judge or for_group(group, res.plan.moving)
                checked = check_plan(judge, res.plan)
                row.update(
                    dense_min_m=checked.true_min_m,
                    dense_counterexamples=len(checked.counterexamples),
                )
        rows.append(row)
    times = [r["plan_s"] for r in rows]
    return {
        "model": "openarm-mujoco v2/openarm_bimanual.xml (unedited)",
        "requests": requests,
        "seed": seed,
        "min_goal_clearance_m": MIN_GOAL_CLEARANCE_M,
        "success": sum(r["status"] == "success" for r in rows),
        "certified": sum(bool(r.get("certified")) for r in rows),
        "dense_counterexamples": sum(r.get("dense_counterexamples", 0) for r in rows),
        "dense_min_m": min((r["dense_min_m"] for r in rows if "dense_min_m" in r), default=None),
        "median_plan_s": statistics.median(times) if times else None,
        "max_plan_s": max(times, default=None),
        "exempt_by_the_general_rules": [
            {
                "pair": f"{a.name1} vs {a.name2}",
                "reason": a.reason,
                "at_reference_m": a.reference_distance_m,
            }
            for a in group.checker.pairs.allowed
            if a.reason in (ADJACENT_WORLD_PARENT, RIGID_AT_REFERENCE)
        ],
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    result = run(args.requests, args.seed)
    data = write_json(OUT_DIR / "bench" / "openarm_v2_plans.json", result)
    print(
        f"{data['success']}/{args.requests} success, {data['certified']} certified, "
        f"{data['dense_counterexamples']} dense counterexamples, median plan "
        f"{data['median_plan_s']:.3f} s (simulated; hardware_io: false)"
    )
    return data


if __name__ == "__main__":
    main()
