"""ArmOwner: coherent state, one plan per burst, checks, faults, lease, stop (lockstep)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from rob_twin.controllers.errors import (
    NonFiniteTargetError,
    OwnerConfigError,
    OwnerStateError,
    TargetShapeError,
)
from rob_twin.controllers.mailbox import RejectReason
from rob_twin.controllers.owner_config import LateTickAction, OwnerConfig, default_config
from rob_twin.controllers.owner_types import FaultKind, Mode
from rob_twin.controllers.publish import PublishOutcome
from test_owner_support import Rig

CFG = default_config()


def _diffs(samples):
    s = np.array(samples)
    return np.abs(np.diff(s, axis=0)).max()


def test_tracks_to_target_within_bounds_and_reports_time():
    rig = Rig()
    assert rig.submit(0.1).accepted
    reps = rig.step(600)
    assert reps[0].new_plan and reps[0].target_sequence == 1
    np.testing.assert_allclose(reps[-1].positions_rad, 0.1, atol=1e-9)
    assert all(r.published for r in reps)
    assert max(np.abs(r.velocities_rad_s).max() for r in reps) <= 0.3 + 1e-9
    assert max(np.abs(r.accelerations_rad_s2).max() for r in reps) <= 0.6 + 1e-9
    assert _diffs(rig.pub.samples) <= 0.0015 + 1e-12
    assert all(r.compute_s > 0 for r in reps) and reps[0].ruckig_s > 0


def test_thousand_targets_between_ticks_make_one_plan():
    rig = Rig()
    rig.step(3)
    for k in range(1000):
        rig.submit(0.001 * (k % 50))
    c = rig.owner.mailbox_counts()
    assert c.pending == 1 and c.replaced == 999 and c.balanced
    reps = rig.step(5)
    assert sum(r.new_plan for r in reps) == 1
    assert rig.owner.stats.plans == 1
    assert reps[0].target_sequence == 1000


def test_retarget_continues_from_coherent_state_not_feedback():
    rig = Rig()
    rig.submit(0.5)
    rig.step(200)
    p, v, a = rig.owner.commanded_state()
    assert np.all(v > 0.05)  # moving
    rig.fb_offset[:] = 0.02  # feedback disagrees (within threshold): must not enter the plan
    assert rig.submit(0.05).accepted
    rep = rig.step(1)[0]
    assert rep.new_plan and rep.moving_retarget
    # one period of jerk-limited motion from the commanded state, not from the feedback
    dt = CFG.period_s
    assert np.all(np.abs(rep.velocities_rad_s - v) <= 0.6 * dt + 1e-12)
    assert np.all(np.abs(rep.positions_rad - p) <= 0.3 * dt + 1e-12)
    assert np.all(np.abs(rep.accelerations_rad_s2 - a) <= 2.0 * dt + 1e-9)


def test_stale_sequence_and_foreign_generation_rejected_and_counted():
    rig = Rig()
    assert rig.submit(0.1, seq=5).accepted
    r = rig.submit(0.2, seq=5)
    assert not r.accepted and r.reason is RejectReason.STALE_SEQUENCE
    assert rig.submit(0.2, seq=3).reason is RejectReason.STALE_SEQUENCE
    assert rig.submit(0.2, seq=6, generation=99).reason is RejectReason.FOREIGN_GENERATION
    assert rig.submit(0.2, seq=7, lease=None).reason is RejectReason.LEASE_MISSING
    assert rig.submit(9.0, seq=8).reason is RejectReason.OUT_OF_BOUNDS
    c = rig.owner.mailbox_counts()
    assert c.rejected_by_reason == {
        "stale_sequence": 2,
        "foreign_generation": 1,
        "lease_missing": 1,
        "out_of_bounds": 1,
    }
    assert c.balanced and c.accepted == 1


def test_typed_errors_for_malformed_targets_and_config():
    rig = Rig()
    with pytest.raises(TargetShapeError, match=r"\(3,\)"):
        rig.target([0.0, 0.0, 0.0])
    with pytest.raises(NonFiniteTargetError, match="joint 4"):
        rig.target([0, 0, 0, np.nan, 0, 0, 0])
    with pytest.raises(OwnerConfigError, match="max_velocity"):
        OwnerConfig(max_velocity=(0.3,) * 6)
    with pytest.raises(OwnerConfigError, match="period_s"):
        OwnerConfig(period_s=0.0)


@pytest.mark.parametrize(
    "outcome,kind",
    [
        (PublishOutcome.UNCERTAIN, FaultKind.UNCERTAIN_OUTPUT),
        (PublishOutcome.PARTIAL, FaultKind.PARTIAL_OUTPUT),
    ],
)
def test_ambiguous_output_latches_and_never_retries(outcome, kind):
    rig = Rig()
    rig.submit(0.3)
    rig.step(50)
    p_before = rig.owner.commanded_state()[0]
    rig.pub.script.append(outcome)
    rep = rig.step(1)[0]
    n = len(rig.pub.samples)
    assert rep.mode is Mode.FAULTED and rep.fault is kind and not rep.published
    np.testing.assert_array_equal(rig.owner.commanded_state()[0], p_before)  # not advanced
    assert rig.submit(0.1).reason is RejectReason.CLOSED
    rig.step(100)
    assert len(rig.pub.samples) == n  # nothing more handed to the bus, no retry
    gen = rig.owner.generation
    new_gen = rig.owner.reset()
    assert new_gen == gen + 1
    assert rig.submit(0.1).reason is RejectReason.LEASE_UNKNOWN  # reset revoked authority
    rig.lease = rig.owner.grant_lease("again", 1e6)
    assert rig.submit(0.1).accepted
    assert rig.step(1)[0].published


def test_fault_discards_pending_target():
    rig = Rig()
    rig.pub.script.append(PublishOutcome.UNCERTAIN)
    rig.step(1)
    c = rig.owner.mailbox_counts()
    assert c.pending == 0
    rig2 = Rig()
    rig2.submit(0.2)
    rig2.fb_offset[:] = 1.0  # tracking error beyond threshold
    rep = rig2.step(1)[0]
    assert rep.fault is FaultKind.TRACKING_ERROR
    c2 = rig2.owner.mailbox_counts()
    assert c2.pending == 0 and c2.discarded == 1 and c2.balanced


def test_stale_feedback_latches():
    rig = Rig()
    rig.submit(0.2)
    rig.step(10)
    rig.feedback = False
    reps = rig.step(20)
    faulted = [r for r in reps if r.fault is FaultKind.STALE_FEEDBACK]
    assert faulted
    k = reps.index(faulted[0])
    assert not any(r.published for r in reps[k:])
    # never any feedback at all also latches after the timeout
    rig2 = Rig(feedback=False)
    assert any(r.fault is FaultKind.STALE_FEEDBACK for r in rig2.step(20))


def test_lease_expiry_brakes_to_hold_and_fresh_lease_resumes():
    rig = Rig()
    rig.lease = rig.owner.grant_lease("short", 0.5)
    rig.submit(0.7)
    reps = rig.step(400)
    modes = [r.mode for r in reps]
    assert Mode.BRAKING in modes and modes[-1] is Mode.HOLD
    v_at_expiry = max(np.abs(r.velocities_rad_s).max() for r in reps[:100])
    assert v_at_expiry > 0.1  # it was moving when authority lapsed
    assert np.abs(reps[-1].velocities_rad_s).max() < 1e-12
    assert max(np.abs(r.accelerations_rad_s2).max() for r in reps) <= 0.6 + 1e-9
    assert _diffs(rig.pub.samples) <= 0.0015 + 1e-12
    held = reps[-1].positions_rad
    assert np.all(held < 0.7)  # stopped short of the target
    rig.lease = rig.owner.grant_lease("new", 10)
    assert rig.submit(0.7).accepted
    assert rig.step(1)[0].mode is Mode.TRACKING


def test_revoked_authority_brakes():
    rig = Rig()
    rig.submit(0.7)
    rig.step(100)
    rig.owner.revoke_authority()
    reps = rig.step(300)
    assert reps[0].mode is Mode.BRAKING and reps[-1].mode is Mode.HOLD


def test_stop_brakes_within_limits_then_holds_and_refuses():
    rig = Rig()
    rig.submit(0.7)
    rig.step(150)
    rig.owner.stop()
    assert rig.submit(0.5).reason is RejectReason.CLOSED
    reps = rig.step(300)
    assert reps[-1].mode is Mode.STOPPED
    assert max(np.abs(r.accelerations_rad_s2).max() for r in reps) <= 0.6 + 1e-9
    assert _diffs(rig.pub.samples) <= 0.0015 + 1e-12
    a = np.array([r.accelerations_rad_s2 for r in reps])
    assert np.abs(np.diff(a, axis=0)).max() / CFG.period_s <= 2.0 + 1e-6
    gen = rig.owner.reset()
    rig.lease = rig.owner.grant_lease("x", 10)
    assert rig.owner.submit(rig.target(0.2, generation=gen)).accepted


def test_reset_refused_while_tracking():
    rig = Rig()
    with pytest.raises(OwnerStateError, match="tracking"):
        rig.owner.reset()


@pytest.mark.parametrize("action", list(LateTickAction))
def test_late_tick_brakes_or_faults(action):
    rig = Rig(config=dataclasses.replace(CFG, late_tick_action=action))
    rig.submit(0.7)
    rig.step(50)
    rig.clock.advance(4 * CFG.period_s)
    rep = rig.step(1)[0]
    assert rep.gap_periods > CFG.late_tick_periods
    if action is LateTickAction.BRAKE:
        assert rep.mode is Mode.BRAKING and rep.published
    else:
        assert rep.fault is FaultKind.LATE_TICK and not rep.published


def test_refused_during_brake_is_blocked_braking_path():
    rig = Rig()
    rig.submit(0.7)
    rig.step(100)
    rig.owner.stop()
    rig.pub.script.extend([PublishOutcome.REFUSED])
    rep = rig.step(1)[0]
    assert rep.fault is FaultKind.BLOCKED_BRAKING_PATH
    n = len(rig.pub.samples)
    rig.step(10)
    assert len(rig.pub.samples) == n


def test_refused_while_tracking_brakes_first():
    rig = Rig()
    rig.submit(0.7)
    rig.step(20)
    rig.pub.script.append(PublishOutcome.REFUSED)
    rep = rig.step(1)[0]
    assert rep.mode is Mode.BRAKING and rep.fault is None
    assert rig.step(1)[0].published


def test_target_velocity_passed_through():
    rig = Rig()
    rig.submit(0.2, velocity_rad_s=np.full(7, 0.05))
    reps = rig.step(400)
    assert np.allclose(reps[-1].velocities_rad_s, 0.05, atol=1e-9)  # arrives moving (follower)


def test_release_and_reconnect_require_fresh_generation():
    rig = Rig()
    rig.submit(0.3)
    rig.step(50)
    old = rig.owner.generation
    new = rig.owner.release()
    assert new == old + 1
    reps = rig.step(300)
    assert reps[-1].mode is Mode.HOLD  # braked to hold
    rig.lease = rig.owner.grant_lease("again", 10)
    assert rig.submit(0.2, generation=old).reason is RejectReason.FOREIGN_GENERATION
    assert rig.submit(0.2).accepted
    gen2 = rig.owner.reconnect()
    assert gen2 == new + 1 and rig.owner.mailbox_counts().pending == 0  # pending discarded
    assert rig.submit(0.2, generation=new).reason is RejectReason.FOREIGN_GENERATION


def test_wrong_arm_rejected():
    from rob_twin.controllers.target import ArmTarget
    from rob_twin.models.names import Arm

    rig = Rig()
    t = ArmTarget(
        arm=Arm.LEFT,
        positions_rad=np.full(7, 0.1),
        sequence=1,
        generation=rig.owner.generation,
        lease=rig.lease,
    )
    assert rig.owner.submit(t).reason is RejectReason.WRONG_ARM


def test_a_target_on_a_position_bound_is_reached_exactly_and_encodes():
    """Streamed (cosine-blended, 100 Hz) targets ending on J7's lower bound -1.571: Ruckig
    lands the last samples at -1.5710000000000002, a float-rounding excursion the codec
    would refuse. The owner snaps such excursions (<= limit_tolerance) onto the bound."""
    import math

    from rob_twin.controllers.codec import encode_sample

    cfg = OwnerConfig(max_velocity=(1.0,) * 7, max_acceleration=(3.0,) * 7, max_jerk=(30.0,) * 7)
    lower = cfg.position_lower[6]
    p0 = np.zeros(7)
    p0[6] = -1.271
    rig = Rig(cfg, p0=p0)
    rig.pub.on_publish = encode_sample  # raises JointBoundError if a sample leaves the bounds
    reps = []
    for k in range(400):  # the blend takes 1.0 s; 2 s in all
        if k % 2 == 0:
            w = 0.5 - 0.5 * math.cos(math.pi * min(k * 0.005, 1.0))
            goal = p0.copy()
            goal[6] = (1 - w) * p0[6] + w * lower
            rig.submit(goal)
        reps += rig.step(1)
    assert all(r.published for r in reps) and rig.owner.fault is None
    assert np.array(rig.pub.samples)[:, 6].min() >= lower
    assert reps[-1].positions_rad[6] == lower


def test_a_sample_past_a_position_bound_latches_instead_of_publishing():
    """Ruckig has no position limits: a target velocity carries the arm past J7's upper bound."""
    upper = np.array(CFG.position_upper)
    rig = Rig(p0=np.zeros(7))
    goal, vel = np.zeros(7), np.zeros(7)
    goal[6], vel[6] = upper[6] - 0.05, 0.2
    assert rig.submit(goal, velocity_rad_s=vel).accepted
    reps = rig.step(2000)
    assert rig.owner.fault is FaultKind.LIMIT_VIOLATION
    assert (
        "joint 7: position" in rig.owner.fault_reason
        and "outside the bounds" in rig.owner.fault_reason
    )
    assert np.array(rig.pub.samples)[:, 6].max() <= upper[6] + CFG.limit_tolerance
    assert not reps[-1].published


@pytest.mark.parametrize("event", ["stop", "revoke"])
def test_a_finished_brake_holds_an_exact_constant(event):
    """Ruckig ends a brake a few ulps short of rest; the held arm must not creep from there:
    every sample after the brake is bit-identical and the commanded velocity exactly 0."""
    rig = Rig()
    rig.submit(0.5)
    rig.step(107)  # a brake from here ends at |v| = 2.8e-17 rad/s before the hold's fix
    rig.owner.stop() if event == "stop" else rig.owner.revoke_authority()
    reps = rig.step(1000)
    held = [k for k, r in enumerate(reps) if r.mode in (Mode.STOPPED, Mode.HOLD)]
    assert held and held[0] < 400
    tail = np.array(rig.pub.samples[-(len(reps) - held[0]) :])
    assert np.ptp(tail, axis=0).max() == 0.0
    assert all(
        not r.velocities_rad_s.any() and not r.accelerations_rad_s2.any() for r in reps[held[0] :]
    )
