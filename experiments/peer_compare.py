"""ArmGroup beside OMPL on one problem set, interleaved per problem in this process.

A request is (start by arm or None for the group's reference, goals by arm, index). Per
seed and request: ArmGroup's ``plan`` (plan + retime + final check + certificate, planner
seed ``index + 1000 * seed round``), then every OMPL variant of ``VARIANTS``
(``rob_twin.experiments.ompl_peer``: plan + simplify + TOPP-RA + every 125 Hz sample
checked) from the same start to the same goal. One untimed warm-up of each first.

Figures per set: success, median and p95 of the wall time of a request [ms], the median
retimed path duration [s] and state checks per request, failure reasons, and the time
ratios OMPL / ours: ratio of the medians and median of the per-problem ratios, over all
problems (a failure counted at the time it took to fail) and over the problems both solved.
Everything is simulated (``hardware_io: false``); on a shared machine the figures are
ranges, the side-by-side ratios are what count.
"""

from __future__ import annotations

import os
import time

import numpy as np
from rob_twin.experiments import ompl_peer
from rob_twin.experiments.hard_problems import place_start
from rob_twin.experiments.ompl_peer import BareCheck, plan_ompl
from rob_twin.planners.group import ArmGroup

VARIANTS = (
    ("RRTConnect", "is_free"),
    ("KPIECE1", "is_free"),
    ("RRTConnect", "bare"),
    ("KPIECE1", "bare"),
)
CHECKS = {
    "is_free": "the project's CheckSession.is_free (5 mm margin)",
    "bare": "bare mj_kinematics + mj_collision on the checker's private model (5 mm margins): "
    "free when no contact is nearer than the margin",
}


def _ms(times_s: list[float]) -> dict:
    t = np.asarray(times_s, float) * 1e3
    if t.size == 0:
        return {"ms_median": None, "ms_p95": None}
    return {
        "ms_median": round(float(np.median(t)), 1),
        "ms_p95": round(float(np.percentile(t, 95)), 1),
    }


def _median(values: list[float], digits: int = 3):
    return round(float(np.median(values)), digits) if values else None


def _ratios(peer: list[float], ours: list[float], both: list[bool]) -> dict:
    p, o = np.asarray(peer), np.asarray(ours)
    b = np.asarray(both, bool)
    out = {
        "ratio_of_medians": round(float(np.median(p) / np.median(o)), 2),
        "median_of_ratios": round(float(np.median(p / o)), 2),
        "problems_both_solved": int(b.sum()),
    }
    if b.any():
        out["both_solved_ratio_of_medians"] = round(float(np.median(p[b]) / np.median(o[b])), 2)
        out["both_solved_median_of_ratios"] = round(float(np.median(p[b] / o[b])), 2)
    return out


def compare_set(
    group: ArmGroup,
    requests: list[tuple[dict | None, dict, int]],
    seeds: tuple[int, ...] = (0, 1),
    variants: tuple[tuple[str, str], ...] = VARIANTS,
) -> dict:
    """ArmGroup and the OMPL ``variants`` on ``requests``, once per seed round, interleaved.
    Without OMPL installed only ArmGroup is measured and ``peers`` says why."""
    missing = ompl_peer.missing_reason()
    if missing is not None:
        variants = ()
    moving = tuple(group.arm_names)
    lower = np.concatenate([group.joint_limits(a)[0] for a in moving])
    upper = np.concatenate([group.joint_limits(a)[1] for a in moving])
    reference = group.reference_qpos.copy()
    vel, acc = group.config.velocity, group.config.acceleration

    def setup(start):
        place_start(group, reference, start)
        return group.checker.session(moving, group.reference_qpos)

    def ours(start, goals, seed):
        setup(start)
        t0 = time.perf_counter()
        r = group.plan(goals, seed=seed)
        return r, time.perf_counter() - t0

    def peer(start, goals, planner, check, seed):
        session = setup(start)
        q0 = np.concatenate([group.arm_q(a) for a in moving])
        q1 = np.concatenate([goals[a] for a in moving])
        is_free = session.is_free if check == "is_free" else BareCheck(session)
        t0 = time.perf_counter()
        r = plan_ompl(is_free, q0, q1, lower, upper, vel, acc, planner, seed=seed)
        return r, time.perf_counter() - t0

    load_before = os.getloadavg()
    first = requests[0]
    ours(first[0], first[1], 0)  # warm-ups, untimed
    for planner, check in variants:
        peer(first[0], first[1], planner, check, 0)
    o_t, o_ok, o_dur = [], [], []
    p_t = {v: [] for v in variants}
    p_rows = {v: [] for v in variants}
    for rnd in seeds:
        for start, goals, index in requests:
            seed = index + 1000 * rnd
            r, dt = ours(start, goals, seed)
            o_t.append(dt)
            o_ok.append(bool(r.ok))
            o_dur.append(r.plan.duration_s if r.ok else None)
            for v in variants:
                pr, pdt = peer(start, goals, *v, seed)
                p_t[v].append(pdt)
                p_rows[v].append(pr)
    group.set_qpos(reference)
    load_after = os.getloadavg()
    out = {
        "problems": len(requests),
        "seed_rounds": list(seeds),
        "requests": len(o_t),
        "ours": {
            "success": int(sum(o_ok)),
            **_ms(o_t),
            "path_duration_s_median": _median([d for d in o_dur if d is not None]),
            "what": "ArmGroup.plan: search, shortcut, retime, final check, certificate",
        },
        "load_average_1min_before_after": [round(load_before[0], 2), round(load_after[0], 2)],
        "hardware_io": False,
        "simulated": True,
    }
    if missing is not None:
        out["peers"] = {"skipped": missing}
        return out
    peers = {}
    for v in variants:
        rows = p_rows[v]
        reasons: dict[str, int] = {}
        for row in rows:
            if not row.ok:
                key = "retimed sample collides" if "retimed sample" in row.reason else row.reason
                reasons[key] = reasons.get(key, 0) + 1
        both = [a and b.ok for a, b in zip(o_ok, rows, strict=True)]
        peers[f"ompl_{v[0]}_{v[1]}"] = {
            "planner": v[0],
            "check": CHECKS[v[1]],
            "success": sum(r.ok for r in rows),
            **_ms(p_t[v]),
            "path_duration_s_median": _median([r.duration_s for r in rows if r.ok]),
            "checks_median": _median([r.checks for r in rows], 1),
            "failures": reasons,
            "time_ompl_over_ours": _ratios(p_t[v], o_t, both),
        }
    out["peers"] = peers
    out["peer_stack"] = (
        f"OMPL {ompl_peer.OMPL_VERSION} SimpleSetup, stacked joint space, motions checked "
        f"every <= {ompl_peer.EDGE_STEP_RAD} rad, solve limit {ompl_peer.SOLVE_TIME_S} s, "
        "simplifySolution, TOPP-RA at ArmGroup's velocity and acceleration limits, every "
        f"{group.config.rate_hz:g} Hz sample checked with the same check"
    )
    return out
