"""Retiming: a jerk-limited, rest-to-rest time law along each straight segment of a path.

Choice and why: the search returns a polyline in the stacked joint space of the moving
arms whose edges were collision-checked. Each segment is timed with the time-optimal
rest-to-rest jerk-limited profile s(t) (seven phases of constant jerk), with the joint
limits scaled to the segment: ``V = min_i vmax_i / |dq_i|`` and likewise for A and J.
Every joint then moves as ``q(t) = q_k + s(t) dq``, so

- the trajectory stays *exactly* on the checked polyline (no spline cutting corners:
  what was searched is what is executed);
- |qd_i| <= vmax_i, |qdd_i| <= amax_i and |qddd_i| <= jmax_i hold by construction, and so
  do the discrete (divided-difference) velocity, acceleration and jerk of the 125 Hz
  samples, which are weighted averages of the continuous ones;
- all moving arms share one time law, hence one time base.

TOPP-RA (installed) is time-optimal for velocity and acceleration but bang-bang in
acceleration, so its jerk is unbounded at every switch; bounding the *discrete* jerk by
re-tightening accelerations (the peer's loop) can only scale accelerations down, and
with 125 Hz samples a full switch needs a <= jmax * 8 ms / 2, i.e. very slow motions. The
price of this choice: the arms come to rest at every interior waypoint (shortcutting
keeps those few).

Units: radians, seconds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from rob_twin.planners.errors import PlannerConfigError


@dataclass(frozen=True)
class JointLimits:
    """Per-joint limits of the stacked joint space: velocity [rad/s], acceleration
    [rad/s^2], jerk [rad/s^3]."""

    velocity: tuple[float, ...]
    acceleration: tuple[float, ...]
    jerk: tuple[float, ...]

    def __post_init__(self) -> None:
        n = len(self.velocity)
        for name in ("velocity", "acceleration", "jerk"):
            vals = getattr(self, name)
            if len(vals) != n:
                raise PlannerConfigError(name, vals, f"{n} values (one per joint)")
            if not all(math.isfinite(v) and v > 0 for v in vals):
                raise PlannerConfigError(name, vals, "finite values > 0")

    @staticmethod
    def uniform(n: int, velocity: float, acceleration: float, jerk: float) -> JointLimits:
        return JointLimits((velocity,) * n, (acceleration,) * n, (jerk,) * n)

    @staticmethod
    def stack(parts: Sequence[JointLimits]) -> JointLimits:
        return JointLimits(
            *(
                tuple(v for p in parts for v in getattr(p, f))
                for f in ("velocity", "acceleration", "jerk")
            )
        )


class ScalarProfile:
    """Time-optimal rest-to-rest profile s: 0 -> 1 under limits V [1/s], A [1/s^2],
    J [1/s^3] (seven phases of constant jerk)."""

    def __init__(self, V: float, A: float, J: float):
        self.limits = (float(V), float(A), float(J))  # as given (before any adjustment)
        if A * A / J * 1.0 > V:  # the acceleration limit is not reached at full speed
            A = math.sqrt(V * J)
        ramp = V / A + A / J  # time to reach V from rest
        if V * ramp <= 1.0:
            vp, cruise = V, (1.0 - V * ramp) / V
        else:
            vp = (-A * A / J + math.sqrt((A * A / J) ** 2 + 4.0 * A)) / 2.0
            if vp < A * A / J:
                vp = (J / 4.0) ** (1.0 / 3.0)
            cruise = 0.0
        ap = min(A, math.sqrt(vp * J))
        tj = ap / J
        tc = max(0.0, vp / ap - tj)
        self.durations = np.array([tj, tc, tj, cruise, tj, tc, tj])
        self.jerks = np.array([J, 0.0, -J, 0.0, -J, 0.0, J])
        self.starts = np.concatenate([[0.0], np.cumsum(self.durations)[:-1]])
        self.duration = float(self.durations.sum())
        s = v = a = 0.0
        states = []
        for dt, j in zip(self.durations, self.jerks, strict=True):
            states.append((s, v, a))
            s, v, a = (
                s + v * dt + a * dt * dt / 2 + j * dt**3 / 6,
                v + a * dt + j * dt * dt / 2,
                a + j * dt,
            )
        self.states = np.array(states)
        self.end_error = s - 1.0  # float rounding only

    def evaluate(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(s, s', s'') at times ``t`` [s] (clamped to [0, duration]: rest outside)."""
        t = np.clip(np.asarray(t, float), 0.0, self.duration)
        k = np.clip(np.searchsorted(self.starts, t, "right") - 1, 0, 6)
        tau = t - self.starts[k]
        s0, v0, a0 = self.states[k].T
        j = self.jerks[k]
        s = s0 + v0 * tau + a0 * tau**2 / 2 + j * tau**3 / 6
        v = v0 + a0 * tau + j * tau**2 / 2
        a = a0 + j * tau
        done = t >= self.duration
        s = np.where(done, 1.0, np.minimum(s, 1.0))
        return s, np.where(done, 0.0, v), np.where(done, 0.0, a)


