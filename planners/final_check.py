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
measured. Weak pairs (a MuJoCo collider known to misjudge them, e.g. box vs box) are
measured with coal instead (``rob_twin.planners.weak_judge``). The measured states and
distances go to the certificate (``pair_certificate.certify_timed(initial=...)``), whose
envelope covers the continuous time between them, skipped samples included.

Units: metres, seconds, radians.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from rob_twin.planners.certificate_envelope import plan_allowances_m, segment_speed_bounds
from rob_twin.planners.certificate_geometry import PairGeometry, _group_geometry, covering_rows
from rob_twin.planners.collision import CheckSession, Clearance
from rob_twin.planners.plan import ClearanceRecord
from rob_twin.planners.retime import TimedPath, sample_times
from rob_twin.planners.weak_judge import judge_for


@dataclass(frozen=True, kw_only=True)
class FinalCheck:
    """hit: (time [s], Clearance) of the first measured state within the margin, or None;
    record: the smallest measured clearance (None on a hit or a timeout); measured: states
    measured (-1 when the deadline passed first); proven: samples proven free without a
    query; samples: 125 Hz samples of the path; initial: (times (M,), states (M, n),
    distances (P, M)) of the measured samples, for the certificate (None on a hit);
    sampled: (times (N,), q, qd, qdd (N, n)) of the path at the sample rate
    [s, rad, rad/s, rad/s^2];
    measured_index: the samples measured, in order (None on a timeout);
    set_by_near: measurements whose successor a pair within the horizon set (earlier than
    the bound of the pairs beyond it would)."""

    hit: tuple[float, Clearance] | None
    record: ClearanceRecord | None
    measured: int
    proven: int
    samples: int
    initial: tuple[np.ndarray, np.ndarray, np.ndarray] | None
    sampled: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
    measured_index: np.ndarray | None = None
    set_by_near: int = 0


@dataclass(frozen=True)
class CheckBounds:
    """What the final check knows of a path before measuring it: the samples (times (N,)
    [s], q, qd, qdd (N, n) [rad, rad/s, rad/s^2]), the pairs' geometry, each pair's
    threshold (P,) [m], each joint's speed-bound integral from the start ``cum`` (N, n)
    [rad], and each sample's ``far_stop`` (N,) (``far_stops``)."""

    times: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    geometry: PairGeometry
    threshold: np.ndarray
    cum: np.ndarray
    far_stop: np.ndarray
    margin_m: float
    horizon_m: float


