"""Per-pair clearance certificates of a plan: seed 003's envelope, one Lipschitz bound per pair.

For every checked geom pair the clearance d(t) between the samples is bounded from below by
the multi-sample Lipschitz envelope (seed 003), computed exactly and in linear time. The
pieces live in their own modules:

- ``rob_twin.planners.certificate_geometry``: the checked pairs and each pair's per-joint
  radii (per-pair Lipschitz: only the joints between the two geoms count), the model hash.
- ``rob_twin.planners.certificate_envelope``: the speed bound per 125 Hz segment, the arc
  coordinate s (d is 1-Lipschitz in s) and the envelope's exact minimum per segment.
- ``rob_twin.planners.certificate_record``: ``PairBound`` and ``PlanClearanceCertificate``.

This module certifies (``certify_samples``, ``certify_group_path``, ``certify_timed``,
``certify_plan_timed``):

- **Cheap bound first.** One ``mj_collision`` per query time, with every geom's margin at
  the horizon, gives the distance of every pair nearer than the horizon; every other
  checked pair is known to be at least the horizon away and needs no query of its own.
- **Measured samples only.** The planner's final check (``rob_twin.planners.final_check``) measures
  only the samples its per-pair bound cannot prove free; the arc between two queries is
  the integral of the pair's L across every 125 Hz segment between them, so the skipped
  samples are covered by the envelope like any other time between queries.
- **Tightening** (bisection that raises a low but passing envelope towards the sampled
  minimum) applies to pairs measured within the horizon; pairs never within it are
  bisected only where their bound is below their threshold (``tighten_far_pairs``).
- **Bisection.** Where some pair's envelope minus its uncertainty allowance falls below the
  margin between two queries that are themselves above it, one more query at the middle
  (all pairs at once), up to ``max_bisections`` rounds. A query below the threshold ends
  the attempt: that time is where the plan must be repaired.
- **Uncertainty.** Each pair's threshold is margin + E_pair (``rob_twin.planners.uncertainty``).
- **Weak pairs** (a MuJoCo collider known to misjudge them, e.g. box vs box) are measured
  with coal, as ``rob-twin certify`` measures them (``rob_twin.planners.weak_judge``).

The certificate is a record (``PlanClearanceCertificate``) that serializes to JSON with the
plan and is re-verified by ``rob_twin.planners.certificate_check`` from the model alone with coal.
Units: metres, seconds, radians.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from rob_twin.planners.certificate_envelope import (
    _arc,
    _cumulative_at,
    envelope_minima,
    plan_allowances_m,
    segment_speed_bounds,
)
from rob_twin.planners.certificate_geometry import (
    PairGeometry,
    _group_geometry,
    _hash_of,
    _pair_name,
    covering_rows,
)
from rob_twin.planners.certificate_record import (
    FAIL_INCONCLUSIVE,
    FAIL_QUERY_BELOW,
    FAR_PAIR_TEXT,
    PairBound,
    PlanClearanceCertificate,
)
from rob_twin.planners.errors import PlannerConfigError
from rob_twin.planners.geom_pairs import PairClass
from rob_twin.planners.uncertainty import UncertaintySpec
from rob_twin.planners.weak_judge import CoalJudge, judge_for


@dataclass(frozen=True)
class CertificateConfig:
    """How a plan is certified. Fields (units in brackets):

    - spec: the declared uncertainty (``rob_twin.planners.uncertainty.UncertaintySpec``,
      each term in m or rad); each pair's threshold is the margin plus its allowance.
    - payload_reach_m: extra reach of the gripper (last body) geoms for a held payload
      [m], in [0, 2].
    - max_bisections: rounds of midpoint queries where a segment is inconclusive
      [count], in [0, 20].
    - report_m: pairs whose certified minimum is below this are listed one by one in the
      artifact, the rest only counted [m].
    - tighten_ratio: segments whose envelope minimum is below this share of the smallest
      sampled clearance are bisected too, within ``max_bisections`` [ratio], in [0, 1);
      0 turns tightening off.
    - tighten_far_pairs: tighten pairs never measured within the horizon too [bool]: their
      bound, horizon - arc / 2 between measured states, is then raised by bisection
      queries; off: such a pair is bisected only where its bound is below its threshold,
      and may set a certified minimum well below the horizon.
    """

    spec: UncertaintySpec = field(default_factory=UncertaintySpec)
    payload_reach_m: float = 0.0
    max_bisections: int = 8
    report_m: float = 0.02
    tighten_ratio: float = 0.8
    tighten_far_pairs: bool = False

    def __post_init__(self) -> None:
        if not (math.isfinite(self.payload_reach_m) and 0.0 <= self.payload_reach_m <= 2.0):
            raise PlannerConfigError("payload_reach_m", self.payload_reach_m, "in [0, 2] m")
        if not 0.0 <= self.tighten_ratio < 1.0:
            raise PlannerConfigError("tighten_ratio", self.tighten_ratio, "in [0, 1)")
        if not 0 <= self.max_bisections <= 20:
            raise PlannerConfigError("max_bisections", self.max_bisections, "in [0, 20]")


def default_config() -> CertificateConfig:
    """Model taken as exact (10 um query tolerance), no payload, up to 8 bisection rounds."""
    return CertificateConfig()


QueryFn = Callable[[np.ndarray], np.ndarray]


def certify_samples(
    geometry: PairGeometry,
    t: np.ndarray,
    q: np.ndarray,
    qd: np.ndarray,
    accel: np.ndarray,
    vmax: np.ndarray,
    query: QueryFn,
    evaluate: Callable[[np.ndarray], np.ndarray] | None,
    margin_m: float,
    horizon_m: float,
    config: CertificateConfig,
    model_hash_hex: str,
    initial: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> PlanClearanceCertificate:
    """Certify one stacked trajectory (t (N,), q and qd (N, n)) of the moving arms.

    query(q) -> (P,) distances of every pair at stacked q (``horizon_m`` for far pairs);
    evaluate(times) -> (M, n) stacked q at those times (for bisection; None: none); initial:
    distances already measured (increasing times (M,) from the first to the last sample
    time, states (M, n), distances (P, M)), e.g. by the planner's final check, used instead
    of new queries; samples between may be skipped (the envelope integrates each pair's
    speed bound across every segment between two queries), states between samples become
    listed queries of the certificate. Pairs never
    within the horizon at a sample get the closed-form two-sample bound
    (horizon - tol - L_k dt_k / 2 on the worst segment) and no further work."""
    started = time.perf_counter()
    t = np.asarray(t, float)
    q = np.asarray(q, float)
    spec = config.spec
    allowance_all = plan_allowances_m(geometry, q, spec)
    if initial is None:
        qt0, qq0 = t, q
        dist_all = np.stack([query(q[i]) for i in range(t.size)], axis=1)
    else:
        qt0, qq0, dist_all = (np.asarray(x, float) for x in initial)
        if (
            qt0.size == 0
            or qt0[0] != t[0]
            or qt0[-1] != t[-1]
            or np.any(np.diff(qt0) <= 0)
            or dist_all.shape != (geometry.g1.size, qt0.size)
        ):
            raise PlannerConfigError(
                "initial",
                (qt0.shape, dist_all.shape),
                "increasing query times from the first to the last sample time (samples "
                "between may be skipped), distances (pairs, times)",
            )
    if t.size > 1:
        speeds = segment_speed_bounds(t, np.asarray(qd, float), accel, vmax)  # (K, n)
        # far pairs: sum_j r_pj max_gap(arc_j) / 2 >= the largest two-query dip, arc_j the
        # integral of joint j's speed bound across the gap (all segments it spans) ...
        gap_arcs = np.diff(_cumulative_at(qt0, t, speeds), axis=0)  # (gaps, n) [rad]
        reach = np.max(gap_arcs, axis=0)  # (n,) [rad]
        # ... and no more than the largest arc of a covering row (it dominates every pair)
        cover = float(np.max(gap_arcs @ covering_rows(geometry).T, initial=0.0))
        dip = np.minimum(geometry.radii @ reach, cover) / 2.0
    else:
        speeds = np.zeros((0, q.shape[1]))
        dip = np.zeros(geometry.g1.size)
    row_min = dist_all.min(axis=1)
    near_mask = row_min < horizon_m
    far_bound = horizon_m - spec.query_tolerance_m - dip - allowance_all
    sampled_min = float(np.min(row_min - spec.query_tolerance_m - allowance_all))
    tight_far = config.tighten_ratio * sampled_min if config.tighten_far_pairs else 0.0
    active_mask = near_mask | (far_bound < max(margin_m, tight_far))
    active = np.flatnonzero(active_mask)
    far = np.flatnonzero(~active_mask)  # bounded in closed form, no envelope of their own
    far_min = float(far_bound[far].min()) if far.size else math.inf
    sub = PairGeometry(
        geometry.g1[active],
        geometry.g2[active],
        geometry.pair_class[active],
        geometry.radii[active],
        geometry.index,
        geometry.names,
    )
    allowance, dist = allowance_all[active], dist_all[active]
    seg_L = sub.radii @ speeds.T  # (P_active, K) [m/s]
    threshold = margin_m + allowance
    tight_rows = near_mask[active]  # pairs measured within the horizon somewhere
    P = active.size
    qt, qq = list(qt0), list(qq0)
    at_sample = _sample_index(qt0, t)  # (M,) sample index of each query, -1 between
    between = at_sample < 0
    extra_t, extra_q = [qt0[between]], [np.asarray(qq0)[between]]
    failure, fail_t, fail_kind = "", None, ""
    last_env = None  # (query count, arcs, envelope) of the last round's envelope
    for round_ in range(config.max_bisections + 1):
        tt = np.asarray(qt)
        lower = dist - spec.query_tolerance_m
        below = lower < threshold[:, None]
        if below.any():
            p, i = np.unravel_index(
                int(np.argmax(np.where(below, threshold[:, None] - lower, -np.inf))), below.shape
            )
            failure = (
                f"{_pair_name(sub, p)} is {dist[p, i] * 1e3:.2f} mm apart at t={tt[i]:.4f} s, "
                f"below its threshold {threshold[p] * 1e3:.2f} mm"
            )
            fail_t, fail_kind = float(tt[i]), FAIL_QUERY_BELOW
            break
        if tt.size == 1 or P == 0:
            break
        s = _arc(tt, t, seg_L)
        env = envelope_minima(s, lower)
        last_env = (tt.size, s, env)
        val = env[0]
        bad = val < threshold[:, None]
        target = config.tighten_ratio * float(np.min(lower - allowance[:, None]))
        loose = (val - allowance[:, None]) < target  # tightening: never a failure
        if not config.tighten_far_pairs:
            loose &= tight_rows[:, None]
        if not (
            bad.any() or (loose.any() and evaluate is not None and round_ < config.max_bisections)
        ):
            break
        bad_segments = np.flatnonzero((bad | loose).any(axis=0))
        if bad.any() and (evaluate is None or round_ == config.max_bisections):
            bad_segments = np.flatnonzero(bad.any(axis=0))
            k = int(bad_segments[0])
            p = int(np.argmax(threshold - val[:, k]))
            failure = (
                f"{_pair_name(sub, p)}: envelope {val[p, k] * 1e3:.2f} mm between "
                f"t={tt[k]:.4f} and {tt[k + 1]:.4f} s is below its threshold "
                f"{threshold[p] * 1e3:.2f} mm after {round_} bisection rounds"
            )
            fail_t, fail_kind = float((tt[k] + tt[k + 1]) / 2), FAIL_INCONCLUSIVE
            break
        mids = (tt[bad_segments] + tt[bad_segments + 1]) / 2.0
        new_q = list(np.asarray(evaluate(mids), float).reshape(mids.size, -1))
        new_d = np.stack([query(x)[active] for x in new_q], axis=1)
        extra_t.append(mids)
        extra_q.append(np.array(new_q))
        order = np.argsort(np.concatenate([tt, mids]), kind="stable")
        qt = list(np.concatenate([tt, mids])[order])
        merged = qq + new_q
        qq = [merged[j] for j in order]
        dist = np.concatenate([dist, new_d], axis=1)[:, order]
    tt = np.asarray(qt)
    measured = at_sample[at_sample >= 0]
    order_e = np.argsort(np.concatenate(extra_t), kind="stable")
    reuse = last_env[1:] if last_env is not None and last_env[0] == tt.size else None
    bounds = _pair_bounds(
        sub, tt, t, dist - spec.query_tolerance_m, seg_L, allowance, config.report_m, reuse
    )
    best = bounds[0] if bounds else None
    near_min = best.certified_min_m if best else math.inf
    cmin = min(near_min, far_min)
    if not math.isfinite(cmin):
        cmin = horizon_m
    return PlanClearanceCertificate(
        certified=not failure,
        margin_m=margin_m,
        horizon_m=horizon_m,
        certified_min_m=float(cmin),
        pair=best.pair if best and near_min <= far_min else FAR_PAIR_TEXT,
        at_s=best.at_s if best else float(t[0]),
        pairs=bounds,
        pairs_total=int(geometry.g1.size),
        pairs_far=int(far.size),
        far_pairs_min_m=far_min,
        far_pair=_pair_name(geometry, int(far[np.argmin(far_bound[far])])) if far.size else "",
        sample_queries=int(measured.size),
        samples=int(t.size),
        measured_index=measured,
        extra_t_s=np.concatenate(extra_t)[order_e],
        extra_q_rad=np.concatenate(extra_q).reshape(-1, q.shape[1])[order_e],
        spec=spec,
        payload_reach_m=config.payload_reach_m,
        model_hash=model_hash_hex,
        failure=failure,
        fail_time_s=fail_t,
        fail_kind=fail_kind,
        elapsed_s=time.perf_counter() - started,
    )


def _sample_index(times: np.ndarray, sample_t: np.ndarray) -> np.ndarray:
    """Index of the sample time equal to each time, -1 for times between samples."""
    k = np.clip(np.searchsorted(sample_t, times), 0, sample_t.size - 1)
    return np.where(sample_t[k] == times, k, -1)


def _pair_bounds(
    geometry, tt, t, lower, seg_L, allowance, report_m, reuse=None
) -> tuple[PairBound, ...]:
    """Per pair, the certified minimum, where, and its active queries; pairs below
    ``report_m`` (at least the lowest one), lowest first. ``reuse``: (arcs, envelope) of
    these very queries when already computed."""
    P = lower.shape[0]
    if P == 0:
        return ()
    if tt.size == 1:
        val, at = lower[:, :1], np.full((P, 1), tt[0])
        ia = ib = np.zeros((P, 1), int)
    else:
        s, env = reuse if reuse is not None else (None, None)
        if s is None:
            s = _arc(tt, t, seg_L)
            env = envelope_minima(s, lower)
        val, sc, ia, ib = env
        ds = np.diff(s, axis=1)
        rate = np.where(ds > 0, (sc - s[:, :-1]) / np.where(ds > 0, ds, 1.0), 0.0)
        at = tt[None, :-1] + rate * np.diff(tt)[None, :]
    k = np.argmin(val, axis=1)
    rows = np.arange(P)
    cert = val[rows, k] - allowance
    out = []
    for p in np.argsort(cert, kind="stable"):
        if cert[p] >= report_m and out:
            break
        kk = k[p]
        out.append(
            PairBound(
                _pair_name(geometry, p),
                PairClass(int(geometry.pair_class[p])).name.lower(),
                float(cert[p]),
                float(val[p, kk]),
                float(at[p, kk]),
                float(allowance[p]),
                (float(tt[ia[p, kk]]), float(tt[ib[p, kk]])),
            )
        )
    return tuple(out)


def mujoco_query(
    session, geometry: PairGeometry, horizon_m: float, judge: CoalJudge | None = None
) -> QueryFn:
    """Per-pair distances at stacked q from one mj_collision (horizon for far pairs);
    ``judge`` (``rob_twin.planners.weak_judge.judge_for``): the weak pairs' distances from
    coal instead of MuJoCo's contacts."""
    P = geometry.g1.size

    base = np.full(P, horizon_m)
    index = geometry.index if judge is None else judge.mujoco_index

    def query(q: np.ndarray) -> np.ndarray:
        d = session._collide(q)
        out = base.copy()
        if d.ncon:  # few contacts: a Python loop beats ufunc.at here
            geom, dist = d.contact.geom, d.contact.dist
            for k in range(d.ncon):
                i = index[geom[k, 0], geom[k, 1]]
                if i >= 0 and dist[k] < out[i]:
                    out[i] = dist[k]
        if judge is not None:
            out[judge.rows] = judge.distances(session.full_qpos(q))
        return out

    return query