@dataclass(frozen=True)
class TimedPath:
    """A polyline with one time law per segment; ``segment_starts`` [s] (one per
    segment, plus the end time)."""

    waypoints: np.ndarray  # (K+1, n)
    profiles: tuple[ScalarProfile, ...]
    segment_starts: np.ndarray  # (K+1,)

    @property
    def duration(self) -> float:
        return float(self.segment_starts[-1])

    def segment_of(self, t: np.ndarray) -> np.ndarray:
        k = np.searchsorted(self.segment_starts, np.asarray(t, float), "right") - 1
        return np.clip(k, 0, len(self.profiles) - 1)

    def evaluate(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(q, qd, qdd) at times ``t`` [s], each (len(t), n): every segment's profile
        (``ScalarProfile.evaluate``) at once, the same arithmetic per sample."""
        t = np.atleast_1d(np.asarray(t, float))
        starts, states, jerks, durations = self._phases
        seg = self.segment_of(t)
        local = np.clip(t - self.segment_starts[seg], 0.0, durations[seg])
        phase = (local[:, None] >= starts[seg]).sum(axis=1) - 1  # searchsorted "right" - 1
        phase = np.clip(phase, 0, 6)
        tau = local - starts[seg, phase]
        s0, v0, a0 = states[seg, phase].T
        j = jerks[seg, phase]
        s = s0 + v0 * tau + a0 * tau**2 / 2 + j * tau**3 / 6
        v = v0 + a0 * tau + j * tau**2 / 2
        a = a0 + j * tau
        done = local >= durations[seg]
        s = np.where(done, 1.0, np.minimum(s, 1.0))
        v, a = np.where(done, 0.0, v), np.where(done, 0.0, a)
        dq = np.diff(self.waypoints, axis=0)[seg]
        q = self.waypoints[seg] + s[:, None] * dq
        return q, v[:, None] * dq, a[:, None] * dq

    @cached_property
    def _phases(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every segment's phase starts (K, 7) [s], phase start states (K, 7, 3), jerks
        (K, 7) and duration (K,) [s], stacked for ``evaluate``."""
        p = self.profiles
        return (
            np.array([x.starts for x in p]),
            np.array([x.states for x in p]),
            np.array([x.jerks for x in p]),
            np.array([x.duration for x in p]),
        )

    def slowed(self, k: int, factor: float) -> TimedPath:
        """This path with segment ``k`` retimed under its velocity and acceleration limits
        times ``factor`` (in (0, 1); jerk limit kept); later segments shift in time. The
        segments are rest-to-rest, so no other segment's motion changes."""
        if not 0.0 < factor < 1.0:
            raise PlannerConfigError("factor", factor, "in (0, 1)")
        if not 0 <= k < len(self.profiles):
            raise PlannerConfigError("k", k, f"a segment index in [0, {len(self.profiles) - 1}]")
        V, A, J = self.profiles[k].limits
        profiles = list(self.profiles)
        profiles[k] = ScalarProfile(V * factor, A * factor, J)
        starts = np.concatenate([[0.0], np.cumsum([p.duration for p in profiles])])
        return TimedPath(self.waypoints, tuple(profiles), starts)


def time_path(waypoints: Sequence[np.ndarray], limits: JointLimits) -> TimedPath:
    """Time each segment of ``waypoints`` (stacked joint states) rest-to-rest within
    ``limits``; zero-length segments are dropped."""
    pts = [np.asarray(waypoints[0], float)]
    for p in waypoints[1:]:
        p = np.asarray(p, float)
        if np.max(np.abs(p - pts[-1])) > 1e-12:
            pts.append(p)
    if len(pts) == 1:
        pts.append(pts[0].copy())
    vmax, amax, jmax = (
        np.asarray(getattr(limits, f)) for f in ("velocity", "acceleration", "jerk")
    )
    profiles = []
    for a, b in zip(pts, pts[1:], strict=False):
        dq = np.abs(b - a)
        moving = dq > 0
        if not moving.any():
            profiles.append(ScalarProfile(1.0, 1.0, 1.0))
            continue
        profiles.append(
            ScalarProfile(
                float(np.min(vmax[moving] / dq[moving])),
                float(np.min(amax[moving] / dq[moving])),
                float(np.min(jmax[moving] / dq[moving])),
            )
        )
    starts = np.concatenate([[0.0], np.cumsum([p.duration for p in profiles])])
    return TimedPath(np.array(pts), tuple(profiles), starts)


def sample_times(duration: float, rate_hz: float) -> np.ndarray:
    """The shared time base: 0, 1/rate, ... up to the first sample at or after ``duration``."""
    n = max(1, math.ceil(duration * rate_hz - 1e-9))
    return np.arange(n + 1) / rate_hz


@dataclass(frozen=True)
class LimitReport:
    """Largest ratio to the limit over every joint and sample (<= 1 means respected):
    velocity, acceleration (from the analytic samples) and the discrete velocity,
    acceleration and jerk from finite differences of the sampled positions."""

    velocity: float
    acceleration: float
    discrete_velocity: float
    discrete_acceleration: float
    discrete_jerk: float

    def respected(self, slack: float = 1e-6) -> bool:
        return max(self.__dict__.values()) <= 1.0 + slack


def limit_report(
    q: np.ndarray, qd: np.ndarray, qdd: np.ndarray, dt: float, limits: JointLimits
) -> LimitReport:
    vmax, amax, jmax = (
        np.asarray(getattr(limits, f)) for f in ("velocity", "acceleration", "jerk")
    )

    def ratio(x: np.ndarray, lim: np.ndarray) -> float:
        return float(np.max(np.abs(x) / lim)) if x.size else 0.0

    d1 = np.diff(q, axis=0) / dt
    d2 = np.diff(q, 2, axis=0) / dt**2
    d3 = np.diff(q, 3, axis=0) / dt**3
    return LimitReport(
        ratio(qd, vmax), ratio(qdd, amax), ratio(d1, vmax), ratio(d2, amax), ratio(d3, jmax)
    )
