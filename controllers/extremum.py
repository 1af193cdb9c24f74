"""Exact extrema of jerk-limited motion: piecewise-constant-jerk segments, integrated.

A ``JerkSegment`` starts at (p0, v0, a0) and applies constant jerk ``j`` for
``duration`` [s]: a(t) linear, v(t) quadratic, p(t) cubic. Per segment the exact
extrema are at the ends or at interior roots:

* v has an interior extremum where a(t) = 0, i.e. t = -a0 / j (j != 0);
* p has interior extrema where v(t) = 0: the roots of j/2 t^2 + a0 t + v0 (j != 0),
  or t = -v0 / a0 when j == 0 and a0 != 0 (the zero-jerk, nonzero-acceleration case
  that sample-only checks and naive "endpoints plus a=0" helpers miss).

Where segments come from (decision): Ruckig 0.19.4's Python binding exposes each
DoF's ``Profile`` (``trajectory.profiles[section][dof]``) with the seven phase
durations ``t``, jerks ``j`` and phase-start states ``p, v, a``, plus the ``brake``
pre-phases. ``segments_from_trajectory`` rebuilds each joint's motion from those
(brake phases, then the seven phases, then an unequal-duration tail that continues
with the final velocity and acceleration, zero jerk, until the trajectory's common
duration: a joint that finishes early holds). The segments are re-integrated from
the initial state (not copied per phase), so a profile whose phase states are
inconsistent would show up as a mismatch against ``trajectory.at_time``.
``segments_from_samples`` covers an owner output stream: between two samples the
jerk is taken constant ((a1 - a0) / dt); that is exact only when no phase switch
falls inside the period, so use it for streams, and profiles for exact claims.

Finding (experiment ``extremum``): Ruckig 0.19.4's own ``trajectory.position_extrema``
is narrower than the exact extrema for some joints: it misses the zero-jerk tail of a
joint that finishes early with a nonzero final velocity (``Synchronization.No``) and,
in a few cases, a brake-phase extremum. Dense ``at_time`` sampling agrees with this
checker, so bounds are judged here, not with ``position_extrema``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from rob_twin.controllers.errors import SegmentError


@dataclass(frozen=True)
class JerkSegment:
    """Constant jerk ``j`` [rad/s^3] for ``duration`` [s] from (p0 [rad], v0 [rad/s],
    a0 [rad/s^2])."""

    duration: float
    p0: float
    v0: float
    a0: float
    j: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.duration) and self.duration >= 0.0):
            raise SegmentError("duration", self.duration, "finite and >= 0 s")

    def state(self, t: float) -> tuple[float, float, float]:
        """(p, v, a) at local time ``t`` in [0, duration] [s]."""
        j, a0, v0, p0 = self.j, self.a0, self.v0, self.p0
        return (
            p0 + t * (v0 + t * (a0 / 2 + t * j / 6)),
            v0 + t * (a0 + t * j / 2),
            a0 + t * j,
        )

    def end(self) -> tuple[float, float, float]:
        return self.state(self.duration)


@dataclass(frozen=True, kw_only=True)
class Extrema:
    """Per-quantity [min, max] of one joint's motion, and where (absolute time [s])."""

    p_min: float
    p_max: float
    v_min: float
    v_max: float
    a_min: float
    a_max: float
    t_p_min: float = 0.0
    t_p_max: float = 0.0


def chain(p0: float, v0: float, a0: float, phases) -> list[JerkSegment]:
    """Integrate ``phases`` = [(duration, jerk), ...] from an initial state into segments."""
    segs, p, v, a = [], p0, v0, a0
    for d, j in phases:
        s = JerkSegment(float(d), p, v, a, float(j))
        segs.append(s)
        p, v, a = s.end()
    return segs


def _interior_times(seg: JerkSegment) -> tuple[list[float], list[float]]:
    """Interior candidate times: (roots of v for p, roots of a for v), strictly inside."""
    d, j, a0, v0 = seg.duration, seg.j, seg.a0, seg.v0
    tp: list[float] = []
    tv: list[float] = []
    if j != 0.0:
        tv.append(-a0 / j)
        disc = a0 * a0 - 2.0 * j * v0
        if disc >= 0.0:
            r = math.sqrt(disc)
            tp += [(-a0 + r) / j, (-a0 - r) / j]
    elif a0 != 0.0:
        tp.append(-v0 / a0)
    inside = lambda ts: [t for t in ts if 0.0 < t < d]  # noqa: E731
    return inside(tp), inside(tv)


def segment_extrema(segments: list[JerkSegment], t_start: float = 0.0) -> Extrema:
    """Exact extrema of p, v, a over consecutive ``segments`` starting at ``t_start`` [s]."""
    if not segments:
        raise SegmentError("segments", segments, "at least one segment")
    pmin = (math.inf, 0.0)
    pmax = (-math.inf, 0.0)
    vmin = amin = math.inf
    vmax = amax = -math.inf
    t0 = t_start
    for s in segments:
        tp, tv = _interior_times(s)
        for t in [0.0, s.duration, *tp, *tv]:
            p, v, a = s.state(t)
            if p < pmin[0]:
                pmin = (p, t0 + t)
            if p > pmax[0]:
                pmax = (p, t0 + t)
            vmin, vmax = min(vmin, v), max(vmax, v)
            amin, amax = min(amin, a), max(amax, a)
        t0 += s.duration
    return Extrema(
        p_min=pmin[0],
        p_max=pmax[0],
        v_min=vmin,
        v_max=vmax,
        a_min=amin,
        a_max=amax,
        t_p_min=pmin[1],
        t_p_max=pmax[1],
    )


