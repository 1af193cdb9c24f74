"""Benchmark ``mbm``: MotionBenchMaker's public bimanual Baxter problems (the ``bookshelf_tall_
both_arms`` sets, shipped with the ``vamp-planner`` sdist) planned by ArmGroup and by OMPL's
RRTConnect with the same check, at margin 0 (the benchmark's own clearance: collision-free)
and at the project's 5 mm.

``make mbm-data`` fetches the pinned sdist (``pip download``,
hash-checked, cached outside the repository: ``rob_twin.experiments.mbm_loader``), converts
Baxter's URDF + SRDF and each sampled problem into a MuJoCo scene and a robot file with
``ideal`` drives, and plans a seeded sample of each set. Settings (environment):

- ``MBM_PER_SET`` (default 200): problems drawn per set without replacement, seed
  ``MBM_SEED`` (default 0), from the 600 of the set (the issue asks for >= 200; a run of
  both sets at both margins takes about 25 min on this 2-core machine);
- ``MBM_SETS`` (default ``easy,medium``), ``MBM_MARGINS_MM`` (default ``0,5``);
- ``MBM_BUDGET_S`` (default 1.0): ArmGroup's ``time_budget_s`` and OMPL's solve time [s];
- ``MBM_OMPL`` (default 1): run the OMPL peer when ``ompl`` imports (the ``bench`` extra);
- ``MBM_VERIFY`` (default 1): re-verify every ArmGroup plan's certificate from the model alone
  (``rob_twin.planners.certificate_check.verify_document``, coal).

Per problem and margin: a problem is valid when its start and goal are free at the margin
(ArmGroup's exact check; MotionBenchMaker's own validity is VAMP's sphere model). ArmGroup
plans from the start (``plan(goal, seed=index, start=start)``); its time is the whole request
(goals, search, shortcut, retime, the 125 Hz sample check, the certificate) with each stage's
share; every success carries the project's certificate and is re-verified. OMPL
(``rob_twin.experiments.ompl_peer``): RRTConnect, ``simplifySolution``, TOPP-RA, every 125 Hz
sample checked, with ``CheckSession.is_free`` at the same margin. Loading the scene and
building the group (``setup``) are timed apart. Figures per set and margin: valid, solved,
solved within 1 s, median and p95 [ms] of every request and of the solved ones, per-stage
medians/p95 over solved plans, certificates, OMPL's beside. JSON to ``out/bench/mbm.json``
and a table to ``out/bench/mbm.md``. Simulated; this 2-core machine is shared, so times
are ranges and the same-run ratios are what count.
"""

from __future__ import annotations

import os
import sys
import time
import warnings

import numpy as np
from rob_twin.experiments import mbm_loader as mbm
from rob_twin.experiments.output import OUT_DIR, markdown_table
from rob_twin.experiments.registry import benchmark
from rob_twin.planners.collision import CollisionConfig
from rob_twin.planners.errors import GoalInputError
from rob_twin.planners.group import ArmGroup
from rob_twin.planners.group_config import GroupConfig

GROUP_ARMS = {a: [f"{a}/j{j}" for j in range(1, 8)] for a in mbm.ARMS}
STAGES = ("plan", "retime", "check", "certify", "total")
# VAMP 0.6.4's figures, measured here once (built from source on this machine, one
# trial per problem, planning time only, paths not checked between samples)
VAMP_REFERENCE = {
    "source": "VAMP 0.6.4 RRT-Connect built from source on this 2-core machine, run once",
    "bookshelf_all_sets_solved": "1,398 of 1,470 valid (95 %)",
    "median_ms": 12.2,
    "p95_ms": 86.7,
    "note": "planning only; 2 of 85 smoothed paths failed VAMP's own motion validator, 7 of "
    "85 had a colliding state when resampled at 4x",
}


def _env(name: str, default: str) -> str:
    return os.environ.get(name, default).strip() or default


