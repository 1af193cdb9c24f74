"""Experiment ``study_hard``: the study over the frozen hard problems (the ``hard`` option of
the study, as its own name so the command line needs no new flag).

Each problem of ``experiments/data/hard_problems_rob.json`` (and ``..._stand.json``) starts
the group at the problem's start and plans to its goal; the straight motion collides, so
every plan needs the search. Figures per model: success, plan + retime + check time
median/p95, path duration median, smallest clearance; one row per problem. Simulated:
hardware_io false.
"""

from __future__ import annotations

import time

import numpy as np
from rob_twin.experiments.hard_problems import groups, load
from rob_twin.experiments.output import markdown_table, write_experiment
from rob_twin.experiments.registry import experiment


def figures(seed: int = 0) -> tuple[dict, list[dict]]:
    fig, rows = {}, []
    for name, group in groups().items():
        reference = group.reference_qpos.copy()
        times, durations, clearances, statuses = [], [], [], {}
        for i, p in enumerate(load(name)):
            group.set_qpos(reference)
            for a in group.arm_names:
                group.set_arm(a, p.start[a])
            t0 = time.perf_counter()
            r = group.plan(p.goal, seed=seed + i)
            dt = time.perf_counter() - t0
            times.append(dt * 1e3)
            statuses[r.status.value] = statuses.get(r.status.value, 0) + 1
            row = {
                "model": name,
                "problem": i,
                "kind": p.kind,
                "status": r.status.value,
                "time_ms": round(dt * 1e3, 1),
            }
            if r.ok:
                durations.append(r.plan.duration_s)
                clearances.append(r.plan.min_clearance.distance_m)
                row.update(
                    duration_s=round(r.plan.duration_s, 3),
                    clearance_m=round(r.plan.min_clearance.distance_m, 5),
                )
            rows.append(row)
        group.set_qpos(reference)
        t = np.array(times)
        fig[name] = {
            "problems": len(times),
            "success": len(durations),
            "statuses": statuses,
            "plan_time_ms_median": round(float(np.median(t)), 1),
            "plan_time_ms_p95": round(float(np.percentile(t, 95)), 1),
            "duration_s_median": round(float(np.median(durations)), 3) if durations else None,
            "min_clearance_m": round(min(clearances), 5) if clearances else None,
        }
    fig["seed"] = seed
    return fig, rows


@experiment("study_hard")
def run(seed: int = 0) -> dict:
    fig, rows = figures(seed)
    table = markdown_table(
        rows, ["model", "problem", "kind", "status", "time_ms", "duration_s", "clearance_m"]
    )
    return write_experiment("study_hard", fig, table)
