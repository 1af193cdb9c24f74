"""A plain stacked-joint-space planner as the measured baseline of the planner benchmark.

The approach of the stacked-CBiRRT peers, written here from the textbook description:
RRT-Connect over the two arms' stacked joint vector, every edge checked at states no more
than ``EDGE_STEP_RAD`` apart on any joint (in order, start to end), random shortcut
smoothing with the same edge checks, TOPP-RA retiming under the same velocity and
acceleration limits, and every 125 Hz sample of the retimed trajectory checked (a sample
in collision fails the request: TOPP-RA's spline may leave the checked segments).

Nothing of ``rob_twin.planners.search`` or ``rob_twin.planners.retime`` is used; the state check is
the same ``CheckSession.is_free`` (same margin) as the planner's, so the figures compare the
algorithms, not the collision checkers.

Units: radians, seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import toppra
import toppra.algorithm
import toppra.constraint
from rob_twin.planners.collision import CheckSession

toppra.setup_logging("WARNING")

EDGE_STEP_RAD = 0.1
EXTEND_STEP_RAD = 0.5
MAX_ITERATIONS = 5000
SHORTCUT_ROUNDS = 100


@dataclass
class BaselineResult:
    """ok: a checked trajectory came out; reason: why not; duration_s: TOPP-RA duration;
    samples: retimed samples checked; waypoints: after smoothing."""

    ok: bool
    reason: str = ""
    duration_s: float = float("nan")
    samples: int = 0
    waypoints: int = 0


def _edge_free(a: np.ndarray, b: np.ndarray, is_free) -> bool:
    n = max(1, int(np.ceil(np.max(np.abs(b - a)) / EDGE_STEP_RAD)))
    return all(is_free(a + (b - a) * (k / n)) for k in range(1, n + 1))


def _connect_trees(start, goal, lo, hi, is_free, rng) -> list[np.ndarray] | None:
    trees = [([start], [-1]), ([goal], [-1])]
    start_tree = trees[0]

    def extend(tree, target):
        nodes, parents = tree
        arr = np.asarray(nodes)
        near = int(np.argmin(((arr - target) ** 2).sum(axis=1)))
        delta = target - nodes[near]
        dist = float(np.linalg.norm(delta))
        reached = dist <= EXTEND_STEP_RAD
        new = target if reached else nodes[near] + delta * (EXTEND_STEP_RAD / dist)
        if not _edge_free(nodes[near], new, is_free):
            return "trapped"
        nodes.append(new)
        parents.append(near)
        return "reached" if reached else "advanced"

    def branch(tree, i):
        nodes, parents = tree
        out = []
        while i >= 0:
            out.append(nodes[i])
            i = parents[i]
        return out

    for _ in range(MAX_ITERATIONS):
        a, b = trees
        if extend(a, rng.uniform(lo, hi)) != "trapped":
            target = a[0][-1]
            status = "advanced"
            while status == "advanced":
                status = extend(b, target)
            if status == "reached":
                pa, pb = branch(a, len(a[0]) - 1), branch(b, len(b[0]) - 1)
                path = pa[::-1] + pb[1:]
                return path if a is start_tree else path[::-1]
        trees.reverse()
    return None


def _shortcut(path: list[np.ndarray], is_free, rng) -> list[np.ndarray]:
    for _ in range(SHORTCUT_ROUNDS):
        if len(path) < 3:
            break
        i, j = sorted(rng.choice(len(path), 2, replace=False))
        if j - i >= 2 and _edge_free(path[i], path[j], is_free):
            path = path[: i + 1] + path[j:]
    return path


def toppra_trajectory(waypoints: np.ndarray, velocity: float, acceleration: float):
    """TOPP-RA through ``waypoints`` (rows, [rad]; a cubic spline over normalised arc
    length) at ``velocity`` [rad/s] and ``acceleration`` [rad/s^2] on every joint, from and
    to rest; None when it finds no parametrization."""
    s = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(waypoints, axis=0), axis=1))])
    s /= s[-1]
    path = toppra.SplineInterpolator(s, waypoints)
    n = waypoints.shape[1]
    v, a = np.full(n, velocity), np.full(n, acceleration)
    inst = toppra.algorithm.TOPPRA(
        [
            toppra.constraint.JointVelocityConstraint(np.vstack([-v, v]).T),
            toppra.constraint.JointAccelerationConstraint(np.vstack([-a, a]).T),
        ],
        path,
        parametrizer="ParametrizeConstAccel",
    )
    return inst.compute_trajectory(0, 0)


def plan_baseline(
    session: CheckSession,
    start: np.ndarray,
    goal: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    velocity: float,
    acceleration: float,
    seed: int,
    rate_hz: float = 125.0,
) -> BaselineResult:
    """Plan, smooth, retime and check from ``start`` to ``goal`` (stacked, [rad])."""
    rng = np.random.default_rng(seed)
    is_free = session.is_free
    if _edge_free(start, goal, is_free):
        path = [start, goal]
    else:
        path = _connect_trees(start, goal, lower, upper, is_free, rng)
        if path is None:
            return BaselineResult(False, f"no path after {MAX_ITERATIONS} iterations")
        path = _shortcut(path, is_free, rng)
    w = np.asarray(path)
    traj = toppra_trajectory(w, velocity, acceleration)
    if traj is None:
        return BaselineResult(False, "TOPP-RA found no parametrization", waypoints=len(path))
    t = np.append(np.arange(0.0, traj.duration, 1.0 / rate_hz), traj.duration)
    q = traj(t)
    for k, row in enumerate(q):
        if not is_free(row):
            return BaselineResult(
                False,
                f"retimed sample at t={t[k]:.3f} s collides",
                float(traj.duration),
                k + 1,
                len(path),
            )
    return BaselineResult(True, "", float(traj.duration), len(t), len(path))