def settings() -> dict:
    return {
        "per_set": int(_env("MBM_PER_SET", "200")),
        "sets": [s for s in _env("MBM_SETS", "easy,medium").split(",") if s],
        "margins_mm": [float(m) for m in _env("MBM_MARGINS_MM", "0,5").split(",") if m],
        "budget_s": float(_env("MBM_BUDGET_S", "1.0")),
        "seed": int(_env("MBM_SEED", "0")),
        "ompl": _env("MBM_OMPL", "1") == "1",
        "verify": _env("MBM_VERIFY", "1") == "1",
    }


def sample(set_name: str, per_set: int, seed: int) -> list[int]:
    """The problem numbers (1..600) drawn for ``set_name``: seeded, without replacement,
    sorted; the set's name is part of the seed, so each set has its own draw."""
    rng = np.random.default_rng([seed, mbm.SETS.index(set_name)])
    n = min(per_set, mbm.PROBLEMS_PER_SET)
    return sorted(int(i) for i in rng.choice(mbm.PROBLEMS_PER_SET, n, replace=False) + 1)


def group_config(margin_m: float, budget_s: float) -> GroupConfig:
    return GroupConfig(collision=CollisionConfig(margin_m, margin_m), time_budget_s=budget_s)


def _stages(times: dict[str, float]) -> dict[str, float]:
    """The stage times [s] of a result in the table's stages (plan = goals + search +
    shortcut)."""
    plan = sum(times.get(k, 0.0) for k in ("goals", "search", "shortcut"))
    out = {"plan": plan}
    for k in ("retime", "check", "certify", "total"):
        out[k] = times.get(k, 0.0)
    return out


def plan_problem(
    problem: mbm.MbmProblem, margin_m: float, cfg: dict, ompl_ok: bool, warm: bool = False
) -> dict:
    """One problem at one margin: validity, ArmGroup (and OMPL), as a row."""
    t0 = time.perf_counter()
    model = mbm.problem_model(problem)
    t1 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "checked pairs use MuJoCo colliders known to miss"
        group = ArmGroup(model, GROUP_ARMS, group_config(margin_m, cfg["budget_s"]))
    group.set_qpos(model.key("home").qpos)
    row = {
        "set": problem.set_name,
        "index": problem.index,
        "margin_mm": round(margin_m * 1e3, 3),
        "load_ms": round((t1 - t0) * 1e3, 1),
        "group_ms": round((time.perf_counter() - t1) * 1e3, 1),
        "weak_pairs": len(group.checker.weak_pairs),
    }
    moving = tuple(group.arm_names)
    try:
        group.set_qpos(model.key("home").qpos)
        for a in moving:
            group.set_arm(a, problem.start[a])
        session = group.checker.session(moving, group.reference_qpos)
        q0 = np.concatenate([problem.start[a] for a in moving])
        q1 = np.concatenate([group._validated(a, problem.goal[a], "goal") for a in moving])
    except GoalInputError as err:
        row.update(valid=False, why_invalid=f"outside the joint limits: {err}")
        return row
    start_ok, goal_ok = session.is_free(q0), session.is_free(q1)
    row["valid"] = bool(start_ok and goal_ok)
    if not row["valid"]:
        row["why_invalid"] = "start in collision" if not start_ok else "goal in collision"
        return row
    t = time.perf_counter()
    r = group.plan(dict(problem.goal), seed=problem.index, start=dict(problem.start))
    row["ours_ms"] = round((time.perf_counter() - t) * 1e3, 2)
    row["ours_status"] = r.status.value
    row["ours_stages_ms"] = {k: round(v * 1e3, 2) for k, v in _stages(r.stage_times_s).items()}
    if r.ok:
        plan = r.plan
        row["certified"] = bool(plan.certificate is not None and plan.certificate.certified)
        row["certified_min_mm"] = round(plan.certificate.certified_min_m * 1e3, 3)
        row["duration_s"] = round(plan.duration_s, 3)
        if cfg["verify"]:
            from rob_twin.planners.certificate_check import verify_document
            from rob_twin.planners.plan_file import PlanFileError, plan_document

            t = time.perf_counter()
            try:
                report = verify_document(plan_document(group, plan), model)
            except PlanFileError as err:  # a plan document needs a margin > 0
                row["reverify_skipped"] = str(err)[:120]
            else:
                row["reverified"] = bool(report.ok)
                row["reverify_ms"] = round((time.perf_counter() - t) * 1e3, 1)
                if not report.ok:
                    row["reverify_disagreements"] = report.disagreements[:3]
    else:
        row["ours_reason"] = r.reason[:160]
    if ompl_ok:
        from rob_twin.experiments.ompl_peer import plan_ompl

        group.set_qpos(model.key("home").qpos)
        for a in moving:
            group.set_arm(a, problem.start[a])
        session = group.checker.session(moving, group.reference_qpos)
        lo = np.concatenate([group.joint_limits(a)[0] for a in moving])
        hi = np.concatenate([group.joint_limits(a)[1] for a in moving])
        c = group.config
        args = (session.is_free, q0, q1, lo, hi, c.velocity, c.acceleration, "RRTConnect")
        if warm:
            plan_ompl(*args, seed=cfg["seed"], solve_time_s=cfg["budget_s"])
        t = time.perf_counter()
        pr = plan_ompl(*args, seed=cfg["seed"], solve_time_s=cfg["budget_s"])
        row["ompl_ms"] = round((time.perf_counter() - t) * 1e3, 2)
        row["ompl_ok"] = bool(pr.ok)
        if not pr.ok:
            row["ompl_reason"] = (
                "retimed sample collides" if "retimed sample" in pr.reason else pr.reason[:80]
            )
    return row


