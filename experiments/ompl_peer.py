"""OMPL (the Open Motion Planning Library, ``pip install ompl==2.0.1``, the ``bench`` extra) as
the measured peer of the planner benchmark.

The stack the issue tables use: OMPL's ``SimpleSetup`` over the moving arms' stacked joint
space (a ``RealVectorStateSpace`` boxed by the joint limits), RRTConnect or KPIECE1, motions
checked by OMPL's discrete motion validator at states no more than ``EDGE_STEP_RAD`` apart
(Euclidean in the stacked space, so on every joint too), ``simplifySolution``, then TOPP-RA
(``rob_twin.experiments.rrt_baseline.toppra_trajectory``) at the same velocity and
acceleration limits as ArmGroup, and every 125 Hz sample of the retimed trajectory checked
(a colliding sample fails the request: the spline may leave the checked segments).

Two state checks: the project's ``CheckSession.is_free`` (the planner's own check, 5 mm
margin) and ``BareCheck``, MuJoCo's bare ``mj_kinematics`` + ``mj_collision`` on the same
private model (the checker's copy: 5 mm geom margins, pairs masked by contype), free when no
contact is nearer than the margin: the cheapest check MuJoCo offers at that margin.

OMPL's random numbers come from one process-wide seed (``ompl.util.RNG.setSeed``), set once
before the first plan: a run is repeatable in the same order of requests, a single request
is not. Units: radians, seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import mujoco
import numpy as np
from rob_twin.experiments.rrt_baseline import toppra_trajectory
from rob_twin.models.errors import InvalidValueError
from rob_twin.planners.collision import CheckSession

EDGE_STEP_RAD = 0.1
SOLVE_TIME_S = 2.0
PLANNERS = ("RRTConnect", "KPIECE1")
OMPL_VERSION = "2.0.1"

_seeded = False


def missing_reason() -> str | None:
    """None when OMPL imports, else why not (the benchmark skips its peer rows with it)."""
    try:
        import ompl.base  # noqa: F401
        import ompl.geometric  # noqa: F401
    except ImportError as exc:
        return (
            f"ompl not installed ({exc}); `pip install -e '.[bench]'` brings ompl=={OMPL_VERSION}"
        )
    return None


class BareCheck:
    """MuJoCo's bare kinematics + collision on ``session``'s private model: free when no
    contact is nearer than the session's margin [m]. One MjData, one thread."""

    def __init__(self, session: CheckSession):
        self.model = session.model
        self.data = mujoco.MjData(self.model)
        self.data.qpos[:] = session.reference_qpos
        self.index = session.index
        self.margin = session.margin
        self.checks = 0

    def __call__(self, q: np.ndarray) -> bool:
        d = self.data
        d.qpos[self.index] = q
        mujoco.mj_kinematics(self.model, d)
        mujoco.mj_collision(self.model, d)
        self.checks += 1
        return d.ncon == 0 or float(d.contact.dist.min()) >= self.margin


@dataclass
class PeerResult:
    """ok: a checked trajectory came out; reason: why not; duration_s: TOPP-RA duration [s];
    waypoints: after simplification; checks: state checks of the whole request."""

    ok: bool
    reason: str = ""
    duration_s: float = float("nan")
    waypoints: int = 0
    checks: int = 0


def plan_ompl(
    is_free: Callable[[np.ndarray], bool],
    start: np.ndarray,
    goal: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    velocity: float,
    acceleration: float,
    planner: str = "RRTConnect",
    seed: int = 0,
    solve_time_s: float = SOLVE_TIME_S,
    rate_hz: float = 125.0,
) -> PeerResult:
    """Plan with OMPL's ``planner`` (one of ``PLANNERS``), simplify, retime with TOPP-RA and
    check every ``rate_hz`` sample with ``is_free``, from ``start`` to ``goal`` (stacked [rad])
    in the box [``lower``, ``upper``]. ``seed`` seeds OMPL once per process (first call).
    An unknown ``planner`` raises InvalidValueError before OMPL is touched."""
    global _seeded
    if planner not in PLANNERS:
        raise InvalidValueError("planner", planner, f"one of {', '.join(PLANNERS)}")
    from ompl import base as ob
    from ompl import geometric as og
    from ompl import util as ou

    if not _seeded:
        ou.setLogLevel(ou.LOG_ERROR)
        ou.RNG.setSeed(int(seed) + 1)  # OMPL reads 0 as "no seed"
        _seeded = True
    n = int(start.size)
    checks = 0

    def valid(state) -> bool:
        nonlocal checks
        checks += 1
        return bool(is_free(np.array(state[0:n])))

    space = ob.RealVectorStateSpace(n)
    bounds = ob.RealVectorBounds(n)
    for i in range(n):
        bounds.setLow(i, float(lower[i]))
        bounds.setHigh(i, float(upper[i]))
    space.setBounds(bounds)
    setup = og.SimpleSetup(space)
    setup.setStateValidityChecker(valid)
    si = setup.getSpaceInformation()
    si.setStateValidityCheckingResolution(EDGE_STEP_RAD / space.getMaximumExtent())
    s, g = space.allocState(), space.allocState()
    s[0:n] = [float(x) for x in start]
    g[0:n] = [float(x) for x in goal]
    setup.setStartAndGoalStates(s, g)
    setup.setPlanner(getattr(og, planner)(si))
    solved = setup.solve(solve_time_s)
    if not setup.haveExactSolutionPath():
        return PeerResult(False, f"no exact solution in {solve_time_s} s ({solved})", checks=checks)
    setup.simplifySolution()
    path = setup.getSolutionPath()
    w = np.array([path.getState(k)[0:n] for k in range(path.getStateCount())])
    if w.shape[0] < 2 or np.allclose(w[0], w[-1]):
        return PeerResult(False, "degenerate path", waypoints=w.shape[0], checks=checks)
    traj = toppra_trajectory(w, velocity, acceleration)
    if traj is None:
        return PeerResult(
            False, "TOPP-RA found no parametrization", waypoints=w.shape[0], checks=checks
        )
    t = np.append(np.arange(0.0, traj.duration, 1.0 / rate_hz), traj.duration)
    for k, row in enumerate(traj(t)):
        checks += 1
        if not is_free(row):
            return PeerResult(
                False,
                f"retimed sample at t={t[k]:.3f} s collides",
                float(traj.duration),
                w.shape[0],
                checks,
            )
    return PeerResult(True, "", float(traj.duration), w.shape[0], checks)


def timed(fn: Callable[[], PeerResult]) -> tuple[PeerResult, float]:
    """``fn()`` and its wall time [s]."""
    t0 = time.perf_counter()
    r = fn()
    return r, time.perf_counter() - t0
