"""The Lipschitz envelope between measured samples: speed bounds, arc coordinates and the
envelope's exact minimum on every segment.

- **Speed bound per 125 Hz segment.** Under the acceleration limit a, |qd| on [t_k, t_k+1]
  is at most (|qd_k| + |qd_k+1| + a dt) / 2 (and at most the velocity limit).
- **Arc coordinate.** s(t) = the integral of the pair's L (``_arc``) across every 125 Hz
  segment between two queries, so queries may skip samples.
- **Exact envelope minimum.** d is 1-Lipschitz in s; prefix maxima A_k of (l_i + s_i) and
  suffix maxima B_k of (l_i - s_i) give each segment's minimum at the crossing
  s* = (A_k - B_k)/2 (clamped into the segment), for all pairs at once (numpy).
- **Uncertainty.** Each pair's allowance E_pair over a plan (``plan_allowances_m``,
  ``rob_twin.planners.uncertainty``) lowers its envelope.

Units: metres, seconds, radians.
"""

from __future__ import annotations

import numpy as np
from rob_twin.planners.certificate_geometry import PairGeometry
from rob_twin.planners.geom_pairs import PairClass
from rob_twin.planners.uncertainty import UncertaintySpec, pair_allowances_m


def segment_speed_bounds(
    t: np.ndarray, qd: np.ndarray, accel: np.ndarray, vmax: np.ndarray
) -> np.ndarray:
    """(K, n) per segment and joint: the largest |qd| [rad/s] any motion through the sample
    velocities can reach under the acceleration limit (capped at the velocity limit)."""
    dt = np.diff(t)[:, None]
    a = np.abs(qd)
    v = (a[:-1] + a[1:] + accel[None, :] * dt) / 2.0
    return np.minimum(v, np.maximum(vmax[None, :], np.maximum(a[:-1], a[1:])))


def envelope_minima(
    s: np.ndarray, lower: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Exact minimum of the lower envelope max_i(l_i - |s - s_i|) on every segment.

    s: (P, N) nondecreasing arc coordinates per pair (d is 1-Lipschitz in s); lower: (P, N).
    Returns per pair and segment (P, N-1): the minimum, its s, and the indices of the two
    active queries (the one before, the one after)."""
    a_val = lower + s
    b_val = lower - s
    a_idx = _running_argmax(a_val)
    b_idx = _running_argmax(b_val[:, ::-1])[:, ::-1]
    b_idx = b_val.shape[1] - 1 - b_idx
    rows = np.arange(s.shape[0])[:, None]
    A = a_val[rows, a_idx][:, :-1]
    B = b_val[rows, b_idx][:, 1:]
    sc = np.clip((A - B) / 2.0, s[:, :-1], s[:, 1:])
    val = np.maximum(A - sc, B + sc)
    return val, sc, a_idx[:, :-1], b_idx[:, 1:]


def _running_argmax(x: np.ndarray) -> np.ndarray:
    """Index of the running maximum along axis 1 (first index on ties)."""
    best = np.maximum.accumulate(x, axis=1)
    is_new = x >= best
    idx = np.where(is_new, np.arange(x.shape[1])[None, :], 0)
    return np.maximum.accumulate(idx, axis=1)


def plan_allowances_m(geometry: PairGeometry, q: np.ndarray, spec: UncertaintySpec) -> np.ndarray:
    """(P,) each pair's uncertainty allowance E [m] over a plan whose samples are ``q``
    (N, n) [rad] (the largest |rotation| of each joint over the samples)."""
    theta = np.max(np.abs(q), axis=0)
    cached = geometry.__dict__.get("_allowance_inputs")
    if cached is None:  # constant per geometry
        world = geometry.pair_class == int(PairClass.ARM_WORLD)
        movers = (geometry.radii > 0).any(axis=1).astype(float)
        cached = geometry.__dict__["_allowance_inputs"] = (world, movers)
    return pair_allowances_m(geometry.radii, theta, cached[0], cached[1], spec)


def _arc(query_t: np.ndarray, sample_t: np.ndarray, seg_L: np.ndarray) -> np.ndarray:
    """(P, M) arc coordinate s = integral of each pair's L [m/s] from ``query_t[0]`` to each
    query time [s]. seg_L (P, K) is constant on each 125 Hz segment of ``sample_t``; the
    integral runs across every segment between two queries, so queries may skip samples
    (the final check measures only some of them)."""
    return _cumulative_at(query_t, sample_t, seg_L.T).T


def _cumulative_at(query_t: np.ndarray, sample_t: np.ndarray, rate: np.ndarray) -> np.ndarray:
    """(M, ...) integral of a per-segment constant ``rate`` (K, ...) from ``query_t[0]`` to
    each query time: exact for a piecewise-constant rate, whatever samples lie between."""
    query_t = np.asarray(query_t, float)
    dt = np.diff(sample_t)
    at_samples = np.concatenate(
        [
            np.zeros((1,) + rate.shape[1:]),
            np.cumsum(rate * dt.reshape((-1,) + (1,) * (rate.ndim - 1)), axis=0),
        ]
    )
    k = _segment_of(query_t, sample_t)
    into = (query_t - sample_t[k]).reshape((-1,) + (1,) * (rate.ndim - 1))
    out = at_samples[k] + rate[k] * into
    return out - out[:1]


def _segment_of(times: np.ndarray, sample_t: np.ndarray) -> np.ndarray:
    """The 125 Hz segment holding each time (a sample time starts its segment; the last
    sample time belongs to the last segment)."""
    return np.clip(np.searchsorted(sample_t, times, side="right") - 1, 0, sample_t.size - 2)
