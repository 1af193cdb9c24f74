"""Benchmark ``certificate``: soundness, bound validity, cost, tightness and completeness of
the per-pair clearance certificate every ``ArmGroup.plan`` returns (simulated).

- soundness: for every delivered plan, coal every 1 ms along the samples' linear
  interpolation (a motion inside the certificate's speed bound) must never find a
  clearance below the certified minimum (counterexamples must be 0). As many plans as
  fit in ``SOUNDNESS_BUDGET_S``; the count is reported.
- bound validity: >= 10^6 random configuration pairs (consecutive states of a random
  walk with mixed step sizes): every point of every arm geom (six points on its bounding
  sphere about its centre, and the centre) moves at most sum_j |dq_j| R_j(g) in the frame
  the pair's bound is stated in (world for arm-arm / arm-world / arm-body pairs; the
  common ancestor's frame for same-arm pairs). Violations must be 0.
- cost: certificate wall time as a share of planning time (stage ``certify`` over
  ``total``); the pair-distance recording inside the check is timed separately.
- tightness: certified minimum / true minimum (coal, 1 ms) over plans whose true
  minimum lies inside the measuring horizon (beyond it the certificate claims only the
  horizon), median and p5.
- completeness: of the plans whose true clearance is >= margin + 2 mm, the share
  certified on the first retimed path (no certificate-driven repair).
"""

from __future__ import annotations

import time

import mujoco
import numpy as np

from experiments.clearance_truth import true_min_clearance
from experiments.crossing_goals import ARMS, crossing_start_qpos, rob_crossing_goals, rob_home
from experiments.goal_pairs import SAMPLING, goal_pairs
from experiments.registry import benchmark
from planners.group import ArmGroup
from planners.oracle import CoalOracle
from planners.pair_certificate import joint_geom_radii

SOUNDNESS_BUDGET_S = 240.0
MAX_PLANS = 1000
VALIDITY_PAIRS = 1_000_000
COMPLETENESS_SLACK_M = 0.002


def _plans(seed: int = 0):
    """The crossing plan, then seeded random goal pairs (the study's sampling)."""
    model, start = crossing_start_qpos()
    g = ArmGroup(model, ARMS)
    g.set_qpos(start)
    yield "crossing", g, g.plan(rob_crossing_goals(), seed=seed)
    m, home = rob_home()
    g = ArmGroup(m, ARMS)
    g.set_qpos(home)
    rng = np.random.default_rng(seed)
    i = 0
    while True:
        for goals in goal_pairs(g, 50, rng):
            yield f"pair {i}", g, g.plan(goals, seed=seed + i)
            i += 1