def _progress(row: dict, k: int, n: int) -> str:
    """One line per problem and margin, for a run that takes minutes."""
    head = f"[mbm] {row['set']} {k}/{n} #{row['index']} @ {row['margin_mm']:g} mm:"
    if not row.get("valid"):
        return f"{head} invalid ({row.get('why_invalid', '')})"
    ours = f"ArmGroup {row['ours_status']} {row['ours_ms']:.0f} ms"
    if "ompl_ok" in row:
        ours += f", OMPL {'solved' if row['ompl_ok'] else 'failed'} {row['ompl_ms']:.0f} ms"
    return f"{head} {ours}"


def _ms(values: list[float]) -> dict:
    v = np.asarray(values, float)
    if v.size == 0:
        return {"median_ms": None, "p95_ms": None}
    return {
        "median_ms": round(float(np.median(v)), 1),
        "p95_ms": round(float(np.percentile(v, 95)), 1),
    }


def summarize(rows: list[dict], budget_s: float) -> dict:
    """Figures of one set at one margin."""
    valid = [r for r in rows if r.get("valid")]
    solved = [r for r in valid if r.get("ours_status") == "success"]
    out = {
        "problems": len(rows),
        "valid": len(valid),
        "invalid_reasons": _count(r.get("why_invalid", "") for r in rows if not r.get("valid")),
        "ours": {
            "solved": len(solved),
            "solved_within_1s": sum(r["ours_ms"] <= 1000.0 for r in solved),
            "solved_share": round(len(solved) / len(valid), 3) if valid else None,
            "all_requests": _ms([r["ours_ms"] for r in valid]),
            "solved_requests": _ms([r["ours_ms"] for r in solved]),
            "stages_solved": {k: _ms([r["ours_stages_ms"][k] for r in solved]) for k in STAGES},
            "statuses": _count(r["ours_status"] for r in valid),
            "certified": sum(bool(r.get("certified")) for r in solved),
            "reverified": sum(bool(r.get("reverified")) for r in solved),
            "reverify_skipped": _count(
                r["reverify_skipped"] for r in solved if "reverify_skipped" in r
            ),
            "reverify": _ms([r["reverify_ms"] for r in solved if "reverify_ms" in r]),
            "min_certified_clearance_mm": (
                min(r["certified_min_mm"] for r in solved) if solved else None
            ),
        },
        "setup": {
            "load": _ms([r["load_ms"] for r in rows]),
            "group": _ms([r["group_ms"] for r in rows]),
        },
    }
    ompl = [r for r in valid if "ompl_ok" in r]
    if ompl:
        ok = [r for r in ompl if r["ompl_ok"]]
        out["ompl_rrtconnect"] = {
            "solved": len(ok),
            "solved_within_1s": sum(r["ompl_ms"] <= 1000.0 for r in ok),
            "all_requests": _ms([r["ompl_ms"] for r in ompl]),
            "solved_requests": _ms([r["ompl_ms"] for r in ok]),
            "failures": _count(r["ompl_reason"] for r in ompl if not r["ompl_ok"]),
            "what": "OMPL 2.0.1 RRTConnect + simplifySolution + TOPP-RA + every 125 Hz sample "
            f"checked, CheckSession.is_free at the margin, solve time {budget_s} s",
        }
    return out


