"""Exact extremum checker vs closed forms, Ruckig profiles and dense sampling."""

from __future__ import annotations

import numpy as np
import pytest
from rob_twin.controllers.errors import SegmentError
from rob_twin.controllers.extremum import (
    JerkSegment,
    chain,
    check_limits,
    cut,
    segment_extrema,
    segments_from_samples,
    segments_from_trajectory,
    state_at,
)
from ruckig import InputParameter, Result, Ruckig, Synchronization, Trajectory


def test_zero_jerk_nonzero_acceleration_interior_maximum():
    # v0 = 1, a0 = -2, j = 0 over 1 s: p peaks at t = 0.5 with p = 0.25; both ends are 0 and 0.0
    seg = JerkSegment(1.0, 0.0, 1.0, -2.0, 0.0)
    e = segment_extrema([seg])
    assert e.p_max == pytest.approx(0.25, abs=1e-15) and e.t_p_max == pytest.approx(0.5)
    assert max(seg.state(0)[0], seg.state(1)[0]) == pytest.approx(0.0)  # endpoints miss it
    assert (e.v_min, e.v_max, e.a_min, e.a_max) == (-1.0, 1.0, -2.0, -2.0)


def test_interior_velocity_extremum_where_acceleration_crosses_zero():
    seg = JerkSegment(2.0, 0.0, 0.0, 1.0, -1.0)  # a = 1 - t: v peaks at t = 1 with 0.5
    e = segment_extrema([seg])
    assert e.v_max == pytest.approx(0.5) and seg.end()[1] == pytest.approx(0.0)


def test_cut_and_tail_continue_the_state():
    segs = chain(0.0, 0.0, 0.0, [(1.0, 1.0), (1.0, -1.0)])
    part = cut(segs, 0.5, 1.5)
    assert sum(s.duration for s in part) == pytest.approx(1.0)
    assert part[0].state(0) == pytest.approx(state_at(segs, 0.5))
    assert part[-1].end() == pytest.approx(state_at(segs, 1.5))
    tail = cut(segs, 2.0, 3.0)[-1]  # beyond the end: zero jerk, final v and a continue
    p, v, a = segs[-1].end()
    assert tail.end() == pytest.approx((p + v * 1.0, v, a))


def test_negative_duration_is_a_typed_error():
    with pytest.raises(SegmentError, match="duration"):
        JerkSegment(-1.0, 0, 0, 0, 0)


def test_sampled_stream_as_segments_is_exact_for_constant_jerk():
    segs = chain(0.1, 0.2, -0.3, [(0.05, 1.5)])
    t = np.linspace(0, 0.05, 11)
    pva = np.array([segs[0].state(x) for x in t])
    rebuilt = segments_from_samples(pva[:, 0], pva[:, 1], pva[:, 2], 0.005)
    assert rebuilt[-1].end() == pytest.approx(tuple(pva[-1]), abs=1e-14)


def _random_input(rng, n=7, sync=True):
    inp = InputParameter(n)
    if not sync:  # joints finish at different times and hold: unequal-duration tails
        inp.synchronization = Synchronization.No
    inp.current_position = rng.uniform(-1, 1, n).tolist()
    inp.current_velocity = rng.uniform(-0.6, 0.6, n).tolist()  # may exceed v_max: brake phases
    inp.current_acceleration = rng.uniform(-1.2, 1.2, n).tolist()
    inp.target_position = rng.uniform(-1, 1, n).tolist()
    inp.target_velocity = rng.uniform(-0.1, 0.1, n).tolist()
    inp.max_velocity, inp.max_acceleration, inp.max_jerk = [0.3] * n, [0.6] * n, [2.0] * n
    return inp


def test_profiles_match_ruckig_and_bound_dense_samples():
    rng = np.random.default_rng(7)
    braked = 0
    unequal = 0
    for k in range(25):
        inp = _random_input(rng, sync=k % 2 == 0)
        traj = Trajectory(7)
        assert Ruckig(7).calculate(inp, traj) in (Result.Working, Result.Finished)
        segs = segments_from_trajectory(traj)
        braked += sum(pr.brake.duration > 0 for pr in traj.profiles[0])
        unequal += sum(
            abs(sum(pr.t) + pr.brake.duration - traj.duration) > 1e-9 for pr in traj.profiles[0]
        )
        ext = [segment_extrema(s) for s in segs]
        ts = np.linspace(0, traj.duration, 301)
        for t in ts:
            p, v, a = traj.at_time(t)
            for d in range(7):
                q = state_at(segs[d], t)
                assert q == pytest.approx((p[d], v[d], a[d]), abs=1e-12)
                assert ext[d].p_min - 1e-12 <= p[d] <= ext[d].p_max + 1e-12
                assert ext[d].v_min - 1e-12 <= v[d] <= ext[d].v_max + 1e-12
        dense = np.array([traj.at_time(t) for t in np.linspace(0, traj.duration, 4001)])
        h = traj.duration / 4000
        for d in range(7):  # exact bounds enclose dense samples, and are no looser than one step
            for k, lo, hi, slope in (
                (0, ext[d].p_min, ext[d].p_max, 0.7),
                (1, ext[d].v_min, ext[d].v_max, 1.3),
            ):
                col = dense[:, k, d]
                assert lo <= col.min() + 1e-12 and hi >= col.max() - 1e-12
                assert col.min() - lo <= slope * h and hi - col.max() <= slope * h
    assert braked > 0 and unequal > 0


def test_check_limits_reports_joint_value_and_bound():
    segs = [chain(0, 0.5, 0, [(1.0, 0.0)])] + [chain(0, 0, 0, [(1.0, 0.0)])] * 6
    _, bad = check_limits(segs, [0.3] * 7, [0.6] * 7, [-1] * 7, [0.4] * 7)
    kinds = {(b.joint, b.quantity) for b in bad}
    assert kinds == {(1, "velocity"), (1, "position")}
