"""The owner's per-tick fast check agrees with the full bounds/limit path.

``ArmOwner._sample_ok`` lets a tick skip ``_onto_bounds`` and ``_check`` when a sample
is plainly inside everything. It must never pass a sample that the full path would snap
or refuse (a NaN, a bound a few ulps off, a limit exceeded by one ulp), and it is only a
shortcut: whatever it refuses, the full path decides.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from rob_twin.controllers.clock import SimClock
from rob_twin.controllers.owner import ArmOwner
from rob_twin.controllers.owner_config import OwnerConfig
from rob_twin.controllers.owner_types import FaultKind, OwnerHooks
from rob_twin.models.names import Arm

CFG = OwnerConfig(require_feedback=False, limit_tolerance=1e-9)
LO, HI = np.array(CFG.position_lower), np.array(CFG.position_upper)


class _Accept:
    def publish_sample(self, positions_rad):
        from rob_twin.controllers.publish import PublishOutcome, PublishReport

        return PublishReport(PublishOutcome.ACCEPTED, tuple(range(1, 8)))


def _owner(p0=None) -> ArmOwner:
    return ArmOwner(Arm.RIGHT, _Accept(), SimClock(), (LO + HI) / 2 if p0 is None else p0, CFG)


def _full_path_clean(owner: ArmOwner, p, v, a) -> bool:
    """What the full path says: nothing to snap and no limit violated."""
    p2, snapped = owner._onto_bounds(np.array(p))
    return not snapped and owner._check(p2, np.array(v), np.array(a)) == ""


def _nudge(x: float, ulps: int) -> float:
    for _ in range(abs(ulps)):
        x = math.nextafter(x, math.inf if ulps > 0 else -math.inf)
    return x


_special = st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0])


_near_one = st.one_of(
    st.floats(0.99, 1.01), st.sampled_from([1.0, _nudge(1.0, 1), _nudge(1.0, -1)])
)


@st.composite
def _case(draw):
    """A starting state (mid-range or on a bound) and a sample near it: mostly clean,
    with a few joints made tricky (a few ulps past a bound, a limit met or exceeded by
    a hair, a NaN, an inf)."""
    p0, a0, p, v, a = [], [], [], [], []
    tol = CFG.limit_tolerance
    for j in range(7):
        lo, hi = float(LO[j]), float(HI[j])
        start = draw(st.sampled_from([(lo + hi) / 2, lo, hi]))
        step = CFG.max_velocity[j] * CFG.period_s
        vlim, alim = CFG.max_velocity[j] + tol, CFG.max_acceleration[j] + tol
        jerk_step = (CFG.max_jerk[j] + 1e-6 + tol) * CFG.period_s  # _check's discrete-jerk bound
        x = min(max(start + draw(st.floats(-step, step)), lo), hi)
        vx = draw(st.floats(-vlim, vlim))
        ax = draw(st.floats(-alim, alim))
        da = draw(st.floats(-jerk_step, jerk_step))
        trick = draw(st.sampled_from(["none", "none", "p", "v", "a", "jerk", "step"]))
        sign = draw(st.sampled_from([1.0, -1.0]))
        if trick == "p":
            x = draw(
                st.one_of(
                    _special, st.builds(_nudge, st.sampled_from([lo, hi]), st.integers(-3, 3))
                )
            )
        elif trick == "v":
            vx = draw(
                st.one_of(_special, st.builds(_nudge, st.just(sign * vlim), st.integers(-2, 2)))
            )
        elif trick == "a":
            ax = draw(
                st.one_of(_special, st.builds(_nudge, st.just(sign * alim), st.integers(-2, 2)))
            )
            da = 0.0
        elif trick == "jerk":
            ax, da = 0.0, sign * jerk_step * draw(_near_one)
        elif trick == "step":
            start = (lo + hi) / 2
            x = start + sign * (step + tol) * draw(_near_one)
        p0.append(start)
        a0.append(ax - da)  # the last commanded acceleration
        p.append(x)
        v.append(vx)
        a.append(ax)
    return np.array(p0), np.array(a0), p, v, a


@settings(max_examples=300, deadline=None)
@given(_case())
def test_fast_check_never_passes_what_the_full_path_would_refuse_or_snap(case):
    p0, a0, p, v, a = case
    owner = _owner(p0)
    owner._cmd_a = a0  # as if the last published sample had this acceleration
    fast = owner._sample_ok(p, v, a)
    if fast:
        assert _full_path_clean(owner, p, v, a)
    if all(
        math.isfinite(x) and lo < x < hi for x, lo, hi in zip(p, LO, HI, strict=True)
    ) and _full_path_clean(owner, p, v, a):
        assert fast  # inside the open bounds and clean: the shortcut is taken


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-0.4, 0.4), min_size=7, max_size=7))
def test_fast_check_passes_plain_samples(offset):
    """Inside the bounds, within one period's step, at rest: the fast path takes it."""
    owner = _owner()
    p0 = owner.commanded_state()[0]
    step = np.array(CFG.max_velocity) * CFG.period_s
    p = (p0 + np.array(offset) * step).tolist()
    assert owner._sample_ok(p, [0.0] * 7, [0.0] * 7)
    assert _full_path_clean(owner, p, [0.0] * 7, [0.0] * 7)


def test_a_sample_on_the_bound_a_few_ulps_out_is_snapped_and_published_on_it():
    """The full path still runs when the fast check declines: Ruckig's overshoot of a
    bound by ulps is snapped onto the bound and published there."""
    hi = float(HI[0])
    owner = _owner(p0=np.r_[hi, (LO[1:] + HI[1:]) / 2])
    p = [_nudge(hi, 2)] + owner.commanded_state()[0][1:].tolist()
    assert not owner._sample_ok(p, [0.0] * 7, [0.0] * 7)
    snapped, was = owner._onto_bounds(np.array(p))
    assert was and snapped[0] == hi


def test_a_hook_that_corrupts_the_sample_still_latches_a_limit_violation():
    """With an after_compute hook the full path runs, so a hook's in-place change is checked."""

    def corrupt(p):
        p[3] = math.nan

    owner = ArmOwner(
        Arm.RIGHT, _Accept(), SimClock(), (LO + HI) / 2, CFG, OwnerHooks(after_compute=corrupt)
    )
    rep = owner.tick()
    assert rep.fault is FaultKind.LIMIT_VIOLATION and not rep.published
    assert "joint 4" in owner.fault_reason