def _count(items) -> dict[str, int]:
    out: dict[str, int] = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return out


def table(result: dict) -> list[dict]:
    """One row per set, margin and planner (the Markdown table)."""
    out = []
    for key, s in result["sets"].items():
        o = s["ours"]
        st = o["stages_solved"]
        out.append(
            {
                "set @ margin": key,
                "planner": "ArmGroup",
                "valid": s["valid"],
                "solved": o["solved"],
                "<= 1 s": o["solved_within_1s"],
                "median ms (all)": o["all_requests"]["median_ms"],
                "p95 ms (all)": o["all_requests"]["p95_ms"],
                "median ms (solved)": o["solved_requests"]["median_ms"],
                "plan / retime / check / certify median ms": " / ".join(
                    str(st[k]["median_ms"]) for k in ("plan", "retime", "check", "certify")
                ),
                "certified / re-verified": f"{o['certified']} / "
                + (
                    "skipped (a plan file needs margin > 0)"
                    if o["reverify_skipped"]
                    else str(o["reverified"])
                ),
            }
        )
        if "ompl_rrtconnect" in s:
            p = s["ompl_rrtconnect"]
            out.append(
                {
                    "set @ margin": key,
                    "planner": "OMPL RRTConnect",
                    "valid": s["valid"],
                    "solved": p["solved"],
                    "<= 1 s": p["solved_within_1s"],
                    "median ms (all)": p["all_requests"]["median_ms"],
                    "p95 ms (all)": p["all_requests"]["p95_ms"],
                    "median ms (solved)": p["solved_requests"]["median_ms"],
                    "plan / retime / check / certify median ms": "(not staged)",
                    "certified / re-verified": "(no certificate)",
                }
            )
    return out


AIM_SOLVED_SHARE = 0.95  # the aims at margin 0: solved within 1 s, of the valid
AIM_MEDIAN_MS = 50.0  # median request [ms], retiming, sample check and certificate included


def aims(result: dict) -> list[dict]:
    """The issue's aims per set at margin 0, each with the figure measured and whether it
    is met: >= 95 % of the valid problems solved within 1 s, the median request (all valid
    problems) <= 50 ms, every solved plan certified."""
    out = []
    for key, s in result["sets"].items():
        if not key.endswith("@ 0 mm") or not s["valid"]:
            continue
        o = s["ours"]
        share = o["solved_within_1s"] / s["valid"]
        median = o["all_requests"]["median_ms"]
        out += [
            {
                "set": key,
                "aim": f">= {AIM_SOLVED_SHARE:.0%} solved within 1 s",
                "measured": f"{o['solved_within_1s']} of {s['valid']} ({share:.1%})",
                "met": share >= AIM_SOLVED_SHARE,
            },
            {
                "set": key,
                "aim": f"median <= {AIM_MEDIAN_MS:g} ms",
                "measured": f"{median} ms",
                "met": median is not None and median <= AIM_MEDIAN_MS,
            },
            {
                "set": key,
                "aim": "every solved plan certified",
                "measured": f"{o['certified']} of {o['solved']}",
                "met": o["certified"] == o["solved"],
            },
        ]
    return out


def verdict(result: dict) -> str:
    """One line: how many of the aims are met, and which are not."""
    rows = result.get("aims", [])
    missed = [f"{r['set']}: {r['aim']} ({r['measured']})" for r in rows if not r["met"]]
    head = f"mbm: {len(rows) - len(missed)} of {len(rows)} aims met (simulated)"
    return head + (f"; not met: {'; '.join(missed)}" if missed else "")