def certify_group_path(
    group,
    moving: Sequence[str],
    t: np.ndarray,
    q: np.ndarray,
    qd: np.ndarray,
    evaluate: Callable[[np.ndarray], np.ndarray] | None,
    config: CertificateConfig | None = None,
    initial: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    session=None,
) -> PlanClearanceCertificate:
    """Certify a stacked trajectory of ``group``'s ``moving`` arms against its reference state
    (the ArmGroup's meter measures distances; its horizon is the cheap far-pair bound);
    ``session``: a session of ``group.meter`` for these arms at the reference state (one is
    made when None)."""
    config = config or default_config()
    moving = tuple(moving)
    geometry = _group_geometry(group, moving, config.payload_reach_m)
    if session is None:
        session = group.meter.session(moving, group.reference_qpos)
    horizon = group.meter.config.horizon_m
    accel = np.concatenate([np.asarray(group.motion_limits(a).acceleration, float) for a in moving])
    vmax = np.concatenate([np.asarray(group.motion_limits(a).velocity, float) for a in moving])
    return certify_samples(
        geometry,
        t,
        q,
        qd,
        accel,
        vmax,
        mujoco_query(session, geometry, horizon, judge_for(group, geometry)),
        evaluate,
        group.config.collision.margin_m,
        horizon,
        config,
        _hash_of(group.model),
        initial,
    )


