"""Benchmark: how few states the final check could measure if it knew distances farther out
(simulated; a floor for the check stage, not a planner).

The final check (``rob_twin.planners.final_check``) measures every checked pair up to the
clearance horizon (4 cm) and proves later samples free while each pair's arc stays below its
slack; every pair beyond the horizon counts as exactly the horizon away. How much would a
longer horizon save? This benchmark replays the walk (``measured_states``) on the final
checks of the study, hard ROB and hard stand plans with each pair's distance known up to a
cap: its MuJoCo distance measured with a 0.5 m horizon (``pair_distances``), capped per pair.
Caps: 4 cm everywhere (the planner's setting: the replay reproduces the check's count),
8 cm, 16 cm and 0.5 m everywhere, and 0.5 m for arm-against-arm pairs only (4 cm for the
rest). Beside it, the cost of one measurement (``CheckSession.contacts_of``) at horizons of
4, 8 and 16 cm on the states the paths pass through.

Reading it: the check stage cannot go below the replayed count times the cost of one
measurement at 4 cm, whatever distance bound beyond the horizon one had for free.
Units: counts, microseconds per state.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from contextlib import contextmanager

import numpy as np
from rob_twin.experiments.hard_problems import place_start
from rob_twin.experiments.registry import benchmark
from rob_twin.planners.geom_pairs import PairClass

WIDE_HORIZON_M = 0.5
COST_HORIZONS_M = (0.04, 0.08, 0.16)


@contextmanager
def captured_final_checks():
    """The (CheckBounds, moving arms, reference qpos, states measured) of every final check
    that passed while the block runs (wraps the name ``rob_twin.planners.refine`` calls,
    for the block only)."""
    from rob_twin.planners import refine
    from rob_twin.planners.final_check import check_bounds

    real = refine.final_check
    found: list[tuple] = []

    def capture(group, moving, timed, meter, deadline=None):
        fc = real(group, moving, timed, meter, deadline)
        if fc.hit is None and fc.measured > 0:
            bounds = check_bounds(group, moving, timed)
            found.append((bounds, tuple(moving), group.reference_qpos.copy(), fc.measured))
        return fc

    refine.final_check = capture
    try:
        yield found
    finally:
        refine.final_check = real


def checker_at(group, horizon_m: float):
    """A CollisionChecker of ``group``'s model and arms measuring up to ``horizon_m`` [m]
    (the group's measuring settings otherwise; the weak-pair warning is the group's to say)."""
    import warnings
    from dataclasses import replace

    from rob_twin.planners.collision import CollisionChecker

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return CollisionChecker(
            group.model,
            {a: group.checker.arm_joints[a] for a in group.checker.arm_names},
            replace(group.meter.config, horizon_m=horizon_m),
        )


def pair_distances(
    checker, moving: Sequence[str], reference_qpos: np.ndarray, bounds
) -> np.ndarray:
    """(P, N) every checked pair's distance [m] at every sample of ``bounds`` (CheckBounds),
    from one ``mj_collision`` per sample on ``checker`` (a CollisionChecker whose horizon is
    the cap of what is measured: pairs farther apart read as that horizon)."""
    from rob_twin.planners.final_check import _checked_contacts, _distance_table

    session = checker.session(tuple(moving), reference_qpos)
    checked = _checked_contacts(session.contacts_of(bounds.q), bounds.geometry.index)
    return _distance_table(
        [checked], bounds.geometry.g1.size, bounds.times.size, checker.config.horizon_m
    )


def measured_states(bounds, distances: np.ndarray, caps: np.ndarray) -> int:
    """States the final check's walk measures on ``bounds`` (CheckBounds) when pair p's
    distance at sample k is known as min(``distances[p, k]``, ``caps[p]``) [m]: from each
    measured state, the next is the first sample where some pair's arc (its per-joint radii
    times each joint's speed-bound integral) reaches its slack (distance - threshold); a
    pair at its cap ends the step one sample earlier where its arc there is over twice its
    slack (the certificate's envelope needs that, as in ``final_check.far_stops``). The
    first and last samples are measured."""
    threshold, radii, cum = bounds.threshold, bounds.geometry.radii, bounds.cum
    n = bounds.times.size
    known = np.minimum(distances, caps[:, None])
    at_cap = distances >= caps[:, None]
    i, count = 0, 1
    while i < n - 1:
        slack = known[:, i] - threshold
        if slack.min() <= 0.0:
            i, count = i + 1, count + 1
            continue
        arcs = (cum[i + 1 :] - cum[i]) @ radii.T  # (later samples, pairs) [m]
        reach = arcs >= slack[None, :]
        reaches = reach.any(axis=0)
        first = np.where(reaches, reach.argmax(axis=0), n - 1 - (i + 1))  # per pair
        step = first.copy()
        far = at_cap[:, i] & reaches & (first > 0)
        over = arcs[first[far], np.flatnonzero(far)] > 2.0 * slack[far]
        step[np.flatnonzero(far)[over]] -= 1
        i, count = min(i + 1 + int(step.min()), n - 1), count + 1
    return count


def measurement_cost_us(group, found: list, horizon_m: float, every: int = 3) -> float:
    """Median over the paths of the cost [us] of one measurement (``contacts_of``) with
    every geom's margin at ``horizon_m``, on every ``every``-th sample of each path."""
    checker = checker_at(group, horizon_m)
    costs = []
    for bounds, moving, reference, _ in found:
        session = checker.session(moving, reference)
        states = bounds.q[::every]
        session.contacts_of(states[:2])  # this thread's MjData, made once
        t0 = time.perf_counter()
        session.contacts_of(states)
        costs.append((time.perf_counter() - t0) / len(states) * 1e6)
    return round(float(np.median(costs)), 1)


def floor_of_set(group, requests) -> dict:
    """Plan ``requests`` ((start or None, goals, seed)) from the group's reference state and
    replay every passed final check at each cap; the costs of one measurement by horizon."""
    reference = group.reference_qpos.copy()
    with captured_final_checks() as found:
        for start, goals, seed in requests:
            place_start(group, reference, start)
            group.plan(goals, seed=seed)
    group.set_qpos(reference)
    wide = checker_at(group, WIDE_HORIZON_M)
    horizon = group.meter.config.horizon_m
    counts = {"planner": 0, "at_horizon": 0, "8cm": 0, "16cm": 0, "50cm": 0, "arm_arm_50cm": 0}
    for bounds, moving, ref, measured in found:
        d = pair_distances(wide, moving, ref, bounds)
        arm_arm = bounds.geometry.pair_class == int(PairClass.ARM_ARM)
        ones = np.ones(d.shape[0])
        counts["planner"] += measured
        counts["at_horizon"] += measured_states(bounds, d, horizon * ones)
        counts["8cm"] += measured_states(bounds, d, 0.08 * ones)
        counts["16cm"] += measured_states(bounds, d, 0.16 * ones)
        counts["50cm"] += measured_states(bounds, d, WIDE_HORIZON_M * ones)
        counts["arm_arm_50cm"] += measured_states(
            bounds, d, np.where(arm_arm, WIDE_HORIZON_M, horizon)
        )
    cost = {f"{h * 100:.0f}cm": measurement_cost_us(group, found, h) for h in COST_HORIZONS_M}
    return {
        "plans": len(found),
        "measured_states": counts,
        "measured_states_share_of_planner": {
            k: round(v / max(1, counts["planner"]), 3) for k, v in counts.items()
        },
        "measurement_cost_us_median": cost,
    }


@benchmark("planner-floor")
def run() -> dict:
    from rob_twin.experiments.bench_stages import over_problem_sets

    load_before = os.getloadavg()
    sets = over_problem_sets(floor_of_set)
    return {
        "sets": sets,
        "wide_horizon_m": WIDE_HORIZON_M,
        "load_average_before_after": [
            [round(x, 2) for x in load_before],
            [round(x, 2) for x in os.getloadavg()],
        ],
        "note": "replays of the planner's final-check walk with distances known beyond its "
        "4 cm horizon (MuJoCo distances at a 0.5 m horizon), and the cost of one measurement "
        "by horizon; simulated planning only, no hardware",
        "hardware_io": False,
        "simulated": True,
    }