def plan_figures(budget_s: float = SOUNDNESS_BUDGET_S, max_plans: int = MAX_PLANS) -> dict:
    started = time.perf_counter()
    oracle_by_group: dict[int, CoalOracle] = {}
    counter, rows, statuses = [], [], {}
    for name, g, r in _plans():
        statuses[r.status.value] = statuses.get(r.status.value, 0) + 1
        if r.ok:
            p, c = r.plan, r.plan.certificate
            oracle = oracle_by_group.setdefault(id(g), CoalOracle(g.model))
            true_min, _ = true_min_clearance(g, p, oracle)
            st = p.stage_times_s
            rows.append(
                {
                    "plan": name,
                    "certified_min_m": c.certified_min_m,
                    "true_min_m": true_min,
                    "horizon_m": c.horizon_m,
                    "certify_s": st.get("certify", 0.0),
                    "total_s": st["total"],
                    "check_s": st.get("check", 0.0),
                    "first_try": c.uncertified_attempts == 0,
                    "queries_between": c.n_extra_queries,
                    "samples": c.samples,
                    "samples_measured": c.sample_queries,
                }
            )
            if true_min < c.certified_min_m - 1e-7:
                counter.append(
                    {"plan": name, "true_min_m": true_min, "certified_min_m": c.certified_min_m}
                )
        done = sum(statuses.values())
        if done % 50 == 0:
            print(
                f"[bench certificate] {done} plans, {time.perf_counter() - started:.0f} s",
                flush=True,
            )
        if done >= max_plans or time.perf_counter() - started > budget_s:
            break
    share = np.array([r["certify_s"] / r["total_s"] for r in rows])
    inside = [r for r in rows if r["true_min_m"] < r["horizon_m"]]
    ratio = np.array([r["certified_min_m"] / r["true_min_m"] for r in inside])
    margin = 0.005
    eligible = [r for r in rows if r["true_min_m"] >= margin + COMPLETENESS_SLACK_M]
    return {
        "plans_attempted": sum(statuses.values()),
        "statuses": statuses,
        "plans_checked": len(rows),
        "goal_sampling": "the crossing plan, then " + SAMPLING,
        "soundness": {
            "counterexamples": len(counter),
            "examples": counter[:5],
            "judge": "coal every 1 ms along the samples' linear interpolation, every checked pair",
        },
        "cost": {
            "certify_share_median": round(float(np.median(share)), 4) if rows else None,
            "certify_share_p95": round(float(np.percentile(share, 95)), 4) if rows else None,
            "certify_share_of_total_time": round(
                sum(r["certify_s"] for r in rows) / max(sum(r["total_s"] for r in rows), 1e-12), 4
            ),
            "certify_ms_median": round(1e3 * float(np.median([r["certify_s"] for r in rows])), 2)
            if rows
            else None,
            "plan_ms_median": round(1e3 * float(np.median([r["total_s"] for r in rows])), 2)
            if rows
            else None,
            "note": "the check's pair-distance recording is inside the 'check' stage",
        },
        "tightness": {
            "plans": len(inside),
            "certified_over_true_median": round(float(np.median(ratio)), 3) if inside else None,
            "certified_over_true_p5": round(float(np.percentile(ratio, 5)), 3) if inside else None,
            "crossing": next(
                (
                    round(r["certified_min_m"] / r["true_min_m"], 3)
                    for r in rows
                    if r["plan"] == "crossing"
                ),
                None,
            ),
            "scope": "plans whose true minimum is inside the 20 mm measuring horizon",
        },
        "completeness": {
            "eligible_plans": len(eligible),
            "certified_first_try": sum(1 for r in eligible if r["first_try"]),
            "share": round(sum(1 for r in eligible if r["first_try"]) / len(eligible), 4)
            if eligible
            else None,
            "uncertified_failures": statuses.get("uncertified", 0),
            "rule": f"true clearance >= margin + {COMPLETENESS_SLACK_M * 1e3:.0f} mm",
        },
        "queries_between_samples_median": float(np.median([r["queries_between"] for r in rows]))
        if rows
        else None,
        "elapsed_s": round(time.perf_counter() - started, 1),
    }


