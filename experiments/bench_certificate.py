"""Benchmark ``certificate``: soundness, bound validity, cost, tightness and completeness of
the per-pair clearance certificate every ``ArmGroup.plan`` returns (simulated).

The plans: a fixed list of ``N_PLANS`` seeded plans (``plan_list``): the crossing plan,
the study set (the ``study`` experiment's 50 goal pairs from home, seeds 0..49), the frozen
hard problems on ROB and on the two-arm stand (``rob_twin.experiments.hard_problems``; every plan
needs the search), then random goal pairs from home (the study's sampling, its own seed)
up to ``N_PLANS``. They run in ``WORKERS`` spawned processes, each building its own
groups; every plan has its own seed and starts from its own state, so the rows do not
depend on how the list is split.

- soundness: every delivered plan is checked by ``rob_twin.experiments.dense_clearance``: coal every
  1 ms along the samples' linear interpolation (a motion inside the certificate's speed
  bound), every checked pair, against each pair's certified value; counterexamples must
  be 0 (count and up to 5 examples). Also the smallest slack (a pair's true minimum minus
  its certified value) and, per pair type, the smallest true minimum within the horizon
  (which colliders the plans actually exercised near the margin).
- bound validity: >= 10^6 random configuration pairs (consecutive states of a random
  walk with mixed step sizes): every point of every arm geom (six points on its bounding
  sphere about its centre, and the centre) moves at most sum_j |dq_j| R_j(g) in the frame
  the pair's bound is stated in (world for arm-arm / arm-world / arm-body pairs; the
  common ancestor's frame for same-arm pairs). Violations must be 0. Its batches are
  shared out between the workers (each walks the same seeded walk and checks its share),
  beside the plans.
- cost: certificate wall time as a share of planning time (stage ``certify`` over
  ``total``), median, p95 and over all plans.
- tightness: certified minimum / true minimum over plans whose true minimum lies inside
  the certificate's horizon (beyond it the certificate claims only the horizon), median
  and p5; the study set and all plans, the crossing plan on its own.
- completeness: of the plans whose true clearance is >= margin + 2 mm, the share
  certified on the first retimed path (``uncertified_attempts == 0``).

Figures per set and overall; one row per plan in ``out/bench/certificate_plans.json``
(set, index, seed, status, certified and true minimum, horizon, certify and total time,
first-try certified, dense-check cost, closest pair). Units: metres, seconds.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import time
from dataclasses import dataclass

import mujoco
import numpy as np
from rob_twin.experiments.crossing_goals import (
    ARMS,
    crossing_start_qpos,
    rob_crossing_goals,
    rob_crossing_start,
    rob_home,
)
from rob_twin.experiments.dense_clearance import check_plan, for_group
from rob_twin.experiments.goal_pairs import SAMPLING, goal_pairs
from rob_twin.experiments.output import OUT_DIR, write_json
from rob_twin.experiments.registry import benchmark
from rob_twin.models.names import ROB
from rob_twin.planners.certificate_geometry import joint_geom_radii
from rob_twin.planners.errors import PlannerConfigError
from rob_twin.planners.group import ArmGroup
from rob_twin.planners.oracle import pair_type
from tqdm import tqdm

N_PLANS = 1000
N_STUDY = 50  # the ``study`` experiment's goal pairs (seed 0)
RANDOM_SEED = 1  # the goal sampling of the random fill (the study set has seed 0)
RANDOM_PLAN_SEED0 = 1000  # plan seeds of the random fill: this + its index
WORKERS = 2
VALIDITY_PAIRS = 1_000_000
COMPLETENESS_SLACK_M = 0.002
SETS = ("crossing", "study", "hard_rob", "hard_stand", "random")


@dataclass(frozen=True)
class PlanSpec:
    """One plan of the list: its set, index in the set, planner seed, the group it runs on
    (``crossing``, ``rob`` at home, ``hard_rob``, ``stand``), start and goal joint vectors
    per arm [rad] (no start: the group's reference) and the hard problem's kind."""

    set: str
    index: int
    seed: int
    group: str
    goals: dict
    start: dict | None = None
    kind: str = ""


def plan_list(n_plans: int = N_PLANS) -> list[PlanSpec]:
    """The fixed, seeded plan list (see the module docstring)."""
    from rob_twin.experiments.hard_problems import load

    out = [
        PlanSpec(
            "crossing", 0, 0, "crossing", _lists(rob_crossing_goals()), _lists(rob_crossing_start())
        )
    ]
    m, home = rob_home()
    g = ArmGroup(m, ARMS)
    g.set_qpos(home)
    for i, goals in enumerate(goal_pairs(g, N_STUDY, np.random.default_rng(0))):
        out.append(PlanSpec("study", i, i, ROB, _lists(goals)))
    for name, group in ((ROB, "hard_rob"), ("stand", "stand")):
        for i, p in enumerate(load(name)):
            out.append(
                PlanSpec(f"hard_{name}", i, i, group, _lists(p.goal), _lists(p.start), p.kind)
            )
    fill = max(0, n_plans - len(out))
    for i, goals in enumerate(goal_pairs(g, fill, np.random.default_rng(RANDOM_SEED))):
        out.append(PlanSpec("random", i, RANDOM_PLAN_SEED0 + i, ROB, _lists(goals)))
    return out[:n_plans]


def _lists(q: dict) -> dict:
    return {a: np.asarray(v, float).tolist() for a, v in q.items()}


# ----------------------------------------------------------------------------- worker

_GROUPS: dict = {}
_CHECKERS: dict = {}


def _group(name: str) -> tuple[ArmGroup, np.ndarray]:
    """(group, its reference qpos) for a plan list's group name, built once per process."""
    if name not in _GROUPS:
        if name == "crossing":
            m, start = crossing_start_qpos()
            g = ArmGroup(m, ARMS)
            g.set_qpos(start)
        elif name == ROB:
            m, home = rob_home()
            g = ArmGroup(m, ARMS)
            g.set_qpos(home)
        else:
            from rob_twin.experiments.hard_problems import groups

            built = groups()
            _GROUPS.setdefault("hard_rob", (built[ROB], built[ROB].reference_qpos.copy()))
            _GROUPS.setdefault("stand", (built["stand"], built["stand"].reference_qpos.copy()))
            return _GROUPS[name]
        _GROUPS[name] = (g, g.reference_qpos.copy())
    return _GROUPS[name]


def run_plan(spec: PlanSpec) -> dict:
    """Plan one spec from its own start with its own seed, then check it densely."""
    g, reference = _group(spec.group)
    g.set_qpos(reference)
    for a, q in (spec.start or {}).items():
        g.set_arm(a, np.array(q))
    t0 = time.perf_counter()
    r = g.plan({a: np.array(q) for a, q in spec.goals.items()}, seed=spec.seed)
    row = {
        "set": spec.set,
        "index": spec.index,
        "seed": spec.seed,
        "kind": spec.kind,
        "status": r.status.value,
        "plan_wall_s": round(time.perf_counter() - t0, 4),
        "margin_m": g.config.collision.margin_m,
    }
    if r.ok:
        p, c = r.plan, r.plan.certificate
        key = (spec.group, p.moving)
        if key not in _CHECKERS:
            _CHECKERS[key] = for_group(g, p.moving)
        t1 = time.perf_counter()
        dense = check_plan(_CHECKERS[key], p, g.reference_qpos)
        row.update(
            certified_min_m=float(c.certified_min_m),
            true_min_m=dense.true_min_m,
            true_pair=dense.worst_pair,
            horizon_m=float(c.horizon_m),
            certify_s=float(p.stage_times_s.get("certify", 0.0)),
            total_s=float(p.stage_times_s["total"]),
            first_try=c.uncertified_attempts == 0,
            samples=int(c.samples),
            samples_measured=int(c.sample_queries),
            duration_s=round(float(p.t[-1]), 3),
            dense_states=dense.states,
            dense_coal_queries=dense.coal_queries,
            dense_s=round(time.perf_counter() - t1, 4),
            counterexamples=dense.counterexamples[:3],
            **_near_figures(g.model, dense),
        )
    return row


def _near_figures(model: mujoco.MjModel, dense) -> dict:
    """The pair closest to a counterexample (smallest true minus certified value, pairs that
    came below the cap) and each pair type's smallest true minimum below the cap [m]."""
    near = np.flatnonzero(dense.min_m < dense.cap_m)
    if near.size == 0:
        return {"slack_m": None, "slack_pair": "", "types": {}}
    slack = dense.min_m[near] - dense.claimed_m[near]
    k = int(near[np.argmin(slack)])
    types: dict[str, float] = {}
    for p in near.tolist():
        t = pair_type(model, int(dense.g1[p]), int(dense.g2[p]))
        types[t] = min(types.get(t, np.inf), float(dense.min_m[p]))
    return {
        "slack_m": float(slack.min()),
        "slack_pair": dense.names[k],
        "slack_pair_true_m": float(dense.min_m[k]),
        "slack_pair_certified_m": float(dense.claimed_m[k]),
        "types": types,
    }


def _validity_task(n_pairs: int, part: int, parts: int) -> dict:
    return bound_validity(n_pairs, part=part, parts=parts)


# ----------------------------------------------------------------------------- figures


def _q(x, f, digits=4):
    return round(float(f(np.asarray(x, float))), digits) if len(x) else None


def _set_figures(rows: list[dict]) -> dict:
    ok = [r for r in rows if "true_min_m" in r]
    statuses: dict[str, int] = {}
    for r in rows:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    counter = [r for r in ok if r["counterexamples"]]
    share = [r["certify_s"] / r["total_s"] for r in ok]
    inside = [r for r in ok if r["true_min_m"] < r["horizon_m"]]
    ratio = [r["certified_min_m"] / r["true_min_m"] for r in inside]
    eligible = [r for r in ok if r["true_min_m"] >= r["margin_m"] + COMPLETENESS_SLACK_M]
    first = sum(1 for r in eligible if r["first_try"])
    return {
        "plans": len(rows),
        "statuses": statuses,
        "plans_checked": len(ok),
        "counterexample_plans": len(counter),
        "tightness": {
            "plans_inside_horizon": len(inside),
            "certified_over_true_median": _q(ratio, np.median, 3),
            "certified_over_true_p5": _q(ratio, lambda x: np.percentile(x, 5), 3),
        },
        "cost": {
            "certify_share_median": _q(share, np.median),
            "certify_share_p95": _q(share, lambda x: np.percentile(x, 95)),
            "certify_share_of_total_time": round(
                sum(r["certify_s"] for r in ok) / max(sum(r["total_s"] for r in ok), 1e-12), 4
            )
            if ok
            else None,
            "certify_ms_median": _q([1e3 * r["certify_s"] for r in ok], np.median, 2),
            "plan_ms_median": _q([1e3 * r["total_s"] for r in ok], np.median, 2),
            "samples_measured_share": round(
                sum(r["samples_measured"] for r in ok) / max(sum(r["samples"] for r in ok), 1), 4
            )
            if ok
            else None,
        },
        "completeness": {
            "eligible_plans": len(eligible),
            "certified_first_try": first,
            "share": round(first / len(eligible), 4) if eligible else None,
            "uncertified_failures": statuses.get("uncertified", 0),
        },
        "dense_check": {
            "coal_queries_median": _q([r["dense_coal_queries"] for r in ok], np.median, 1),
            "states_median": _q([r["dense_states"] for r in ok], np.median, 1),
            "ms_median": _q([1e3 * r["dense_s"] for r in ok], np.median, 1),
        },
    }


def plan_figures(
    n_plans: int = N_PLANS, workers: int = WORKERS, validity_pairs: int = VALIDITY_PAIRS
) -> tuple[dict, dict | None]:
    """(plan figures, bound validity or None when ``validity_pairs`` is 0): the plan list in
    ``workers`` spawned processes, the bound-validity walk as one more task beside them."""
    started = time.perf_counter()
    specs = plan_list(n_plans)
    # longest first (hard problems, then the rest) so no worker is left with a long tail
    order = sorted(range(len(specs)), key=lambda i: not specs[i].set.startswith("hard"))
    rows: list[dict] = [{}] * len(specs)
    ctx = mp.get_context("spawn")
    with ctx.Pool(workers) as pool:
        validity = [
            pool.apply_async(_validity_task, (validity_pairs, part, workers))
            for part in range(workers if validity_pairs else 0)
        ]
        results = pool.imap_unordered(_indexed, [(i, specs[i]) for i in order])
        for i, row in tqdm(results, total=len(specs), file=sys.stderr, desc="certificate plans"):
            rows[i] = row
        validity_result = merge_validity([v.get() for v in validity]) if validity else None
    ok = [r for r in rows if "true_min_m" in r]
    examples = [
        {"set": r["set"], "index": r["index"], "seed": r["seed"], **c}
        for r in ok
        for c in r["counterexamples"]
    ]
    crossing = next((r for r in ok if r["set"] == "crossing"), None)
    with_slack = [r for r in ok if r["slack_m"] is not None]
    closest = min(with_slack, key=lambda r: r["slack_m"]) if with_slack else None
    overall = _set_figures(rows)
    figures = {
        "plans_attempted": len(rows),
        "plans_checked": len(ok),
        "workers": workers,
        "plan_sets": {
            "crossing": "ROB's crossing goal pair from the crossing start, seed 0",
            "study": f"the study experiment's {N_STUDY} goal pairs from home (goal seed 0, "
            "plan seeds 0..49): " + SAMPLING,
            "hard_rob": "experiments/data/hard_problems_rob.json, plan seed = index",
            "hard_stand": "experiments/data/hard_problems_stand.json (tests/models "
            "two_arm_stand.xml), plan seed = index",
            "random": f"goal pairs from home (goal seed {RANDOM_SEED}, plan seeds "
            f"{RANDOM_PLAN_SEED0} + index): " + SAMPLING,
        },
        "soundness": {
            "counterexamples": len(examples),
            "counterexample_plans": overall["counterexample_plans"],
            "examples": examples[:5],
            "smallest_slack_m": round(closest["slack_m"], 7) if closest else None,
            "smallest_slack_at": {
                k: closest[k]
                for k in (
                    "set",
                    "index",
                    "seed",
                    "slack_pair",
                    "slack_pair_true_m",
                    "slack_pair_certified_m",
                )
            }
            if closest
            else None,
            "slack_rule": "per pair: true minimum minus its certified value, over pairs that "
            "came within the cap; negative would be a counterexample",
            "pair_types_within_horizon": _type_figures(ok),
            "judge": "rob_twin.experiments.dense_clearance: coal every 1 ms along the samples' "
            "linear "
            "interpolation, every checked pair, against each pair's certified value (its "
            "own entry, else the certificate's minimum); skipping by sound sphere and motion "
            "bounds",
        },
        "tightness": {
            "study": overall_t(rows, "study"),
            "overall": overall["tightness"],
            "crossing": round(crossing["certified_min_m"] / crossing["true_min_m"], 3)
            if crossing
            else None,
            "crossing_true_min_m": round(crossing["true_min_m"], 6) if crossing else None,
            "crossing_certified_min_m": round(crossing["certified_min_m"], 6) if crossing else None,
            "scope": "plans whose true minimum is inside the certificate's horizon "
            f"(horizons seen: {sorted({r['horizon_m'] for r in ok})} m)",
        },
        "cost": overall["cost"],
        "completeness": {
            **overall["completeness"],
            "rule": f"true clearance >= margin + {COMPLETENESS_SLACK_M * 1e3:.0f} mm, "
            "certified on the first retimed path",
        },
        "by_set": {s: _set_figures([r for r in rows if r["set"] == s]) for s in SETS},
        "overall": overall,
        "rows": rows,
        "elapsed_s": round(time.perf_counter() - started, 1),
        "load_average_1_5_15": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
    }
    return figures, validity_result


def _type_figures(ok: list[dict]) -> dict:
    """Per pair type ("capsule-mesh"): plans where such a pair came within the cap, and the
    smallest true minimum [m]."""
    out: dict[str, dict] = {}
    for r in ok:
        for t, v in r["types"].items():
            e = out.setdefault(t, {"plans": 0, "smallest_true_m": np.inf})
            e["plans"] += 1
            e["smallest_true_m"] = min(e["smallest_true_m"], v)
    return {
        t: {**e, "smallest_true_m": round(e["smallest_true_m"], 6)} for t, e in sorted(out.items())
    }


def overall_t(rows: list[dict], name: str) -> dict:
    return _set_figures([r for r in rows if r["set"] == name])["tightness"]


def _indexed(item: tuple[int, PlanSpec]) -> tuple[int, dict]:
    return item[0], run_plan(item[1])


def bound_validity(
    n_pairs: int = VALIDITY_PAIRS, seed: int = 0, batch: int = 5000, part: int = 0, parts: int = 1
) -> dict:
    """Point-motion bound of every arm geom over consecutive states of a random walk.

    ``part`` of ``parts``: every call walks the same seeded walk and checks only the batches
    whose number modulo ``parts`` is ``part`` (``merge_validity`` adds the parts up), so
    ``parts`` processes check the one walk together."""
    if not (isinstance(parts, int) and parts >= 1 and isinstance(part, int) and 0 <= part < parts):
        raise PlannerConfigError("part, parts", (part, parts), "ints with 0 <= part < parts")
    m, home = rob_home()
    g = ArmGroup(m, ARMS)
    d = mujoco.MjData(m)
    d.qpos[:] = home
    idx = np.concatenate([g.checker.arm_qpos[a] for a in ARMS])
    lo = np.concatenate([g.joint_limits(a)[0] for a in ARMS])
    hi = np.concatenate([g.joint_limits(a)[1] for a in ARMS])
    joints = [j for a in ARMS for j in g.joint_names(a)]
    radii = joint_geom_radii(m, joints, reference_qpos=home)  # (n, ngeom)
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
    number, walked = 0, 0
    while checked + walked < n_pairs:
        k = min(batch, n_pairs - checked - walked) + 1
        steps = rng.normal(0.0, 1.0, (k, q.size)) * rng.choice([0.005, 0.05, 0.5], size=(k, 1))
        qs = np.empty((k, q.size))
        for i in range(k):
            q = np.clip(q + steps[i], lo, hi)
            qs[i] = q
        number += 1
        if (number - 1) % parts != part:
            walked += k - 1
            q = qs[-1]
            continue
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
            + np.swapaxes(gm[:, geoms] @ local.T, -1, -2) * rb[None, :, None, None]
        )
        move = np.linalg.norm(np.diff(pts, axis=0), axis=-1).max(axis=-1)  # (k-1, G)
        bound = dq @ radii[:, geoms]
        excess = move - bound
        # same-arm pairs in the common ancestor's frame, bound = joints below it only
        sg, sc = self_geom, self_anc
        p_world = (
            gx[:, sg, None, :]
            + np.swapaxes(gm[:, sg] @ local.T, -1, -2) * m.geom_rbound[sg][None, :, None, None]
        )
        p_local = (p_world - bx[:, sc, None, :]) @ bm[:, sc]  # rows: points in the body frame
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


def merge_validity(parts: list[dict]) -> dict:
    """One figure from the parts of ``bound_validity`` (pairs and violations added up)."""
    out = dict(parts[0])
    out["configuration_pairs"] = sum(p["configuration_pairs"] for p in parts)
    out["violations"] = sum(p["violations"] for p in parts)
    out["largest_excess_m"] = max(p["largest_excess_m"] for p in parts)
    out["elapsed_s"] = max(p["elapsed_s"] for p in parts)
    out["parts"] = len(parts)
    return out


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


ROWS_PATH = OUT_DIR / "bench" / "certificate_plans.json"


@benchmark("certificate")
def run() -> dict:
    plans, validity = plan_figures()
    rows = plans.pop("rows")
    write_json(ROWS_PATH, {"simulated": True, "hardware_io": False, "rows": rows})
    return {
        "simulated": True,
        "hardware_io": False,
        "bound_validity": validity,
        **plans,
        "rows_file": str(ROWS_PATH),
    }
