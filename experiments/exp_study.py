"""Experiment ``study``: N seeded random reachable goal pairs for ROB's two arms.

Goals: per arm, home + N(0, 0.8 rad) per joint clipped to the limits, the pair free by
>= 10 mm (``rob_twin.experiments.goal_pairs``, shared with bench_planner). Figures: success rate,
planning time median/p95,
the smallest clearance over successful plans, the retimed states (samples and sub-steps)
within the margin before the repair step (first retimed path, the planner's own count),
and the delivered plans judged independently: coal on a freshly loaded model
(``rob_twin.experiments.judging``), every sample with three joint-space states between samples
(twice the planner's density) and every waypoint, against the margin less 0.1 mm.
Simulated: hardware_io false.
"""

from __future__ import annotations

import time

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from rob_twin.experiments.clearance_truth import true_min_clearance  # noqa: E402
from rob_twin.experiments.crossing_goals import ARMS, rob_home  # noqa: E402
from rob_twin.experiments.goal_pairs import SAMPLING, goal_pairs  # noqa: E402
from rob_twin.experiments.judging import FreshJudge, judge_factor, plan_states  # noqa: E402
from rob_twin.experiments.output import OUT_DIR, markdown_table, write_experiment  # noqa: E402
from rob_twin.experiments.registry import experiment  # noqa: E402
from rob_twin.planners.group import ArmGroup  # noqa: E402
from rob_twin.twin.render.figures import spread_hist  # noqa: E402


def figures(n_pairs: int = 50, seed: int = 0) -> tuple[dict, list[dict]]:
    m, home = rob_home()
    g = ArmGroup(m, ARMS)
    g.set_qpos(home)
    judge = FreshJudge()
    threshold = g.config.collision.margin_m - 1e-4
    rows, statuses = [], {}
    for i, goals in enumerate(goal_pairs(g, n_pairs, np.random.default_rng(seed))):
        t0 = time.perf_counter()
        r = g.plan(goals, seed=seed + i)
        dt = time.perf_counter() - t0
        statuses[r.status.value] = statuses.get(r.status.value, 0) + 1
        row = {"pair": i, "status": r.status.value, "time_ms": round(dt * 1e3, 1)}
        if r.ok:
            p = r.plan
            v = judge.verdict(
                plan_states(g.reference_qpos, g.checker.arm_qpos, p, g.config.substeps), threshold
            )
            true_min, _ = true_min_clearance(g, p)
            row.update(
                clearance_m=round(p.min_clearance.distance_m, 5),
                repairs=p.repairs,
                colliding_before=p.colliding_before_repair,
                colliding_after=v["colliding_states"],
                judged_states=v["judged_states"],
                coal_clearance_m=round(v["min_clearance_m"], 5),
                coal_pair=v["min_clearance_pair"],
                certified_m=round(p.certificate.certified_min_m, 5),
                true_m=round(true_min, 5),
            )
        rows.append(row)
    ok = [r for r in rows if r["status"] == "success"]
    t = np.array([r["time_ms"] for r in rows])
    fig = {
        "pairs": n_pairs,
        "seed": seed,
        "success": len(ok),
        "success_rate": round(len(ok) / n_pairs, 3),
        "statuses": statuses,
        "plan_time_ms_median": round(float(np.median(t)), 1),
        "plan_time_ms_p95": round(float(np.percentile(t, 95)), 1),
        "min_clearance_m": round(min(r["clearance_m"] for r in ok), 5) if ok else None,
        "colliding_retimed_before_repair": sum(r["colliding_before"] for r in ok),
        "colliding_samples_after_repair": sum(r["colliding_after"] for r in ok),
        "judged_states_after_repair": sum(r["judged_states"] for r in ok),
        "coal_min_clearance_m": round(min(r["coal_clearance_m"] for r in ok), 5) if ok else None,
        "judge_density_per_interval": judge_factor(g.config.substeps),
        "plans_repaired": sum(1 for r in ok if r["repairs"] > 0),
        "certified_min_m": round(min(r["certified_m"] for r in ok), 5) if ok else None,
        "true_min_m": round(min(r["true_m"] for r in ok), 5) if ok else None,
        "certified_over_true_median": round(
            float(np.median([r["certified_m"] / r["true_m"] for r in ok if r["true_m"] > 0])), 3
        )
        if ok
        else None,
        "true_judge": "coal every 1 ms along the samples' interpolation, "
        "capped at the 20 mm horizon",
        "goal_sampling": SAMPLING,
        "counting_note": "before: retimed samples and sub-steps within 5 mm "
        "on the first retimed path "
        "(the planner's own count); after: delivered plans judged by coal on a fresh model "
        "(samples, 3 states between consecutive samples, waypoints) below 4.9 mm",
    }
    return fig, rows


@experiment("study")
def run(seed: int = 0, n_pairs: int = 50) -> dict:
    fig, rows = figures(n_pairs, seed)
    png = OUT_DIR / "experiments" / "study" / "plan_times.png"
    png.parent.mkdir(parents=True, exist_ok=True)
    f, ax = plt.subplots(figsize=(6, 3.5))
    log = spread_hist(ax, [[r["time_ms"] for r in rows if r["time_ms"] is not None]], bins=20)
    ax.set_xlabel(f"plan + retime + check time [ms]{' (log scale)' if log else ''} (simulated)")
    ax.set_ylabel("goal pairs")
    f.tight_layout()
    f.savefig(png, dpi=100)
    plt.close(f)
    fig["plot"] = str(png)
    table = markdown_table(
        rows,
        [
            "pair",
            "status",
            "time_ms",
            "clearance_m",
            "certified_m",
            "true_m",
            "repairs",
            "colliding_before",
            "colliding_after",
            "judged_states",
            "coal_clearance_m",
            "coal_pair",
        ],
    )
    return write_experiment("study", fig, table + "\n![times](plan_times.png)\n")