def bound_validity(n_pairs: int = VALIDITY_PAIRS, seed: int = 0, batch: int = 5000) -> dict:
    """Point-motion bound of every arm geom over consecutive states of a random walk."""
    m, home = rob_home()
    g = ArmGroup(m, ARMS)
    d = mujoco.MjData(m)
    d.qpos[:] = home
    idx = np.concatenate([g.checker.arm_qpos[a] for a in ARMS])
    lo = np.concatenate([g.joint_limits(a)[0] for a in ARMS])
    hi = np.concatenate([g.joint_limits(a)[1] for a in ARMS])
    joints = [j for a in ARMS for j in g.joint_names(a)]
    radii = joint_geom_radii(m, joints)  # (n, ngeom)
    geoms = np.flatnonzero(radii.max(axis=0) > 0)
    rb = m.geom_rbound[geoms]
    local = np.concatenate([np.zeros((1, 3)), np.eye(3), -np.eye(3)])  # centre + 6 sphere points
    # same-arm pairs: the frame of the deepest common ancestor body of the two geoms
    table = g.checker.pairs
    self_pairs = [
        (int(a), int(b)) for a, b in zip(*np.nonzero(np.triu(table.table == 1, 1)), strict=True)
    ]
    anc = [_common_ancestor(m, int(m.geom_bodyid[a]), int(m.geom_bodyid[b])) for a, b in self_pairs]
    self_geom = np.array([gg for (a, b) in self_pairs for gg in (a, b)], int)
    self_anc = np.array([c for c in anc for _ in range(2)], int)
    self_radii = np.stack(
        [
            np.where(
                [radii[j, gg] > 0 and not _moves_body(m, joints[j], c) for j in range(len(joints))],
                radii[:, gg],
                0.0,
            )
            for gg, c in zip(self_geom, self_anc, strict=True)
        ],
        axis=1,
    )  # (n, S)
    rng = np.random.default_rng(seed)
    q = rng.uniform(lo, hi)
    violations, worst, checked = 0, -np.inf, 0
    started = time.perf_counter()
    while checked < n_pairs:
        k = min(batch, n_pairs - checked) + 1
        steps = rng.normal(0.0, 1.0, (k, q.size)) * rng.choice([0.005, 0.05, 0.5], size=(k, 1))
        qs = np.empty((k, q.size))
        for i in range(k):
            q = np.clip(q + steps[i], lo, hi)
            qs[i] = q
        gx = np.empty((k, m.ngeom, 3))
        gm = np.empty((k, m.ngeom, 3, 3))
        bx = np.empty((k, m.nbody, 3))
        bm = np.empty((k, m.nbody, 3, 3))
        for i in range(k):
            d.qpos[idx] = qs[i]
            mujoco.mj_kinematics(m, d)
            gx[i], gm[i] = d.geom_xpos, d.geom_xmat.reshape(-1, 3, 3)
            bx[i], bm[i] = d.xpos, d.xmat.reshape(-1, 3, 3)
        dq = np.abs(np.diff(qs, axis=0))  # (k-1, n)
        # world frame, every arm geom
        pts = (
            gx[:, geoms, None, :]
            + np.einsum("kgij,pj->kgpi", gm[:, geoms], local) * rb[None, :, None, None]
        )
        move = np.linalg.norm(np.diff(pts, axis=0), axis=-1).max(axis=-1)  # (k-1, G)
        bound = dq @ radii[:, geoms]
        excess = move - bound
        # same-arm pairs in the common ancestor's frame, bound = joints below it only
        sg, sc = self_geom, self_anc
        p_world = (
            gx[:, sg, None, :]
            + np.einsum("kgij,pj->kgpi", gm[:, sg], local) * m.geom_rbound[sg][None, :, None, None]
        )
        p_local = np.einsum("kgji,kgpj->kgpi", bm[:, sc], p_world - bx[:, sc, None, :])
        mv = np.linalg.norm(np.diff(p_local, axis=0), axis=-1).max(axis=-1)  # (k-1, S)
        excess = np.concatenate([excess, mv - dq @ self_radii], axis=1)
        violations += int(np.sum(excess > 1e-9))
        worst = max(worst, float(excess.max()))
        checked += k - 1
        q = qs[-1]
    return {
        "configuration_pairs": checked,
        "violations": violations,
        "largest_excess_m": worst,
        "geoms": int(geoms.size),
        "same_arm_pairs": len(self_pairs),
        "points_per_geom": int(local.shape[0]),
        "walk_steps_rad": "N(0, s) per joint, s in {0.005, 0.05, 0.5}, clipped to the limits",
        "elapsed_s": round(time.perf_counter() - started, 1),
    }


def _common_ancestor(m, b1: int, b2: int) -> int:
    chain = []
    while True:
        chain.append(b1)
        if b1 == 0:
            break
        b1 = int(m.body_parentid[b1])
    while b2 not in chain:
        b2 = int(m.body_parentid[b2])
    return b2


def _moves_body(m, joint: str, body: int) -> bool:
    """True when ``joint`` is on the chain from the world to ``body`` (it moves it)."""
    jb = int(m.jnt_bodyid[m.joint(joint).id])
    while body != 0:
        if body == jb:
            return True
        body = int(m.body_parentid[body])
    return False


@benchmark("certificate")
def run() -> dict:
    validity = bound_validity()
    plans = plan_figures()
    return {"simulated": True, "hardware_io": False, "bound_validity": validity, **plans}
