"""TOPP-RA (toppra) as a measured baseline for the planner's retiming choice.

``planners/retime.py`` does not use TOPP-RA: TOPP-RA is time-optimal under velocity and
acceleration limits, and its acceleration is bang-bang, so jerk is unbounded at every
switch (the owners and the drives need a jerk limit). This module retimes the same
waypoint paths with toppra so the choice is a measurement, not an opinion: duration of
both, TOPP-RA's largest discrete jerk on the 125 Hz samples against the jerk limit, and how
far toppra's spline strays from the straight, collision-checked segments.
"""

from __future__ import annotations

import numpy as np
import toppra
import toppra.algorithm
import toppra.constraint

toppra.setup_logging("WARNING")


def toppra_retime(
    waypoints: np.ndarray, velocity: float, acceleration: float, rate_hz: float = 125.0
) -> dict:
    """Retime the polyline ``waypoints`` (K+1, n) [rad] with TOPP-RA under symmetric limits
    ``velocity`` [rad/s] and ``acceleration`` [rad/s^2]; figures of its 1/rate_hz samples."""
    w = np.asarray(waypoints, float)
    s = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(w, axis=0), axis=1))])
    s /= s[-1]
    path = toppra.SplineInterpolator(s, w)
    n = w.shape[1]
    v = np.full(n, velocity)
    a = np.full(n, acceleration)
    inst = toppra.algorithm.TOPPRA(
        [
            toppra.constraint.JointVelocityConstraint(np.vstack([-v, v]).T),
            toppra.constraint.JointAccelerationConstraint(np.vstack([-a, a]).T),
        ],
        path,
        parametrizer="ParametrizeConstAccel",
    )
    traj = inst.compute_trajectory(0, 0)
    t = np.arange(0.0, traj.duration, 1.0 / rate_hz)
    qdd = traj(t, 2)
    dense = path(np.linspace(0.0, 1.0, 1001))
    return {
        "duration_s": float(traj.duration),
        "max_discrete_jerk": float(np.abs(np.diff(qdd, axis=0)).max() * rate_hz),
        "max_deviation_from_checked_path_rad": float(max(_to_polyline(p, w) for p in dense)),
    }


def _to_polyline(p: np.ndarray, w: np.ndarray) -> float:
    best = np.inf
    for a, b in zip(w[:-1], w[1:], strict=True):
        d = b - a
        u = np.clip((p - a) @ d / max(float(d @ d), 1e-18), 0.0, 1.0)
        best = min(best, float(np.linalg.norm(p - (a + u * d))))
    return best
