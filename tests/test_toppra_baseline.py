"""TOPP-RA as a baseline: why the planner retimes with its own jerk-limited law."""

from __future__ import annotations

import numpy as np
from rob_twin.experiments.toppra_baseline import toppra_retime
from rob_twin.planners.retime import JointLimits, limit_report, sample_times, time_path


def test_toppra_is_faster_but_breaks_jerk_and_leaves_the_checked_path():
    corner = np.array([[0.0, 0.0], [0.6, 0.0], [0.6, 0.5], [0.0, 0.9]])  # three straight segments
    tp = toppra_retime(corner, velocity=1.0, acceleration=2.5)
    limits = JointLimits((1.0, 1.0), (2.5, 2.5), (15.0, 15.0))
    ours = time_path(corner, limits)
    assert tp["duration_s"] < ours.duration  # time-optimal without a jerk limit
    assert tp["max_discrete_jerk"] > 10 * 15.0  # bang-bang acceleration
    assert tp["max_deviation_from_checked_path_rad"] > 0.01  # the spline cuts the corners
    q, qd, qdd = ours.evaluate(sample_times(ours.duration, 125.0))
    report = limit_report(q, qd, qdd, 1 / 125.0, limits)
    assert report.respected(), report