def certify_plan_timed(
    group, plan, timed=None, config: CertificateConfig | None = None
) -> PlanClearanceCertificate:
    """Certify ``plan`` (a ``rob_twin.planners.plan.Plan`` of ``group``); ``timed`` (the TimedPath
    it was sampled from) enables bisection queries between samples."""
    moving = plan.moving
    evaluate = None
    if timed is not None:

        def evaluate(x: np.ndarray) -> np.ndarray:
            return timed.evaluate(np.asarray(x, float))[0]

    return certify_group_path(
        group, moving, plan.t, plan.stacked("q"), plan.stacked("qd"), evaluate, config
    )


def certify_timed(
    group,
    moving: Sequence[str],
    timed,
    config: CertificateConfig | None = None,
    initial: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    sampled: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    session=None,
) -> PlanClearanceCertificate:
    """Certify a ``rob_twin.planners.retime.TimedPath`` of ``group``'s ``moving`` arms at the
    group's
    sample rate (what ``ArmGroup.plan`` returns), bisecting on the timed path itself;
    ``initial`` (``rob_twin.planners.final_check``): the distances the final check measured (reused,
    not queried again; samples it proved free are skipped); ``sampled``: (times, q, qd) of
    ``timed`` at the sample rate when already evaluated; ``session``: the meter session to
    query with (see ``certify_group_path``)."""

    from rob_twin.planners.retime import sample_times

    if sampled is None:
        times = sample_times(timed.duration, group.config.rate_hz)
        q, qd, _ = timed.evaluate(times)
    else:
        times, q, qd = sampled

    def evaluate(x: np.ndarray) -> np.ndarray:
        return timed.evaluate(np.asarray(x, float))[0]

    return certify_group_path(group, moving, times, q, qd, evaluate, config, initial, session)
