"""A stream of states one period apart (the executor's plan stream) is followed exactly.

Each target is the state a jerk-limited reference reaches one owner period after the tick,
within the owner's limits. A time-optimal re-plan to such a target can pick a profile that
turns away from the reference (seen as 0.17 rad of lag on the OpenArm-class robot after
an acceleration peak); the owner arrives at a stream state no sooner than one period, so
the commanded state lands on the reference at every tick.
"""

from __future__ import annotations

import numpy as np
from rob_twin.controllers.owner_config import default_config
from test_owner_support import Rig

CFG = default_config()  # v 0.3 rad/s, a 0.6 rad/s^2, jerk 2 rad/s^3, 200 Hz


def _reference(t: float) -> tuple[float, float, float]:
    """(q [rad], qd [rad/s], qdd [rad/s^2]) at ``t`` [s] of a profile with jerk +1.5 for
    0.3 s, then -1.5 for 0.6 s, then +1.5 for 0.3 s (acceleration peaks at +-0.45 rad/s^2,
    velocity at 0.135 rad/s: inside the owner's limits), at rest after 1.2 s."""
    q = v = a = 0.0
    left = t
    for jerk, span in ((1.5, 0.3), (-1.5, 0.6), (1.5, 0.3)):
        h = min(left, span)
        q += v * h + a * h * h / 2 + jerk * h**3 / 6
        v += a * h + jerk * h * h / 2
        a += jerk * h
        left -= h
        if left <= 0:
            break
    return q, v, a


def _stream(joint_scale: np.ndarray) -> float:
    """Largest |commanded - reference| [rad] over a streamed run, per tick."""
    rig = Rig()
    period = CFG.period_s
    worst = 0.0
    for k in range(int(1.5 / period)):
        t_next = (k + 1) * period
        q, v, a = _reference(t_next)
        assert rig.submit(
            q * joint_scale,
            velocity_rad_s=v * joint_scale,
            acceleration_rad_s2=a * joint_scale,
        ).accepted
        rig.step(1)
        p, _, _ = rig.owner.commanded_state()
        worst = max(worst, float(np.abs(p - q * joint_scale).max()))
    return worst


def test_streamed_states_are_followed_exactly_through_acceleration_peaks():
    assert _stream(np.ones(7)) < 1e-9


def test_streamed_states_are_followed_exactly_with_joints_scaled_differently():
    assert _stream(np.linspace(-1.0, 1.0, 7)) < 1e-9