def _markdown(result: dict) -> str:
    cfg = result["settings"]
    return (
        "# Benchmark `mbm`: MotionBenchMaker bookshelf, Baxter both arms (simulated)\n\n"
        f"vamp-planner {mbm.VAMP_VERSION} sdist (sha256 {mbm.SDIST_SHA256[:16]}...), "
        f"{cfg['per_set']} problems per set (seed {cfg['seed']}), budget {cfg['budget_s']} s, "
        f"OMPL: {result['ompl']}.\n\n"
        f"{markdown_table(table(result))}\n"
        f"Aims at margin 0:\n\n{markdown_table(result.get('aims', []))}\n"
        f"{verdict(result)}\n\n"
        f"VAMP (quoted, {VAMP_REFERENCE['source']}): {VAMP_REFERENCE['bookshelf_all_sets_solved']}"
        f", median {VAMP_REFERENCE['median_ms']} ms, p95 {VAMP_REFERENCE['p95_ms']} ms "
        "(planning only, paths not checked between samples).\n\n"
        f"Command: `{result['command']}`; wall {result.get('rows_wall_s')} s.\n"
    )


@benchmark("mbm")
def run() -> dict:
    cfg = settings()
    try:  # fetched by `make mbm-data` (setup, like a dependency): the benchmark stays offline
        path = mbm.fetch_sdist(download=False)
    except mbm.MbmUnavailableError as err:
        return {"skipped": str(err), "hardware_io": False}
    mbm.baxter_dir(path)
    mbm.robot_mjcf()
    from rob_twin.experiments import ompl_peer

    missing = ompl_peer.missing_reason() if cfg["ompl"] else "MBM_OMPL=0"
    ompl_ok = missing is None
    rows: list[dict] = []
    t0 = time.perf_counter()
    load_before = os.getloadavg()[0]
    warm = True
    for set_name in cfg["sets"]:
        drawn = sample(set_name, cfg["per_set"], cfg["seed"])
        for k, index in enumerate(drawn, 1):
            problem = mbm.load_problem(set_name, index)
            for margin_mm in cfg["margins_mm"]:
                rows.append(plan_problem(problem, margin_mm * 1e-3, cfg, ompl_ok, warm))
                warm = False
                print(_progress(rows[-1], k, len(drawn)), file=sys.stderr, flush=True)
    result = {
        "settings": cfg,
        "command": "MBM_PER_SET={per_set} MBM_SETS={sets} MBM_MARGINS_MM={m} MBM_BUDGET_S={b} "
        "python -m rob_twin.experiments.bench mbm".format(
            per_set=cfg["per_set"],
            sets=",".join(cfg["sets"]),
            m=",".join(f"{x:g}" for x in cfg["margins_mm"]),
            b=cfg["budget_s"],
        ),
        "sdist": {"version": mbm.VAMP_VERSION, "sha256": mbm.SDIST_SHA256, "path": str(path)},
        "ompl": "RRTConnect" if ompl_ok else f"skipped: {missing}",
        "sets": {},
        "vamp_reference": VAMP_REFERENCE,
        "rows_wall_s": round(time.perf_counter() - t0, 1),
        "load_average_1min_before_after": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "hardware_io": False,
        "simulated": True,
    }
    for set_name in cfg["sets"]:
        for margin_mm in cfg["margins_mm"]:
            mine = [r for r in rows if r["set"] == set_name and r["margin_mm"] == margin_mm]
            result["sets"][f"{set_name} @ {margin_mm:g} mm"] = summarize(mine, cfg["budget_s"])
    result["table"] = table(result)
    result["aims"] = aims(result)
    result["verdict"] = verdict(result)
    result["rows"] = rows
    md = OUT_DIR / "bench" / "mbm.md"
    md.parent.mkdir(parents=True, exist_ok=True)
    md.write_text(_markdown(result))
    print(result["verdict"], file=sys.stderr, flush=True)
    return result