def segments_from_profile(profile, horizon_s: float | None = None) -> list[JerkSegment]:
    """One DoF of a Ruckig ``Profile``: brake phases, seven phases, then a zero-jerk tail
    (final v, a held) up to ``horizon_s`` [s] when the profile ends earlier."""
    brake = profile.brake
    phases = (
        [(d, j) for d, j in zip(brake.t, brake.j, strict=True) if d > 0.0]
        if brake.duration > 0
        else []
    )
    if phases:
        p0, v0, a0 = brake.p[0], brake.v[0], brake.a[0]
    else:
        p0, v0, a0 = profile.p[0], profile.v[0], profile.a[0]
    phases += [(d, j) for d, j in zip(profile.t, profile.j, strict=True) if d > 0.0]
    segs = chain(p0, v0, a0, phases)
    total = sum(s.duration for s in segs)
    if horizon_s is not None and horizon_s > total:
        p, v, a = segs[-1].end() if segs else (p0, v0, a0)
        segs.append(JerkSegment(horizon_s - total, p, v, a, 0.0))
    if not segs:
        segs.append(JerkSegment(0.0, p0, v0, a0, 0.0))
    return segs


def segments_from_trajectory(trajectory) -> list[list[JerkSegment]]:
    """Per-joint segments of a single-section Ruckig ``Trajectory`` over its whole duration."""
    profiles = trajectory.profiles
    if len(profiles) != 1:
        raise SegmentError("sections", len(profiles), "exactly 1 (no intermediate waypoints)")
    return [segments_from_profile(pr, trajectory.duration) for pr in profiles[0]]


def segments_from_samples(p, v, a, dt: float) -> list[JerkSegment]:
    """One joint's sampled stream (p, v, a arrays, period ``dt`` [s]) as constant-jerk segments."""
    p, v, a = (np.asarray(x, dtype=float) for x in (p, v, a))
    return [
        JerkSegment(dt, float(p[k]), float(v[k]), float(a[k]), float((a[k + 1] - a[k]) / dt))
        for k in range(len(p) - 1)
    ]


def state_at(segments: list[JerkSegment], t: float) -> tuple[float, float, float]:
    """(p, v, a) at local time ``t`` [s]; past the end the final v, a continue (zero jerk)."""
    start = 0.0
    for s in segments:
        if t <= start + s.duration:
            return s.state(max(0.0, t - start))
        start += s.duration
    p, v, a = segments[-1].end()
    return JerkSegment(t - start, p, v, a, 0.0).end()


def cut(segments: list[JerkSegment], t0: float, t1: float) -> list[JerkSegment]:
    """The part of ``segments`` (local time from 0) between t0 <= t1 [s], as new segments."""
    out, start = [], 0.0
    for s in segments:
        lo, hi = max(t0, start), min(t1, start + s.duration)
        if hi > lo:
            out.append(JerkSegment(hi - lo, *s.state(lo - start), s.j))
        start += s.duration
    if t1 > start:  # beyond the end: zero-jerk continuation of the final state
        lo = max(t0, start)
        out.append(JerkSegment(t1 - lo, *state_at(segments, lo), 0.0))
    if not out:
        out.append(JerkSegment(0.0, *state_at(segments, t0), 0.0))
    return out


@dataclass(frozen=True)
class LimitViolation:
    joint: int  # 1-based
    quantity: str  # "position" | "velocity" | "acceleration"
    value: float
    bound: tuple[float, float]


def check_limits(
    per_joint: list[list[JerkSegment]],
    max_velocity,
    max_acceleration,
    position_lower=None,
    position_upper=None,
    tolerance: float = 1e-9,
) -> tuple[list[Extrema], list[LimitViolation]]:
    """Exact extrema per joint and every bound they exceed (beyond ``tolerance``)."""
    ext = [segment_extrema(s) for s in per_joint]
    bad: list[LimitViolation] = []
    for i, e in enumerate(ext):
        vm, am = float(max_velocity[i]), float(max_acceleration[i])
        for q, lo, hi, lim in (
            ("velocity", e.v_min, e.v_max, (-vm, vm)),
            ("acceleration", e.a_min, e.a_max, (-am, am)),
        ):
            for val in (lo, hi):
                if val < lim[0] - tolerance or val > lim[1] + tolerance:
                    bad.append(LimitViolation(i + 1, q, val, lim))
        if position_lower is not None and position_upper is not None:
            lim = (float(position_lower[i]), float(position_upper[i]))
            for val in (e.p_min, e.p_max):
                if val < lim[0] - tolerance or val > lim[1] + tolerance:
                    bad.append(LimitViolation(i + 1, "position", val, lim))
    return ext, bad
