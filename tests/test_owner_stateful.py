"""Stateful property test: no sequence of caller actions makes the owner's tick raise.

Hypothesis drives one lockstep owner through any interleaving of submits (good and bad
targets: out of bounds, beyond the motion limits, stale sequences, foreign generations,
missing or revoked leases, malformed fields), feedback observations (good, offset, NaN,
infinite, future and out-of-order stamps), stops, releases, reconnects, resets, lease
grants and revocations, publisher outcomes (accepted, refused, partial, uncertain, a
publisher that raises) and clock advances (one period, none, a late gap). After every
tick it checks the invariants:

- ``tick()`` returns a TickReport and never raises; only the project's typed errors
  escape the other entry points;
- every published sample is finite, inside the position bounds, one period's step from
  the previous commanded state, with |v| and |a| within the limits;
- a latched fault stays latched (nothing published, mode FAULTED) until ``reset()``;
- stale-feedback supervision cannot be switched off: a tick at which the newest valid
  observation (finite, not from the future) is older than the timeout ends FAULTED;
- the mailbox accounting balances.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from rob_twin.controllers.clock import SimClock
from rob_twin.controllers.owner import ArmOwner
from rob_twin.controllers.owner_config import OwnerConfig
from rob_twin.controllers.owner_types import Mode, TickReport
from rob_twin.controllers.publish import PublishOutcome
from rob_twin.controllers.target import ArmTarget
from rob_twin.models.errors import RobTwinError
from rob_twin.models.names import Arm
from test_owner_support import RecordingPublisher

CFG = OwnerConfig(feedback_timeout_s=0.05)
LO, HI = np.array(CFG.position_lower), np.array(CFG.position_upper)
VMAX, AMAX = np.array(CFG.max_velocity), np.array(CFG.max_acceleration)
TOL = 1e-9

# positions: fractions of each joint's bound range, then mostly left alone, sometimes one
# joint pushed past a bound or made non-finite
joint_fractions = st.lists(st.floats(0.0, 1.0), min_size=7, max_size=7)
spoil = st.tuples(
    st.sampled_from(["none"] * 6 + ["below", "above", "nan", "inf"]), st.integers(0, 6)
)
# target velocity / acceleration as fractions of the limits: none, within, or up to 3x beyond
motion = st.one_of(
    st.none(),
    st.lists(st.floats(-1.0, 1.0), min_size=7, max_size=7),
    st.lists(st.floats(-3.0, 3.0), min_size=7, max_size=7),
)
bad_field = st.sampled_from([None, math.nan, "3", True, 2.5])


class RaisingPublisher(RecordingPublisher):
    """A recording publisher that can be told to raise on the next publish."""

    def __init__(self):
        super().__init__()
        self.raise_next = False

    def publish_sample(self, positions_rad):
        if self.raise_next:
            self.raise_next = False
            raise OSError("bus driver crashed")
        return super().publish_sample(positions_rad)


class OwnerMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.clock = SimClock()
        self.pub = RaisingPublisher()
        self.owner = ArmOwner(Arm.RIGHT, self.pub, self.clock, np.full(7, 0.2), CFG)
        self.lease = self.owner.grant_lease("client", 10.0)
        self.seq = 0
        self.latched = False  # a fault report was seen and no reset since
        self.samples_at_latch = 0
        self.newest_valid_s: float | None = None  # newest finite, not-future stamp since reset
        self.started_s = self.clock.now()

    # ------------------------------------------------------------------ producers
    @rule(
        frac=joint_fractions,
        how=spoil,
        vel=motion,
        acc=motion,
        seq_step=st.sampled_from([1, 1, 1, 0, -1]),
        foreign=st.sampled_from([False] * 4 + [True]),
        lease=st.sampled_from(["own", "own", "own", None]),
    )
    def submit(self, frac, how, vel, acc, seq_step, foreign, lease):
        self.seq += seq_step
        pos = LO + np.array(frac) * (HI - LO)
        kind, j = how
        pos[j] = {
            "none": pos[j],
            "below": LO[j] - 0.1,
            "above": HI[j] + 0.1,
            "nan": math.nan,
            "inf": math.inf,
        }[kind]
        scale = lambda x: None if x is None else np.array(x) * VMAX  # noqa: E731
        try:
            t = ArmTarget(
                arm=Arm.RIGHT,
                positions_rad=pos,
                sequence=self.seq,
                generation=self.owner.generation + (3 if foreign else 0),
                lease=self.lease if lease == "own" else None,
                velocity_rad_s=scale(vel),
                acceleration_rad_s2=None if acc is None else np.array(acc) * AMAX,
            )
        except RobTwinError:
            return
        res = self.owner.submit(t)
        assert res.accepted or (res.reason is not None and isinstance(res.error, RobTwinError))

    @rule(
        field=st.sampled_from(["sequence", "generation", "lease", "positions_rad"]), value=bad_field
    )
    def malformed_target(self, field, value):
        kw = dict(
            arm=Arm.RIGHT,
            positions_rad=np.full(7, 0.2),
            sequence=self.seq + 1,
            generation=self.owner.generation,
            lease=self.lease,
        )
        kw[field] = value
        try:
            self.owner.submit(ArmTarget(**kw))
        except RobTwinError:
            pass

    @rule(
        offset=st.floats(-0.2, 0.2),
        stamp=st.sampled_from(["now", "now", "past", "future", "nan", "inf", "old"]),
    )
    def observe(self, offset, stamp):
        now = self.clock.now()
        s = {
            "now": now,
            "past": now - 0.01,
            "future": now + 1.0,
            "nan": math.nan,
            "inf": math.inf,
            "old": now - 1.0,
        }[stamp]
        try:
            self.owner.observe_feedback(self.owner.commanded_state()[0] + offset, s)
        except RobTwinError:
            return
        if math.isfinite(s) and s <= now + CFG.feedback_future_tolerance_s:
            self.newest_valid_s = s if self.newest_valid_s is None else max(self.newest_valid_s, s)

    # ------------------------------------------------------------------ control
    @rule()
    def stop(self):
        self.owner.stop()

    @rule()
    def release(self):
        self.owner.release()

    @rule()
    def reconnect(self):
        self.owner.reconnect()

    @rule()
    def revoke(self):
        self.owner.revoke_authority()

    @rule(duration=st.sampled_from([0.02, 10.0]))
    def grant(self, duration):
        self.lease = self.owner.grant_lease("client", duration)

    @rule(explicit=st.booleans())
    def reset(self, explicit):
        try:
            self.owner.reset(np.full(7, 0.3) if explicit else None)
        except RobTwinError:
            return  # not allowed in this mode, or the feedback lies outside the bounds
        self.latched = False
        self.seq = 0
        self.newest_valid_s, self.started_s = None, self.clock.now()

    @rule(outcome=st.sampled_from(list(PublishOutcome) + ["raise"]))
    def script_publisher(self, outcome):
        if outcome == "raise":
            self.pub.raise_next = True
        else:
            self.pub.script.append(outcome)

    @rule(dt=st.sampled_from([CFG.period_s, CFG.period_s, 0.0, 4 * CFG.period_s, 0.1]))
    def advance(self, dt):
        self.clock.advance(dt)

    # ------------------------------------------------------------------ the tick
    @rule(n=st.integers(1, 5))
    def tick(self, n):
        for _ in range(n):
            before = self.owner.commanded_state()
            n_pub = len(self.pub.samples)
            rep = self.owner.tick()
            assert isinstance(rep, TickReport)
            if self.latched:
                assert rep.mode is Mode.FAULTED and not rep.published and rep.fault is not None
                assert len(self.pub.samples) == self.samples_at_latch
            if rep.mode is Mode.FAULTED and not self.latched:
                self.latched = True
                self.samples_at_latch = len(self.pub.samples)
            if rep.published:
                assert len(self.pub.samples) == n_pub + 1
                self._check_sample(before, rep)
            ref = self.started_s if self.newest_valid_s is None else self.newest_valid_s
            if rep.stamp_s - ref > CFG.feedback_timeout_s + 1e-9:
                assert rep.mode is Mode.FAULTED, (
                    f"feedback {rep.stamp_s - ref:.3f} s old, not faulted"
                )
            self.clock.advance(CFG.period_s)

    def _check_sample(self, before, rep):
        p, v, a = rep.positions_rad, rep.velocities_rad_s, rep.accelerations_rad_s2
        assert np.all(np.isfinite(p)) and np.all(np.isfinite(v)) and np.all(np.isfinite(a))
        assert np.all(p >= LO - TOL) and np.all(p <= HI + TOL)
        assert np.all(np.abs(v) <= VMAX + TOL) and np.all(np.abs(a) <= AMAX + TOL)
        assert np.all(np.abs(p - before[0]) <= VMAX * CFG.period_s + TOL)
        np.testing.assert_array_equal(self.pub.samples[-1], p)

    # ------------------------------------------------------------------ invariants
    @invariant()
    def mailbox_balances(self):
        assert self.owner.mailbox_counts().balanced

    @precondition(lambda self: self.latched)
    @invariant()
    def fault_stays_latched(self):
        assert self.owner.mode is Mode.FAULTED and self.owner.fault is not None


OwnerMachine.TestCase.settings = settings(
    max_examples=100,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestOwnerNeverRaises = OwnerMachine.TestCase
