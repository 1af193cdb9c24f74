"""Re-verify a saved plan's clearance certificate from the model alone, with coal.

The check trusts nothing the planner measured: it rebuilds the checked pairs from the
model (``GeomPairTable``), the per-pair Lipschitz radii, the speed bounds from the stored
velocities and acceleration limits, the uncertainty allowances from the stored spec; it
measures every distance again with coal (``rob_twin.planners.oracle.CoalOracle``: GJK/EPA on coal
shapes, no MuJoCo collider) at every sample the certificate measured
(``measured_sample_index``; every sample in documents without it) and every stored
bisection query, pairs
whose bounding spheres are farther apart than the horizon getting that sphere bound (a
valid lower bound) instead; then it recomputes each pair's envelope minimum.

Weak pairs (``rob_twin.planners.weak_judge``: a MuJoCo collider known to misjudge them,
e.g. box vs box) are measured here exactly as the planner measured them (``coal_capped``),
so their figures agree to the bit; the document must name them, each judged by coal.

Every other figure of the file (the samples against the model's joint ranges and their own
velocities, the limits against the samples, allowances, the far-pair bound, counts) is
re-derived by ``rob_twin.planners.certificate_claims``; the speed bound rests on
``certificate_claims.sound_limits``, never on the file's limits alone.

Disagreements (any one fails the check; ``CheckReport.fields`` names each one's field): the
model's hash differs; the document's weak
pairs or judges are not this model's (``_compare_judges``); a bisection query's
state could not have been reached from its neighbouring samples under the speed bound; a
pair's recomputed certified minimum is below the stored one by more than
``agree_tolerance_m``; the recomputed minimum is below the margin while the certificate
says certified. Units: metres, seconds, radians.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

import mujoco
import numpy as np
from rob_twin.planners.certificate_claims import (
    certificate_problems,
    sample_problems,
    sound_limits,
)
from rob_twin.planners.certificate_envelope import _arc, envelope_minima, segment_speed_bounds
from rob_twin.planners.certificate_geometry import _pair_name, model_hash, pair_geometry
from rob_twin.planners.geom_pairs import GeomPairTable, PairClass
from rob_twin.planners.oracle import CoalOracle
from rob_twin.planners.plan_file import PlanFileError, validate_plan_document
from rob_twin.planners.uncertainty import UncertaintySpec, pair_allowances_m
from rob_twin.planners.weak_judge import (
    JUDGE_COAL,
    coal_capped,
    pair_judges,
    weak_pairs_document,
)

AGREE_TOLERANCE_M = 2e-4  # MuJoCo's and coal's distances of one mesh pair differ by ~1e-6..1e-4 m


@dataclass(kw_only=True)
class CheckReport:
    """ok: no disagreement; disagreements: one line each; pairs_checked: pairs recomputed;
    worst: the lowest recomputed certified minimum [m] and its pair."""

    ok: bool
    model_hash: str
    stored_hash: str
    certified_min_m: float
    pair: str
    pairs_checked: int
    coal_queries: int
    disagreements: list[str] = field(default_factory=list)
    fields: list[str] = field(default_factory=list)  # the field each disagreement is about
    max_pair_difference_m: float = 0.0
    weak_pairs: int = 0  # checked pairs whose MuJoCo collider is weak (the planner used coal)
    weak_kinds: dict[str, int] = field(default_factory=dict)  # of them, per why (box vs box...)
    notes: list[str] = field(default_factory=list)  # remarks that are no disagreement

    def as_dict(self) -> dict:
        return {
            "ok": self.ok,
            "model_hash": self.model_hash,
            "stored_model_hash": self.stored_hash,
            "certified_min_m": round(self.certified_min_m, 7)
            if math.isfinite(self.certified_min_m)
            else None,
            "pair": self.pair,
            "pairs_checked": self.pairs_checked,
            "coal_queries": self.coal_queries,
            "max_pair_difference_m": round(self.max_pair_difference_m, 7),
            "disagreements": self.disagreements,
            "disagreement_fields": sorted(set(self.fields)),
            "weak_pairs": self.weak_pairs,
            "weak_kinds": self.weak_kinds,
            "notes": self.notes,
            "oracle": "coal (GJK/EPA), independent of MuJoCo's colliders",
            "hardware_io": False,
        }


def verify_document(
    doc: dict,
    model: mujoco.MjModel,
    agree_tolerance_m: float = AGREE_TOLERANCE_M,
    where: str = "(in memory)",
) -> CheckReport:
    """Re-verify the plan document ``doc`` (``rob_twin.planners.plan_file``) against ``model``.

    ``doc`` is validated first (``validate_plan_document``) and checked against the model
    (its joints exist, ``reference_qpos`` has the model's nq entries): PlanFileError names
    the field otherwise (``where``: the file, for messages). A model hash that differs is
    the one disagreement reported (nothing else is comparable then)."""
    validate_plan_document(doc, where)
    _check_against_model(doc, model, where)
    cert = doc["certificate"]
    problems: list[str] = []
    h = model_hash(model)
    if h != cert["model_hash"]:
        return CheckReport(
            ok=False,
            model_hash=h,
            stored_hash=cert["model_hash"],
            certified_min_m=float("nan"),
            pair="",
            pairs_checked=0,
            coal_queries=0,
            disagreements=[
                f"certificate.model_hash: model hash {h} differs from the certificate's "
                f"{cert['model_hash']}: the plan was certified on another model (nothing else "
                "checked)"
            ],
            fields=["certificate.model_hash"],
        )
    fields: list[str] = []

    def claims(found: list[tuple[str, str]]) -> list[str]:
        fields.extend(f for f, _ in found)
        return [f"{f}: {text}" for f, text in found]

    def about(name: str, found: list[str]) -> list[str]:
        fields.extend([name] * len(found))
        return found

    if not cert["certified"]:
        problems += about(
            "certificate.certified",
            [f"the certificate says not certified ({cert.get('failure') or 'no reason given'})"],
        )
    problems += claims(sample_problems(doc, model))
    moving = list(doc["moving"])
    spec = UncertaintySpec.from_dict(cert["uncertainty"])
    margin, horizon = float(doc["margin_m"]), float(cert["horizon_m"])
    table = GeomPairTable(model, doc["arms"], margin)
    geometry = pair_geometry(
        model,
        table,
        doc["arms"],
        moving,
        float(cert["payload_reach_m"]),
        np.asarray(doc["reference_qpos"], float),
    )
    notes: list[str] = []
    problems += about("certificate.weak_pairs", _compare_judges(cert, geometry, notes))
    t = np.asarray(doc["t_s"], float)
    q = np.hstack([np.asarray(doc["q_rad"][a], float) for a in moving])
    qd = np.hstack([np.asarray(doc["qd_rad_s"][a], float) for a in moving])
    # the limits the speed bound rests on: never below what the samples show
    accel, vmax = sound_limits(doc)
    extra_t = np.array([e["t_s"] for e in cert["extra_queries"]], float)
    extra_q = np.array([e["q_rad"] for e in cert["extra_queries"]], float).reshape(
        extra_t.size, q.shape[1]
    )
    speeds = segment_speed_bounds(t, qd, accel, vmax) if t.size > 1 else np.zeros((0, q.shape[1]))
    problems += about("q_rad", _reachability(t, q, speeds, extra_t, extra_q))

    qpos_index = np.concatenate(
        [[model.jnt_qposadr[model.joint(j).id] for j in doc["joint_names"][a]] for a in moving]
    ).astype(int)
    # the samples the certificate measured (older documents: every sample); the envelope
    # integrates the speed bound across the skipped ones
    index = cert.get("measured_sample_index")
    k = np.arange(t.size) if index is None else np.asarray(index, int)
    if index is not None and (
        k.size < 1 or k[0] != 0 or k[-1] != t.size - 1 or np.any(np.diff(k) <= 0)
    ):
        problems += about(
            "certificate.measured_sample_index",
            [
                "measured_sample_index must rise from the first to the last sample "
                f"(got {k.size} indices over {t.size} samples)"
            ],
        )
        k = np.arange(t.size)
    tt = np.concatenate([t[k], extra_t])
    qq = np.vstack([q[k], extra_q]) if extra_t.size else q[k]
    order = np.argsort(tt, kind="stable")
    tt, qq = tt[order], qq[order]
    oracle = CoalOracle(model)
    ref = np.asarray(doc["reference_qpos"], float)
    dist, coal_queries = coal_pair_distances(oracle, geometry, ref, qpos_index, qq, horizon)
    theta = np.max(np.abs(q), axis=0)
    world = geometry.pair_class == int(PairClass.ARM_WORLD)
    movers = (geometry.radii > 0).any(axis=1).astype(float)
    allowance = pair_allowances_m(geometry.radii, theta, world, movers, spec)
    lower = dist - spec.query_tolerance_m
    if tt.size > 1:
        seg_L = geometry.radii @ np.ascontiguousarray(speeds.T)
        val, _, _, _ = envelope_minima(_arc(tt, t, seg_L), lower)
        pair_min = val.min(axis=1) - allowance
    else:
        pair_min = lower[:, 0] - allowance
    p_worst = int(np.argmin(pair_min)) if pair_min.size else 0
    worst = float(pair_min[p_worst]) if pair_min.size else horizon
    max_diff, pair_problems = _compare_pairs(cert, geometry, pair_min, agree_tolerance_m)
    problems += about("certificate.pairs", pair_problems)
    names = {_pair_name(geometry, p): p for p in range(geometry.g1.size)}
    classes = [PairClass(int(c)).name.lower() for c in geometry.pair_class]
    problems += claims(
        certificate_problems(cert, doc, names, classes, pair_min, allowance, tt, agree_tolerance_m)
    )
    if worst < margin - agree_tolerance_m:
        fields.append("certificate.certified")
        problems.append(
            f"{_pair_name(geometry, p_worst)} is certified only to "
            f"{worst * 1e3:.3f} mm, below the margin {margin * 1e3:.1f} mm"
        )
    if float(cert["certified_min_m"]) > worst + agree_tolerance_m:
        fields.append("certificate.certified_min_m")
        problems.append(
            f"certificate's minimum {cert['certified_min_m'] * 1e3:.3f} mm is above coal's "
            f"{worst * 1e3:.3f} mm ({_pair_name(geometry, p_worst)})"
        )
    return CheckReport(
        ok=not problems,
        model_hash=h,
        stored_hash=cert["model_hash"],
        certified_min_m=worst,
        pair=_pair_name(geometry, p_worst) if pair_min.size else "",
        pairs_checked=int(geometry.g1.size),
        coal_queries=coal_queries,
        disagreements=problems,
        fields=fields,
        max_pair_difference_m=max_diff,
        weak_pairs=len(geometry.weak_why) - geometry.weak_why.count(""),
        weak_kinds=dict(sorted(Counter(w for w in geometry.weak_why if w).items())),
        notes=notes,
    )


def _check_against_model(doc: dict, model: mujoco.MjModel, where: str) -> None:
    """The document's joints exist in ``model`` as hinge or slide joints and its reference
    qpos has ``model.nq`` entries; PlanFileError otherwise."""
    valid_joints = {model.joint(i).name for i in range(model.njnt)}
    for a, joints in doc["arms"].items():
        for i, j in enumerate(joints):
            jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, j)
            if jid < 0:
                raise PlanFileError(
                    where, f"arms.{a}[{i}]", j, f"a joint of the model ({len(valid_joints)} joints)"
                )
            if int(model.jnt_type[jid]) not in (
                int(mujoco.mjtJoint.mjJNT_HINGE),
                int(mujoco.mjtJoint.mjJNT_SLIDE),
            ):
                raise PlanFileError(where, f"arms.{a}[{i}]", j, "a hinge or slide joint")
    if len(doc["reference_qpos"]) != model.nq:
        raise PlanFileError(
            where,
            "reference_qpos",
            f"{len(doc['reference_qpos'])} entries",
            f"{model.nq} entries (the model's nq)",
        )


def _compare_pairs(cert, geometry, pair_min, tol) -> tuple[float, list[str]]:
    """Each listed pair against its recomputed minimum; the pair count; the certificate's
    lowest pair (``pair``, when it names a checked pair) must be listed. Returns the largest
    difference [m] and the disagreements."""
    problems = []
    total = geometry.g1.size
    if cert["pairs_total"] != total:
        problems.append(
            f"pairs_total {cert['pairs_total']} differs from the model's {total} checked pairs"
        )
    names = {_pair_name(geometry, p): p for p in range(total)}
    max_diff = 0.0
    for stored in cert["pairs"]:
        p = names.get(stored["pair"])
        if p is None:
            problems.append(
                f"pair {stored['pair']!r} of the certificate is not a checked pair of this model"
            )
            continue
        diff = float(stored["certified_min_m"]) - float(pair_min[p])
        max_diff = max(max_diff, abs(diff))
        if abs(diff) > tol:
            problems.append(
                f"{stored['pair']}: certificate says {stored['certified_min_m'] * 1e3:.3f} mm, "
                f"coal gives {pair_min[p] * 1e3:.3f} mm"
            )
    listed = {s["pair"] for s in cert["pairs"]}
    if cert.get("pair") in names and cert["pair"] not in listed:  # the planner lists it first
        problems.append(f"the certificate's lowest pair {cert['pair']} is not listed in its pairs")
    return max_diff, problems


def _compare_judges(cert: dict, geometry, notes: list[str]) -> list[str]:
    """The certificate's judges against the model's: its ``weak_pairs`` must be this model's
    weak pairs (``rob_twin.planners.weak_judge``), each judged by coal, and each listed pair's
    ``judge`` the one the planner uses for it. A file without ``weak_pairs`` (written before
    judges were recorded) gets a note when the model has weak pairs: its planner took their
    distances from MuJoCo's collider (the figures are still checked with coal)."""
    expected = {w["pair"]: w["why"] for w in weak_pairs_document(geometry)}
    stored = cert.get("weak_pairs")
    problems = []
    if stored is None:
        if expected:
            name, why = next(iter(expected.items()))
            notes.append(
                f"the plan file records no judges (written before they were): its planner "
                f"measured this model's {len(expected)} weak pairs (e.g. {name}: {why}) with "
                "MuJoCo's collider, which misjudges them; re-plan to have them judged by coal"
            )
        return problems
    by_name = {w["pair"]: w for w in stored}
    for name, why in expected.items():
        w = by_name.get(name)
        if w is None:
            problems.append(
                f"weak pair {name} ({why}) is missing from the certificate's weak_pairs: "
                "its distances would be MuJoCo's collider's, which misjudges it"
            )
        elif w["judge"] != JUDGE_COAL:
            problems.append(
                f"weak pair {name} ({why}) was judged by {w['judge']}, not coal: MuJoCo's "
                "collider misjudges it"
            )
    for name in by_name.keys() - expected.keys():
        problems.append(f"weak_pairs names {name}, not a weak checked pair of this model")
    judges = pair_judges(geometry)
    for p in cert["pairs"]:
        want = judges.get(p["pair"])
        if "judge" in p and want is not None and p["judge"] != want:
            problems.append(
                f"{p['pair']} was judged by {p['judge']}, the planner's judge is {want}"
            )
    return problems


def _reachability(t, q, speeds, extra_t, extra_q) -> list[str]:
    """Consecutive samples, and each bisection state from both neighbouring samples, must
    be reachable under the speed bound (else the Lipschitz bound says nothing)."""
    out = []
    if t.size > 1:
        jump = np.abs(np.diff(q, axis=0)) - speeds * np.diff(t)[:, None]
        for k in np.flatnonzero(jump.max(axis=1) > 1e-9)[:3]:
            out.append(
                f"samples at t={t[k]:.4f} and {t[k + 1]:.4f} s are farther apart than the "
                "speed bound allows"
            )
    if extra_t.size == 0:
        return out
    if t.size < 2:
        return ["bisection queries on a plan of one sample"]
    seg = np.clip(np.searchsorted(t, extra_t, side="right") - 1, 0, t.size - 2)
    for i, (x, s) in enumerate(zip(extra_q, seg, strict=True)):
        before = np.abs(x - q[s]) - speeds[s] * (extra_t[i] - t[s])
        after = np.abs(q[s + 1] - x) - speeds[s] * (t[s + 1] - extra_t[i])
        if not (t[s] <= extra_t[i] <= t[s + 1]) or before.max() > 1e-9 or after.max() > 1e-9:
            out.append(
                f"bisection query at t={extra_t[i]:.5f} s is not reachable from its samples "
                "under the speed bound"
            )
    return out


def coal_pair_distances(
    oracle: CoalOracle,
    geometry,
    ref: np.ndarray,
    qpos_index: np.ndarray,
    states: np.ndarray,
    horizon_m: float,
) -> tuple[np.ndarray, int]:
    """(P, M) distances capped at the horizon: coal where the bounding spheres are within
    it (or a plane is involved), the sphere gap otherwise."""
    g1, g2 = geometry.g1, geometry.g2
    out = np.empty((g1.size, states.shape[0]))
    queries = 0
    qpos = ref.copy()
    for i, x in enumerate(states):
        qpos[qpos_index] = x
        oracle.set_qpos(qpos)
        out[:, i], n = coal_capped(oracle, g1, g2, horizon_m)  # as the planner's weak pairs
        queries += n
    return out, queries
