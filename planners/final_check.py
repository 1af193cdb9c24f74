"""The planner's final check of a retimed path: every 125 Hz sample measured or proven free.

A sample is either

- **measured**: one ``mj_collision`` with every geom's margin at the clearance horizon
  gives the distance of every checked pair (pairs beyond the horizon count as exactly the
  horizon away, a lower bound); a measured distance below the margin is a hit (the
  planner repairs the path there), or
- **proven free** from the last measured state: pair p's clearance is 1-Lipschitz in its
  arc s_p (the integral of the pair's speed bound L_p = sum_j R_pj v_j, the same per-pair
  radii R (``rob_twin.planners.certificate_geometry``) and per-segment joint speed bounds v
  (``rob_twin.planners.certificate_envelope``) that the certificate uses), so it stays at
  least its threshold (margin + uncertainty allowance E_p + query tolerance) while s_p
  since the measurement is below d_p - threshold_p.

The check measures the first sample, jumps to the first later sample where some pair's
bound could fail, measures it, and so on; the last sample is always measured. Samples
where the bound proves nothing (a pair within its threshold) are simply the next one
measured. The measured states and distances go to the certificate
(``pair_certificate.certify_timed(initial=...)``), whose envelope covers the continuous
time between them, skipped samples included.

Units: metres, seconds, radians.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from rob_twin.planners.certificate_envelope import plan_allowances_m, segment_speed_bounds
from rob_twin.planners.certificate_geometry import _group_geometry, covering_rows
from rob_twin.planners.collision import CheckSession, Clearance
from rob_twin.planners.plan import ClearanceRecord
from rob_twin.planners.retime import TimedPath, sample_times


@dataclass(frozen=True, kw_only=True)
class FinalCheck:
    """hit: (time [s], Clearance) of the first measured state within the margin, or None;
    record: the smallest measured clearance (None on a hit or a timeout); measured: states
    measured (-1 when the deadline passed first); proven: samples proven free without a
    query; samples: 125 Hz samples of the path; initial: (times (M,), states (M, n),
    distances (P, M)) of the measured samples, for the certificate (None on a hit);
    sampled: (times (N,), q, qd, qdd (N, n)) of the path at the sample rate
    [s, rad, rad/s, rad/s^2];
    measured_index: the samples measured, in order (None on a timeout)."""

    hit: tuple[float, Clearance] | None
    record: ClearanceRecord | None
    measured: int
    proven: int
    samples: int
    initial: tuple[np.ndarray, np.ndarray, np.ndarray] | None
    sampled: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
    measured_index: np.ndarray | None = None


def final_check(
    group,
    moving: Sequence[str],
    timed: TimedPath,
    meter: CheckSession,
    deadline: float | None = None,
) -> FinalCheck:
    """Check ``timed`` (stacked path of ``group``'s ``moving`` arms) at ``group``'s sample
    rate; ``meter``: a session of ``group.meter`` (margins at the clearance horizon) at the
    group's reference state; ``deadline``: a ``time.perf_counter()`` reading, looked at
    every 32 measurements."""
    moving = tuple(moving)
    cfg = group.config
    times = sample_times(timed.duration, cfg.rate_hz)
    q, qd, qdd = timed.evaluate(times)
    geometry = _group_geometry(group, moving, cfg.certificate.payload_reach_m)
    horizon = group.meter.config.horizon_m
    margin = cfg.collision.margin_m
    spec = cfg.certificate.spec
    threshold = margin + plan_allowances_m(geometry, q, spec) + spec.query_tolerance_m
    n_samples = times.size
    cum = np.zeros((n_samples, q.shape[1]))
    if n_samples > 1:
        accel = np.concatenate([np.asarray(group.motion_limits(a).acceleration) for a in moving])
        vmax = np.concatenate([np.asarray(group.motion_limits(a).velocity) for a in moving])
        speeds = segment_speed_bounds(times, qd, accel.astype(float), vmax.astype(float))
        cum[1:] = np.cumsum(speeds * np.diff(times)[:, None], axis=0)
    radii = geometry.radii
    # pairs at the horizon: bounded together by the covering rows (every pair's radii are
    # below one of them in every joint) against the smallest slack a pair there can have
    far_arcs = cum @ covering_rows(geometry).T  # (N, C) [m], nondecreasing
    far_limit = float(horizon - threshold.max()) if threshold.size else math.inf
    far_stop = far_stops(far_arcs, far_limit)
    index = geometry.index
    stops = far_stop.tolist()
    last = n_samples - 1
    idx: list[int] = []
    hits: list[tuple[np.ndarray, np.ndarray]] = []  # per measured state: (pairs, distances)
    best, best_i, best_p = math.inf, -1, -1
    proven = 0
    i = 0
    while True:
        if deadline is not None and len(idx) % 32 == 31 and time.perf_counter() > deadline:
            return FinalCheck(
                hit=None, record=None, measured=-1, proven=proven, samples=n_samples, initial=None
            )
        data = meter._collide(q[i])
        idx.append(i)
        near, dist = _EMPTY, _NONE
        if data.ncon:
            con = data.contact
            geom = con.geom
            near, dist = index[geom[:, 0], geom[:, 1]], con.dist.copy()  # a view into data
            if near.min() < 0:
                keep = near >= 0
                near, dist = near[keep], dist[keep]
        hits.append((near, dist))
        if near.size:  # several contacts of one pair: each is a distance of that pair
            k = int(dist.argmin())
            if dist[k] < margin:
                hit = (float(times[i]), _clearance(meter, geometry, int(near[k]), float(dist[k])))
                return FinalCheck(
                    hit=hit,
                    record=None,
                    measured=len(idx),
                    proven=proven,
                    samples=n_samples,
                    initial=None,
                    sampled=(times, q, qd, qdd),
                    measured_index=np.asarray(idx),
                )
            if dist[k] < best:
                best, best_i, best_p = float(dist[k]), i, int(near[k])
        if i == last:
            break
        nxt = _next_query(i, near, dist - threshold[near], radii, stops[i], cum)
        proven += nxt - i - 1
        i = nxt
    if best_i < 0:
        record = ClearanceRecord(horizon, None, None, True)
    else:
        pair = _clearance(meter, geometry, best_p, best).pair
        record = ClearanceRecord(best, float(times[best_i]), pair, False)
    k = np.asarray(idx)
    return FinalCheck(
        hit=None,
        record=record,
        measured=len(idx),
        proven=proven,
        samples=n_samples,
        initial=(times[k], q[k], _distance_table(hits, geometry.g1.size, horizon)),
        sampled=(times, q, qd, qdd),
        measured_index=k,
    )


def _distance_table(hits, n_pairs: int, horizon_m: float) -> np.ndarray:
    """(P, M) every pair's distance [m] at each measured state: the smallest of its
    contacts, the horizon where it has none."""
    out = np.full((n_pairs, len(hits)), horizon_m)
    rows = np.concatenate([h[0] for h in hits])
    if rows.size:
        cols = np.repeat(np.arange(len(hits)), [h[0].size for h in hits])
        np.minimum.at(out, (rows, cols), np.concatenate([h[1] for h in hits]))
    return out


_EMPTY = np.zeros(0, np.int64)
_NONE = np.zeros(0)


def far_stops(far_arcs: np.ndarray, far_limit: float) -> np.ndarray:
    """(N,) for a measurement at each sample i, the sample where the pairs at the horizon
    need the next one: the first where a covering row's arc since i (``far_arcs`` (N, C)
    [m], nondecreasing) reaches ``far_limit`` [m], one sample earlier when that arc is over
    twice the limit (the certificate's envelope between two states at the horizon needs an
    arc of at most twice the slack), and never before i + 1 nor after the last sample."""
    n = far_arcs.shape[0]
    rows = np.arange(n)
    stop = np.full(n, n - 1)
    if not far_limit > 0.0:
        return np.minimum(rows + 1, n - 1)
    for c in range(far_arcs.shape[1]):
        col = far_arcs[:, c]
        first = np.searchsorted(col, col + far_limit, side="left")  # arcs only grow
        over = np.zeros(n, bool)
        inside = first < n
        over[inside] = col[first[inside]] - col[inside] > 2.0 * far_limit
        first = np.where(over & (first > rows + 1), first - 1, first)
        stop = np.minimum(stop, first)
    return np.clip(stop, np.minimum(rows + 1, n - 1), n - 1)


def _next_query(
    i: int,
    near: np.ndarray,
    slack: np.ndarray,
    radii: np.ndarray,
    stop: int,
    cum: np.ndarray,
) -> int:
    """The first sample after ``i`` where some pair's arc since sample i could reach its
    slack (distance - threshold) [m]: every sample before it is proven free. ``stop``: that
    sample for the pairs at the horizon (``far_stops``); the pairs of the contacts within
    the horizon (``near``, one entry per contact, ``slack`` alike) are bounded one by one.
    ``cum`` (N, n): each joint's speed-bound integral from the start [rad]."""
    if near.size:
        if slack.min() <= 0.0:
            return i + 1
        if stop > i + 1:
            rows = radii[near]
            # arcs only grow along the path: the window's last sample decides most cases
            if (rows @ (cum[stop - 1] - cum[i]) < slack).all():
                return stop
            arcs = (cum[i + 1 : stop] - cum[i]) @ rows.T  # (samples, contacts) [m]
            bad = (arcs >= slack[None, :]).any(axis=1)
            return i + 1 + int(np.argmax(bad))
    return stop


def _clearance(meter: CheckSession, geometry, p: int, distance_m: float) -> Clearance:
    return Clearance(distance_m, meter._pair(int(geometry.g1[p]), int(geometry.g2[p])))
