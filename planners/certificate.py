"""Clearance certificates between samples: the multi-sample Lipschitz envelope (seed 003).

A plan is checked at its retimed samples; what happens *between* them is what a
certificate bounds. If the clearance d(t) [m] has Lipschitz constant L [m/s] (it cannot
change faster than the fastest relative motion of two geom points) and each sample gives
an interval l_i <= d(t_i) <= u_i, every admissible history satisfies

    d(t) >= d_-(t) = max(0, max_i (l_i - L |t - t_i|)).

On a segment [t_k, t_k+1] with A_k = max_{i<=k} (l_i + L t_i) and B_k = max_{i>k}
(l_i - L t_i), d_-(t) = max(0, A_k - L t, B_k + L t); its minimum is at the crossing
t* = (A_k - B_k) / (2 L) when that lies inside, else at the nearer end. Prefix and suffix
maxima give every segment's minimum in linear time. A positive minimum certifies
separation over the whole interval; zero is no certificate (not a collision). The
intervals must be consistent (l_i - L |t_i - t_j| <= u_j for all i, j), else the
assumed L or the queries are wrong and no certificate is issued.

``lipschitz_bound`` gives L for a trajectory of one kinematic chain per arm: a point on a
body moved by joint j of a revolute chain moves at most sum_j |qd_j| R_j, R_j being the
largest distance from joint j's axis point to any geom point it moves; two arms' points
approach at most at the sum of both arms' bounds (a static obstacle adds nothing).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import mujoco
import numpy as np
from rob_twin.planners.errors import PlannerConfigError


@dataclass(frozen=True)
class Certificate:
    """min_lower_m: certified lower bound of the clearance over [t_0, t_n] [m] (0: none);
    t_min_s: where that bound is smallest [s]; segment: its sample interval index;
    consistent: the intervals agree with the assumed Lipschitz constant L [m/s]."""

    min_lower_m: float
    t_min_s: float
    segment: int
    lipschitz_m_s: float
    consistent: bool

    @property
    def certified(self) -> bool:
        return self.consistent and self.min_lower_m > 0.0


def consistent(t: np.ndarray, lower: np.ndarray, upper: np.ndarray, L: float) -> bool:
    """True when one L-Lipschitz history can pass through every interval [l_i, u_i]."""
    gap = lower[:, None] - L * np.abs(t[:, None] - t[None, :]) - upper[None, :]
    return bool(np.all(gap <= 1e-12))


def certify(
    times_s: Sequence[float],
    lower_m: Sequence[float],
    upper_m: Sequence[float],
    lipschitz_m_s: float,
) -> Certificate:
    """The exact minimum of the lower envelope d_- over the samples' span (seed 003).

    times_s: strictly increasing sample times [s]; lower_m/upper_m: clearance interval
    per sample [m] (upper may be inf); lipschitz_m_s: the bound L >= 0 [m/s]."""
    t = np.asarray(times_s, float)
    lo = np.asarray(lower_m, float)
    hi = np.asarray(upper_m, float)
    L = float(lipschitz_m_s)
    if t.ndim != 1 or t.size == 0 or lo.shape != t.shape or hi.shape != t.shape:
        raise PlannerConfigError(
            "times/lower/upper",
            (t.shape, lo.shape, hi.shape),
            "three 1-D arrays of one length >= 1",
        )
    if not (np.all(np.isfinite(t)) and np.all(np.diff(t) > 0)):
        raise PlannerConfigError("times_s", t, "finite and strictly increasing [s]")
    if np.any(np.isnan(lo)) or np.any(np.isnan(hi)) or np.any(lo > hi):
        raise PlannerConfigError("lower_m/upper_m", (lo, hi), "lower <= upper, no NaN [m]")
    if not (np.isfinite(L) and L >= 0):
        raise PlannerConfigError("lipschitz_m_s", L, "finite and >= 0 m/s")
    ok = consistent(t, lo, hi, L)
    if t.size == 1 or L == 0.0:
        k = int(np.argmin(lo)) if L > 0 else 0
        val = float(lo.max()) if L == 0.0 else float(lo[0])
        return Certificate(max(val, 0.0), float(t[k]), 0, L, ok)
    a = np.maximum.accumulate(lo + L * t)  # A_k = max_{i<=k} (l_i + L t_i)
    b = np.maximum.accumulate((lo - L * t)[::-1])[::-1]  # B_k' = max_{i>=k} (l_i - L t_i)
    best, t_best, seg = np.inf, float(t[0]), 0
    for k in range(t.size - 1):
        A, B = a[k], b[k + 1]
        t0, t1 = t[k], t[k + 1]
        tc = min(max((A - B) / (2 * L), t0), t1)  # the crossing, clamped into the segment
        val = max(A - L * tc, B + L * tc)
        if val < best:
            best, t_best, seg = val, float(tc), k
    return Certificate(max(float(best), 0.0), t_best, seg, L, ok)


def chain_radii(model: mujoco.MjModel, joint_names: Sequence[str]) -> np.ndarray:
    """R_j [m] for each hinge joint of one chain: an upper bound, valid in *every*
    configuration, on the distance from the joint's anchor to any point of a geom it moves.

    By the triangle inequality along the kinematic tree: |joint offset| + the lengths of
    the body offsets down to the geom's body + |geom offset| + the geom's bounding radius."""
    radii = []
    for name in joint_names:
        jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
        if jid < 0 or model.jnt_type[jid] != mujoco.mjtJoint.mjJNT_HINGE:
            raise PlannerConfigError("joint", name, "a hinge joint of the model")
        root = int(model.jnt_bodyid[jid])
        reach = {root: float(np.linalg.norm(model.jnt_pos[jid]))}  # anchor -> body origin
        for b in range(root + 1, model.nbody):
            parent = int(model.body_parentid[b])
            if parent in reach:
                reach[b] = reach[parent] + float(np.linalg.norm(model.body_pos[b]))
        r = 0.0
        for g in range(model.ngeom):
            b = int(model.geom_bodyid[g])
            if b in reach:
                r = max(
                    r,
                    reach[b]
                    + float(np.linalg.norm(model.geom_pos[g]))
                    + float(model.geom_rbound[g]),
                )
        radii.append(r)
    return np.array(radii)


def lipschitz_bound(
    speeds_rad_s: Mapping[str, np.ndarray], radii_m: Mapping[str, np.ndarray]
) -> float:
    """L [m/s] from per-arm joint speed bounds [rad/s] (one value per joint, e.g. the
    largest |qd| of a segment) and ``chain_radii`` [m]: sum over arms of sum_j |qd_j| R_j."""
    total = 0.0
    for arm, qd in speeds_rad_s.items():
        r = np.asarray(radii_m[arm], float)
        v = np.abs(np.asarray(qd, float))
        if v.shape != r.shape:
            raise PlannerConfigError(
                f"speeds of {arm}", v.shape, f"shape {r.shape} (one per joint)"
            )
        total += float(v @ r)
    return total


@dataclass(frozen=True, kw_only=True)
class PlanCertificate:
    """The continuous clearance bound of a plan [m] from its samples: per segment, the
    two-sample envelope with that segment's own Lipschitz bound (seed 003's
    segment-dependent speed bounds). certified: > 0 over the whole plan."""

    min_lower_m: float
    t_min_s: float
    segment: int
    max_lipschitz_m_s: float
    min_sampled_m: float
    samples: int
    horizon_m: float

    @property
    def certified(self) -> bool:
        return self.min_lower_m > 0.0


def certify_plan(
    group, plan, horizon_m: float = 0.05, tolerance_m: float = 1e-6
) -> PlanCertificate:
    """Certify ``plan`` (a ``rob_twin.planners.plan.Plan`` of ``group``, an ``ArmGroup``) between
    its
    samples. Clearance is measured at every sample up to ``horizon_m`` [m] (beyond it only
    ``horizon_m`` is claimed), with ``tolerance_m`` [m] of query error either side; a
    segment's speed bound is max(|qd_k|, |qd_k+1|) + a_max dt / 2 per joint (the most a
    joint can speed up between two samples under its acceleration limit)."""
    from dataclasses import replace

    from rob_twin.planners.collision import CollisionChecker

    arms = list(plan.arms)
    checker = CollisionChecker(
        group.model,
        {a: group.joint_names(a) for a in group.arm_names},
        replace(group.config.collision, horizon_m=horizon_m),
    )
    session = checker.session(tuple(arms), group.reference_qpos)
    t = np.asarray(plan.t, float)
    lower = np.empty(t.size)
    upper = np.empty(t.size)
    for i in range(t.size):
        c = session.clearance(np.concatenate([plan.arms[a].q[i] for a in arms]))
        if c.pair is None or c.distance_m >= horizon_m:
            lower[i], upper[i] = horizon_m, np.inf
        else:
            lower[i], upper[i] = c.distance_m - tolerance_m, c.distance_m + tolerance_m
    radii = {a: chain_radii(group.model, group.joint_names(a)) for a in arms}
    amax = {a: np.asarray(group.motion_limits(a).acceleration, float) for a in arms}
    best = Certificate(np.inf, float(t[0]), 0, 0.0, True)
    max_l = 0.0
    for k in range(t.size - 1):
        dt = t[k + 1] - t[k]
        speeds = {
            a: np.maximum(np.abs(plan.arms[a].qd[k]), np.abs(plan.arms[a].qd[k + 1]))
            + amax[a] * dt / 2
            for a in arms
        }
        lk = lipschitz_bound(speeds, radii)
        max_l = max(max_l, lk)
        seg = certify(t[k : k + 2], lower[k : k + 2], upper[k : k + 2], lk)
        if not seg.consistent:
            return PlanCertificate(
                min_lower_m=0.0,
                t_min_s=float(t[k]),
                segment=k,
                max_lipschitz_m_s=lk,
                min_sampled_m=float(lower.min()),
                samples=t.size,
                horizon_m=horizon_m,
            )
        if seg.min_lower_m < best.min_lower_m:
            best = Certificate(seg.min_lower_m, seg.t_min_s, k, lk, True)
    if t.size == 1:
        best = Certificate(float(lower[0]), float(t[0]), 0, 0.0, True)
    return PlanCertificate(
        min_lower_m=float(best.min_lower_m),
        t_min_s=best.t_min_s,
        segment=best.segment,
        max_lipschitz_m_s=max_l,
        min_sampled_m=float(lower.min()),
        samples=int(t.size),
        horizon_m=horizon_m,
    )