def check_bounds(group, moving: Sequence[str], timed: TimedPath) -> CheckBounds:
    """The samples of ``timed`` at ``group``'s rate and the bounds the check walks by."""
    moving = tuple(moving)
    cfg = group.config
    times = sample_times(timed.duration, cfg.rate_hz)
    q, qd, qdd = timed.evaluate(times)
    geometry = _group_geometry(group, moving, cfg.certificate.payload_reach_m)
    horizon = group.meter.config.horizon_m
    margin = cfg.collision.margin_m
    spec = cfg.certificate.spec
    threshold = margin + plan_allowances_m(geometry, q, spec) + spec.query_tolerance_m
    cum = np.zeros((times.size, q.shape[1]))
    if times.size > 1:
        accel = np.concatenate([np.asarray(group.motion_limits(a).acceleration) for a in moving])
        vmax = np.concatenate([np.asarray(group.motion_limits(a).velocity) for a in moving])
        speeds = segment_speed_bounds(times, qd, accel.astype(float), vmax.astype(float))
        cum[1:] = np.cumsum(speeds * np.diff(times)[:, None], axis=0)
    # pairs at the horizon: bounded together by the covering rows (every pair's radii are
    # below one of them in every joint) against the smallest slack a pair there can have
    far_arcs = cum @ covering_rows(geometry).T  # (N, C) [m], nondecreasing
    far_limit = float(horizon - threshold.max()) if threshold.size else math.inf
    return CheckBounds(
        times, q, qd, qdd, geometry, threshold, cum, far_stops(far_arcs, far_limit), margin, horizon
    )


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
    before each batch of at most 32 measurements.

    The states are measured in batches along the chain of far stops (what the bound of
    the pairs beyond the horizon allows: every state on the study set, 96 % on hard ROB);
    the first state of a batch where a hit or a near pair leaves the chain ends the batch
    there, and the chain starts anew from that state's next query. The states measured and
    every figure are those of measuring one state at a time; the states of a batch after
    the one that left it are measured for nothing (counted in ``meter.checks``)."""
    b = check_bounds(group, moving, timed)
    times, q, geometry, threshold, cum = b.times, b.q, b.geometry, b.threshold, b.cum
    margin, far_stop, radii, index = b.margin_m, b.far_stop, geometry.radii, geometry.index
    judge = judge_for(group, geometry)  # weak pairs: coal's distances, not MuJoCo's contacts
    if judge is not None:
        index = judge.mujoco_index
    n_samples = times.size
    stops = far_stop.tolist()
    last = n_samples - 1
    idx: list[int] = []
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (pairs, distances, ordinals)
    best, best_i, best_p = math.inf, -1, -1
    proven = set_by_near = 0
    # the first batch is as long as any (the study pairs then take 3 batches, not 7: check
    # stage 2.0 -> 1.8 ms; the hard sets measure 2 % more states for nothing, same time);
    # after a state leaves the chain, batches start again from one state and double
    i, batch = 0, _MAX_BATCH
    while True:
        if deadline is not None and idx and time.perf_counter() > deadline:
            return FinalCheck(
                hit=None, record=None, measured=-1, proven=proven, samples=n_samples, initial=None
            )
        chain = far_chain(stops, i, last, batch)
        if judge is None:
            near, dist, state = _checked_contacts(meter.contacts_of(q[chain]), index)
        else:  # the weak pairs' poses from the same kinematics as MuJoCo's contacts
            contacts, pos, mat = meter.contacts_and_poses_of(q[chain], judge.geoms)
            near, dist, state = _checked_contacts(contacts, index)
            near, dist, state = judge.merged(near, dist, state, judge.at_poses(pos, mat))
        at = chain[state]  # each contact's sample
        stop = far_stop[at]
        slack = dist - threshold[near]
        # a state leaves the chain when it is a hit, or when one of its near pairs' arc could
        # reach the pair's slack before the chain's next state (the last sample has no next
        # state: it leaves only by a hit)
        arc = np.einsum("kj,kj->k", radii[near], cum[stop - 1] - cum[at])
        leaves = (dist < margin) | ((stop > at + 1) & ~(arc < slack))
        left = bool(leaves.any())
        k = int(state[int(np.argmax(leaves))]) if left else chain.size - 1
        proven += int(chain[k] - chain[0]) - k  # the samples between the states walked
        taken = state <= k
        if not taken.all():
            near, dist, state, slack = near[taken], dist[taken], state[taken], slack[taken]
        if near.size:
            j = int(dist.argmin())  # the first smallest, in the order measured
            if dist[j] < margin:
                idx.extend(chain[: k + 1].tolist())
                return FinalCheck(
                    hit=(
                        float(times[chain[state[j]]]),
                        _clearance(meter, geometry, int(near[j]), float(dist[j])),
                    ),
                    record=None,
                    measured=len(idx),
                    proven=proven,
                    samples=n_samples,
                    initial=None,
                    sampled=(times, q, b.qd, b.qdd),
                    measured_index=np.asarray(idx),
                    set_by_near=set_by_near,
                )
            if dist[j] < best:
                best, best_i, best_p = float(dist[j]), int(chain[state[j]]), int(near[j])
            found.append((near, dist, state + len(idx)))
        idx.extend(chain[: k + 1].tolist())
        i = int(chain[k])
        if i == last:
            break
        if left:  # a near pair sets the next measurement: the chain starts anew from it
            mine = state == k
            nxt = _next_query(i, near[mine], slack[mine], radii, stops[i], cum)
            set_by_near += nxt != stops[i]
            batch = 1
        else:
            nxt = stops[i]
            batch = min(2 * batch, _MAX_BATCH)
        proven += nxt - i - 1
        i = nxt
    if best_i < 0:
        record = ClearanceRecord(b.horizon_m, None, None, True)
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
        initial=(times[k], q[k], _distance_table(found, geometry.g1.size, len(idx), b.horizon_m)),
        sampled=(times, q, b.qd, b.qdd),
        measured_index=k,
        set_by_near=set_by_near,
    )


def _distance_table(found, n_pairs: int, n_states: int, horizon_m: float) -> np.ndarray:
    """(P, M) every pair's distance [m] at each measured state: the smallest of its
    contacts, the horizon where it has none. ``found``: (pairs, distances, ordinal of the
    measured state) of the checked contacts."""
    out = np.full((n_pairs, n_states), horizon_m)
    if found:
        rows, dist, cols = (np.concatenate(parts) for parts in zip(*found, strict=True))
        np.minimum.at(out, (rows, cols), dist)
    return out


def _checked_contacts(contacts, index: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The checked ones of ``contacts`` (``CheckSession.contacts_of``): their pair numbers
    (``index``: geom x geom -> pair or -1), distances [m] and the number of their state."""
    geoms, dist, counts = contacts
    near = index[geoms[:, 0], geoms[:, 1]]
    state = np.repeat(np.arange(counts.size), counts)
    keep = near >= 0
    if not keep.all():
        near, dist, state = near[keep], dist[keep], state[keep]
    return near, dist, state


def far_chain(stops: list[int], i: int, last: int, length: int) -> np.ndarray:
    """Up to ``length`` samples from ``i`` on, each the stop (``far_stops``) of the one
    before, ending at ``last``: the states measured next when no pair comes within the
    horizon."""
    chain = [i]
    while len(chain) < length and chain[-1] != last:
        chain.append(stops[chain[-1]])
    return np.asarray(chain)


_MAX_BATCH = 32  # states measured at most between two looks at the deadline


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
