"""bench planner-floor: the replayed final-check walk measures what the planner's check
measured at the planner's horizon, never more with distances known farther out, and every
state where nothing is proven; the capture is removed afterwards."""

from __future__ import annotations

import numpy as np
from rob_twin.experiments.bench_floor import (
    WIDE_HORIZON_M,
    captured_final_checks,
    checker_at,
    measured_states,
    pair_distances,
)
from rob_twin.experiments.bench_stages import _study_requests
from rob_twin.models.loading import keyframe_state
from rob_twin.models.names import group_arms
from rob_twin.planners import refine
from rob_twin.planners.group import ArmGroup


def _study_checks(n: int):
    m, home = keyframe_state()
    group = ArmGroup(m, group_arms())
    group.set_qpos(home)
    real = refine.final_check
    with captured_final_checks() as found:
        for _, goals, seed in _study_requests(group)[:n]:
            assert group.plan(goals, seed=seed).ok
    assert refine.final_check is real
    return group, found, checker_at(group, WIDE_HORIZON_M)


def test_replay_reproduces_the_check_and_longer_caps_never_measure_more():
    group, found, wide = _study_checks(3)
    assert len(found) == 3
    horizon = group.meter.config.horizon_m
    for bounds, moving, reference, measured in found:
        d = pair_distances(wide, moving, reference, bounds)
        assert d.shape == (bounds.geometry.g1.size, bounds.times.size)
        assert d.min() >= bounds.threshold.max()  # a passed check: every sample clear
        ones = np.ones(d.shape[0])
        at_horizon = measured_states(bounds, d, horizon * ones)
        assert at_horizon == measured
        counts = [measured_states(bounds, d, c * ones) for c in (horizon, 0.08, 0.16, 0.5)]
        assert all(a >= b for a, b in zip(counts, counts[1:], strict=False))
        assert counts[-1] < counts[0]  # the study's arms are mostly farther apart than 4 cm


def test_a_pair_within_its_threshold_measures_every_sample():
    _, found, wide = _study_checks(1)
    bounds, moving, reference, _ = found[0]
    d = pair_distances(wide, moving, reference, bounds)
    d[0, :] = bounds.threshold[0]  # no slack: nothing can be proven
    assert measured_states(bounds, d, np.full(d.shape[0], 0.5)) == bounds.times.size
