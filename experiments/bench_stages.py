"""Benchmark: where a plan's wall time goes, stage by stage, per problem set (simulated).

Problem sets: the study set (30 seeded joint goal pairs of ROB's two arms from home,
``rob_twin.experiments.goal_pairs``, plan seed = index, as the ``planner`` benchmark's study), the
frozen hard ROB set and the hard two-arm stand set (``rob_twin.experiments.hard_problems``).
Per set: median and p95 of the total plan time and of every stage [ms], the certify share (certify /
total) and check + certify share per plan, the final check's measured and proven samples,
certificate queries between samples, slowdowns, repairs, statuses. One untimed warm-up plan
per set first (caches of the group's pair geometry). The machine's load average is recorded
with the figures: on a shared machine they are ranges. Units: milliseconds, counts.
"""

from __future__ import annotations

import os
import time

import numpy as np
from rob_twin.experiments.hard_problems import place_start
from rob_twin.experiments.registry import benchmark

STAGES = ("goals", "search", "shortcut", "retime", "check", "certify")


def _stats(values: list[float], scale: float = 1e3, digits: int = 2) -> dict:
    v = np.asarray(values, float) * scale
    if v.size == 0:
        return {"median": None, "p95": None}
    return {
        "median": round(float(np.median(v)), digits),
        "p95": round(float(np.percentile(v, 95)), digits),
    }


def _run_set(group, requests) -> dict:
    """``requests``: (start by arm or None, goals by arm, seed); plans each from the
    group's reference with the start's arms set; returns the set's summary."""
    reference = group.reference_qpos.copy()

    def plan(start, goals, seed):
        place_start(group, reference, start)
        t0 = time.perf_counter()
        r = group.plan(goals, seed=seed)
        return r, time.perf_counter() - t0

    plan(*requests[0])  # warm-up, untimed
    totals, stages, shares, both = [], {s: [] for s in STAGES}, [], []
    statuses: dict[str, int] = {}
    measured = proven = samples = between = slowdowns = repairs = uncertified = 0
    for start, goals, seed in requests:
        r, wall = plan(start, goals, seed)
        statuses[r.status.value] = statuses.get(r.status.value, 0) + 1
        st = r.stage_times_s
        total = st.get("total", wall)
        totals.append(total)
        for s in STAGES:
            stages[s].append(st.get(s, 0.0))
        shares.append(st.get("certify", 0.0) / total if total > 0 else 0.0)
        both.append((st.get("check", 0.0) + st.get("certify", 0.0)) / total if total > 0 else 0.0)
        if r.ok:
            p, c = r.plan, r.plan.certificate
            samples += int(p.t.size)
            measured += int(getattr(c, "measured_samples", c.sample_queries))
            proven += int(getattr(p, "proven_samples", 0))
            between += int(c.n_extra_queries)
            slowdowns += int(getattr(p, "slowdowns", 0))
            repairs += int(p.repairs)
            uncertified += int(c.uncertified_attempts)
    group.set_qpos(reference)
    return {
        "requests": len(requests),
        "success": statuses.get("success", 0),
        "statuses": statuses,
        "total_ms": _stats(totals),
        "stage_ms": {s: _stats(v) for s, v in stages.items()},
        "certify_share": _stats(shares, 1.0, 3),
        "check_certify_share": _stats(both, 1.0, 3),
        "certify_share_of_summed_time": round(float(np.sum(stages["certify"]) / np.sum(totals)), 3),
        "successful_plans": {
            "samples": samples,
            "samples_measured": measured,
            "samples_proven_free": proven,
            "certificate_queries_between_samples": between,
            "slowdowns": slowdowns,
            "segment_repairs": repairs,
            "uncertified_attempts": uncertified,
        },
    }


def _study_requests(group, n_pairs: int = 30, seed: int = 0) -> list:
    from rob_twin.experiments.goal_pairs import goal_pairs

    pairs = goal_pairs(group, n_pairs, np.random.default_rng(seed))
    return [(None, goals, i) for i, goals in enumerate(pairs)]


def _hard_requests(name: str) -> list:
    from rob_twin.experiments.hard_problems import load

    return [(p.start, p.goal, i) for i, p in enumerate(load(name))]


def over_problem_sets(measure) -> dict:
    """``measure(group, requests)`` on the study set (ROB from home) and on each frozen hard
    set (``hard_rob``, ``hard_stand``), by set name."""
    from rob_twin.experiments.hard_problems import groups
    from rob_twin.models.loading import keyframe_state
    from rob_twin.models.names import group_arms
    from rob_twin.planners.group import ArmGroup

    m, home = keyframe_state()
    study = ArmGroup(m, group_arms())
    study.set_qpos(home)
    sets = {"study": measure(study, _study_requests(study))}
    for name, group in groups().items():
        sets[f"hard_{name}"] = measure(group, _hard_requests(name))
    return sets


@benchmark("planner-stages")
def run() -> dict:
    from rob_twin.planners.group_config import default_config

    load_before = os.getloadavg()
    sets = over_problem_sets(_run_set)
    cfg = default_config()
    return {
        "sets": sets,
        "config": {
            "clearance_horizon_m": cfg.clearance_horizon_m,
            "margin_m": cfg.collision.margin_m,
            "rate_hz": cfg.rate_hz,
            "max_slowdowns": getattr(cfg, "max_slowdowns", None),
            "slow_factor": getattr(cfg, "slow_factor", None),
        },
        "load_average_before_after": [
            [round(x, 2) for x in load_before],
            [round(x, 2) for x in os.getloadavg()],
        ],
        "note": "wall times of ArmGroup.plan stages (Plan.stage_times_s) on this machine; "
        "simulated planning only, no hardware",
        "hardware_io": False,
        "simulated": True,
    }
