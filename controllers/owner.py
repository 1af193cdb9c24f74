"""ContinuousArm owner: the one persistent writer of one arm's joint samples (seed 000).

Per tick (all under one ownership barrier that ``stop()`` also takes):

1. supervise: late tick, feedback age, tracking error, lease of the active target;
2. take at most one target from the latest-target mailbox (only the destination
   changes; Ruckig continues from the coherent commanded state);
3. compute the next sample with Ruckig, check it against the configured limits;
4. publish it; only an ACCEPTED publish advances the commanded (p, v, a) via
   ``out.pass_to_input``. PARTIAL/UNCERTAIN latch a fault and are never retried.

Modes: TRACKING (following a target or holding after reaching it), BRAKING (velocity
interface, target velocity 0, within the configured limits), HOLD (at rest after a
brake; a fresh target with a valid lease resumes unless the brake was a Stop),
STOPPED (after Stop's brake: targets are refused until ``reset()``), FAULTED (nothing
is published; pending targets discarded; ``reset()`` gives a new generation).

Measured feedback (``observe_feedback``) is only an observation: it is supervised for
age and tracking error and never substituted for commanded velocity/acceleration.

Bad input cannot switch supervision off, and the tick never raises:

- ``submit`` refuses, with a typed reason (``OfferResult.reason`` and ``.error``, a
  ``TargetRefusedError`` naming the value and the valid range; nothing changes), every
  target the owner cannot execute: wrong arm, a position outside the bounds, a target
  velocity or acceleration beyond the limits (or one that the trajectory generator would
  refuse: it is asked at submit, never first at the tick), a lease that is not valid.
  Malformed targets never get that far (``ArmTarget`` types every field).
- ``observe_feedback`` accepts only a finite stamp on the owner's clock, no later than
  now + ``feedback_future_tolerance_s``; anything else raises ``FeedbackError`` and is
  dropped, so the feedback age keeps growing and STALE_FEEDBACK still trips. An
  observation older than the newest one is ignored (counted), never used.
- The tick checks its own inputs: a clock reading that is not finite or runs backwards
  latches INVALID_CLOCK; every supervision comparison is written so that a NaN trips it.
  A publisher that raises latches UNCERTAIN_OUTPUT (a frame may be out); anything else
  that raises inside the tick latches INTERNAL_ERROR. A latched fault publishes nothing.

The owner's configuration lives in ``owner_config``, its modes, fault kinds, hooks and
reports in ``owner_types``, the pure supervision rules in ``owner_supervision`` and the
real-time runner (``start_realtime_thread``) in ``owner_realtime``.
"""

from __future__ import annotations

import math
import numbers
import threading
import time
from collections import deque

import numpy as np
from rob_twin.controllers.checks import finite_real
from rob_twin.controllers.clock import Clock
from rob_twin.controllers.errors import (
    FeedbackError,
    OwnerConfigError,
    OwnerStateError,
    TargetRefusedError,
    TargetShapeError,
    TargetTypeError,
)
from rob_twin.controllers.lease import Lease, LeaseAuthority, LeaseStatus
from rob_twin.controllers.mailbox import (
    LatestTargetMailbox,
    MailboxCounts,
    OfferResult,
    RejectReason,
)
from rob_twin.controllers.owner_config import LateTickAction, OwnerConfig, default_config
from rob_twin.controllers.owner_supervision import feedback_fault, lease_reject_reason
from rob_twin.controllers.owner_types import (
    BrakeCause,
    FaultKind,
    Mode,
    OwnerHooks,
    OwnerStats,
    TickReport,
)
from rob_twin.controllers.publish import PublishOutcome, SamplePublisher
from rob_twin.controllers.target import ArmTarget, as_joint_vector
from rob_twin.controllers.target_limits import TargetStateCheck
from rob_twin.models.errors import describe
from rob_twin.models.names import Arm
from ruckig import ControlInterface, InputParameter, OutputParameter, Result, Ruckig, RuckigError


class ArmOwner:
    """The single persistent owner of one arm's output.

    arm: the physical arm; publisher: where samples go; clock: injected time base;
    initial_positions_rad: the commanded state at construction (at rest) [rad], one per
    joint; config: limits and thresholds (``default_config()``), whose per-joint tuples give
    the arm's joint count (``OwnerConfig.joints``: every vector has that many values;
    seven by default); hooks: interleaving points;
    lease_authority: host authority (one is created on ``clock`` if omitted).
    """

    def __init__(
        self,
        arm: Arm,
        publisher: SamplePublisher,
        clock: Clock,
        initial_positions_rad,
        config: OwnerConfig | None = None,
        hooks: OwnerHooks | None = None,
        lease_authority: LeaseAuthority | None = None,
    ):
        self.arm = Arm.parse(arm)
        if config is not None and not isinstance(config, OwnerConfig):
            raise OwnerConfigError(
                "config", config, "an OwnerConfig (or None for default_config())"
            )
        if not callable(getattr(publisher, "publish_sample", None)):
            raise OwnerConfigError(
                "publisher", publisher, "an object with publish_sample(positions_rad)"
            )
        if not callable(getattr(clock, "now", None)):
            raise OwnerConfigError("clock", clock, "an object with now() -> float [s]")
        finite_real(clock.now(), "clock.now()", "a finite time [s]", OwnerConfigError)
        if hooks is not None and not isinstance(hooks, OwnerHooks):
            raise OwnerConfigError("hooks", hooks, "an OwnerHooks or None")
        if lease_authority is not None and not isinstance(lease_authority, LeaseAuthority):
            raise OwnerConfigError("lease_authority", lease_authority, "a LeaseAuthority or None")
        self.config = config or default_config()
        self._pub = publisher
        # torque-capable drives take the whole coherent state
        # (rob_twin.controllers.publish.StatePublisher)
        self._publish_state = getattr(publisher, "publish_state", None)
        self._clock = clock
        self.hooks = hooks or OwnerHooks()
        self.authority = lease_authority or LeaseAuthority(clock)
        self._own = threading.Lock()  # THE ownership barrier: compute-check-publish and stop
        self._generation = 1
        self.mailbox = LatestTargetMailbox(self._generation)
        self.stats = OwnerStats()
        c = self.config
        self.joints = c.joints  # the arm's joint count: every sample and target has as many
        self._vmax = np.array(c.max_velocity)
        self._amax = np.array(c.max_acceleration)
        self._jmax = np.array(c.max_jerk)
        self._lo = np.array(c.position_lower)
        self._hi = np.array(c.position_upper)
        self._lo_l = [float(x) for x in c.position_lower]
        self._hi_l = [float(x) for x in c.position_upper]
        self._lim_v = [float(x) for x in c.max_velocity]
        self._lim_a = [float(x) for x in c.max_acceleration]
        self._lim_j = [float(x) + 1e-6 for x in c.max_jerk]
        self._lim_step = [float(x) * c.period_s for x in c.max_velocity]
        # the per-tick fast check (``_sample_ok``): each limit with the tolerance added,
        # exactly the ``lim + tol`` that ``_check`` compares against, one tuple per joint
        tol = c.limit_tolerance
        self._fast_limits = tuple(
            zip(
                self._lo_l,
                self._hi_l,
                [x + tol for x in self._lim_v],
                [x + tol for x in self._lim_a],
                [x + tol for x in self._lim_j],
                [x + tol for x in self._lim_step],
                strict=True,
            )
        )
        self._fb_lock = threading.Lock()
        self._fb: tuple[np.ndarray, float] | None = None
        self._history: deque[tuple[float, np.ndarray]] = deque(maxlen=256)
        self._target_check = TargetStateCheck(c)
        self._start(
            self._within_bounds(
                as_joint_vector(initial_positions_rad, "initial_positions_rad", self.joints),
                "initial_positions_rad",
            )
        )

    # ----------------------------------------------------------------- set-up / state
    def _start(self, p0: np.ndarray) -> None:
        c, n = self.config, self.joints
        self._otg = Ruckig(n, c.period_s)
        self._inp = InputParameter(n)
        self._out = OutputParameter(n)
        inp = self._inp
        inp.max_velocity = list(c.max_velocity)
        inp.max_acceleration = list(c.max_acceleration)
        inp.max_jerk = list(c.max_jerk)
        inp.current_position = p0.tolist()
        inp.current_velocity = [0.0] * n
        inp.current_acceleration = [0.0] * n
        self._set_hold_target(p0)
        self._cmd_p, self._cmd_v, self._cmd_a = p0.copy(), np.zeros(n), np.zeros(n)
        self.mode = Mode.TRACKING
        self.fault: FaultKind | None = None
        self.fault_reason = ""
        self._brake_cause: BrakeCause | None = None
        self._active: ArmTarget | None = None
        self._last_tick_s: float | None = None
        self._started_s = self._clock.now()
        self._tick_index = 0
        self._history.clear()
        self._history.append((self._started_s, p0.copy()))

    def _within_bounds(self, p: np.ndarray, field: str) -> np.ndarray:
        """``p`` [rad] if every joint is within the position bounds; OwnerConfigError else."""
        out = (p < self._lo) | (p > self._hi)
        if out.any():
            j = int(np.flatnonzero(out)[0])
            raise OwnerConfigError(
                f"{field} joint {j + 1}",
                float(p[j]),
                f"[{self._lo_l[j]!r}, {self._hi_l[j]!r}] rad (the position bounds)",
            )
        return p

    def _set_hold_target(self, p: np.ndarray) -> None:
        """Ruckig's target: at rest at ``p`` [rad] (position interface)."""
        self._inp.control_interface = ControlInterface.Position
        self._inp.minimum_duration = None
        self._inp.target_position = list(map(float, p))
        self._inp.target_velocity = [0.0] * self.joints
        self._inp.target_acceleration = [0.0] * self.joints

    @property
    def clock(self) -> Clock:
        """The injected time base (``now()`` [s])."""
        return self._clock

    @property
    def generation(self) -> int:
        return self._generation

    def commanded_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Last successfully published (p [rad], v [rad/s], a [rad/s^2]), copies."""
        with self._own:
            return self._cmd_p.copy(), self._cmd_v.copy(), self._cmd_a.copy()

    def mailbox_counts(self) -> MailboxCounts:
        return self.mailbox.counts()

    # ----------------------------------------------------------------- authority
    def grant_lease(self, holder: str, duration_s: float | None = None) -> Lease:
        """Host side: issue a lease on this owner's clock [s]."""
        return self.authority.grant(holder, duration_s)

    def revoke_authority(self) -> None:
        """Loss of authority: every lease becomes invalid; the next tick brakes to hold."""
        self.authority.revoke()

    # ----------------------------------------------------------------- producer side
    def submit(self, target: ArmTarget) -> OfferResult:
        """Offer ``target`` to the latest-target slot (thread-safe, never blocks on a tick).

        A target the owner cannot execute is refused here (``OfferResult.reason`` and
        ``.error``), never accepted and then failed at the tick. TargetTypeError when
        ``target`` is not an ArmTarget, TargetShapeError when it is for an arm of another
        joint count (``ArmTarget.joints``; nothing is counted)."""
        if not isinstance(target, ArmTarget):
            raise TargetTypeError("target", target, "an ArmTarget")
        if target.joints != self.joints:
            raise TargetShapeError("positions_rad", target.positions_rad.shape, self.joints)
        return self.mailbox.offer(target, self._refusal(target))

    def _refusal(self, target: ArmTarget) -> TargetRefusedError | None:
        """Why ``target`` cannot be executed (checked in this order), or None."""
        if target.arm is not self.arm:
            return TargetRefusedError(
                RejectReason.WRONG_ARM,
                "arm",
                target.arm.value,
                f"{self.arm.value!r} (this owner's arm)",
            )
        p = target.positions_rad
        # plain floats first (a target is finite: ArmTarget checked it); numpy decides
        # and names the joint whenever that quick look is not plainly inside
        inside = all(
            lo <= x <= hi for x, lo, hi in zip(p.tolist(), self._lo_l, self._hi_l, strict=True)
        )
        if not inside and (np.any(p < self._lo) or np.any(p > self._hi)):
            j = int(np.flatnonzero((p < self._lo) | (p > self._hi))[0])
            return TargetRefusedError(
                RejectReason.OUT_OF_BOUNDS,
                "positions_rad",
                float(p[j]),
                f"[{self._lo_l[j]!r}, {self._hi_l[j]!r}] rad",
                joint=j + 1,
            )
        if target.velocity_rad_s is not None or target.acceleration_rad_s2 is not None:
            bad = self._target_check.refusal(target.velocity_rad_s, target.acceleration_rad_s2)
            if bad is not None:
                return bad
        reason = lease_reject_reason(self.authority.status(target.lease))
        if reason is not None:
            return TargetRefusedError(
                reason, "lease", target.lease, "the current, unexpired lease granted by this owner"
            )
        return None

    def observe_feedback(self, positions_rad, stamp_s: float) -> bool:
        """Record a measured position sample [rad] taken at ``stamp_s`` [s, owner clock].

        Returns True when recorded, False when older than the newest observation (ignored,
        counted in ``stats.feedback_out_of_order``). Raises FeedbackError for a stamp that
        is not a finite real number or lies more than ``feedback_future_tolerance_s`` after
        the owner's clock, and the typed target-vector errors for bad positions; a refused
        observation changes nothing, so the feedback age keeps growing."""
        tol = self.config.feedback_future_tolerance_s
        try:
            stamp = finite_real(
                stamp_s, "stamp_s", "a finite time [s] on the owner's clock", FeedbackError
            )
            p = as_joint_vector(positions_rad, "feedback positions_rad", self.joints)
            now = self._clock.now()
            if not stamp <= now + tol:  # NaN-safe: an unreadable clock refuses too
                raise FeedbackError(
                    "stamp_s",
                    stamp_s,
                    f"<= now ({describe(now)} s) + {tol} s "
                    "(feedback_future_tolerance_s): a stamp from the future",
                )
        except Exception:
            with self._fb_lock:
                self.stats.feedback_refused += 1
            raise
        with self._fb_lock:
            if self._fb is None or stamp >= self._fb[1]:
                self._fb = (p, stamp)
                return True
            self.stats.feedback_out_of_order += 1
            return False

    # ----------------------------------------------------------------- control
    def stop(self) -> None:
        """Brake to hold from the coherent commanded state, then refuse targets until reset.

        Takes the ownership barrier: when this returns, no sample computed before the
        call can still reach the publisher."""
        with self._own:
            self.mailbox.close()
            if self.mode is not Mode.FAULTED:
                self._begin_brake(BrakeCause.STOP)

    def release(self) -> int:
        """Give up authority: revoke leases, brake to hold, start a fresh generation."""
        with self._own:
            self.authority.revoke()
            if self.mode is not Mode.FAULTED:
                self._begin_brake(BrakeCause.RELEASE)
            return self._new_generation_locked()

    def reconnect(self) -> int:
        """After a transport reconnect: discard pending targets, start a fresh generation."""
        with self._own:
            return self._new_generation_locked()

    def reset(self, positions_rad=None) -> int:
        """Explicit reset after a fault or a Stop; returns the new generation.

        The commanded state is re-seeded at rest at ``positions_rad`` [rad] (default:
        latest feedback, else the last commanded position). Only allowed when faulted,
        stopped or holding: the caller asserts the arm is at rest."""
        with self._own:
            if self.mode not in (Mode.FAULTED, Mode.STOPPED, Mode.HOLD):
                raise OwnerStateError("reset", self.mode.value, "faulted, stopped, hold")
            if positions_rad is not None:
                p0 = self._within_bounds(
                    as_joint_vector(positions_rad, "reset positions_rad", self.joints),
                    "reset positions_rad",
                )
            else:
                with self._fb_lock:
                    fb = self._fb
                p0 = fb[0].copy() if fb is not None else self._cmd_p.copy()
                p0 = self._within_bounds(p0, "reset position (latest feedback; pass positions_rad)")
            finite_real(self._clock.now(), "clock.now()", "a finite time [s]", OwnerConfigError)
            self.authority.revoke()
            self._start(p0)  # mode TRACKING at rest, so the new generation opens the mailbox
            with self._fb_lock:
                self._fb = None
            return self._new_generation_locked()

    def latch_fault(self, kind: FaultKind, reason: str) -> None:
        """Latch a fault found outside the tick (a second writer on the bus, say).

        Takes the ownership barrier: once this returns nothing more is published until
        ``reset()``. A fault already latched is kept (the first cause is the one reported).
        OwnerConfigError (nothing latched) for a kind that is not a FaultKind."""
        if not isinstance(kind, FaultKind):
            raise OwnerConfigError(
                "kind", kind, f"a FaultKind, one of {[k.value for k in FaultKind]}"
            )
        reason = reason if isinstance(reason, str) else describe(reason)
        with self._own:
            if self.mode is not Mode.FAULTED:
                self._latch(kind, reason, self._clock.now(), time.perf_counter(), 0.0)

    def _new_generation_locked(self) -> int:
        self._generation += 1
        self.mailbox.open(self._generation)
        if self.mode is Mode.STOPPED or (
            self.mode is Mode.BRAKING and self._brake_cause is BrakeCause.STOP
        ):
            self.mailbox.close()
        return self._generation

    # ----------------------------------------------------------------- the tick
    def tick(self) -> TickReport:
        """Run one control period: supervise, take, compute, check, publish.

        Never raises: whatever goes wrong inside is latched as a fault and reported."""
        with self._own:
            t0 = time.perf_counter()
            try:
                return self._tick_locked(t0)
            except Exception as err:  # noqa: BLE001 - the tick must never raise
                return self._contain(err, t0)

    def _contain(self, err: Exception, t0: float) -> TickReport:
        """Latch INTERNAL_ERROR for an exception raised inside the tick (a fault already
        latched is kept). Uses the last valid tick stamp: the clock may be the culprit."""
        now = self._last_tick_s if self._last_tick_s is not None else self._started_s
        why = (
            f"{type(err).__name__} inside the tick: {describe(str(err))}; "
            "nothing more is published until reset"
        )
        if self.mode is Mode.FAULTED:
            return self._report(now=now, reason=self.fault_reason, t0=t0)
        return self._latch(FaultKind.INTERNAL_ERROR, why, now, t0, 0.0)

    def _tick_locked(self, t0: float) -> TickReport:
        """One tick under the barrier, in four steps: supervise, take, compute, publish.
        A step that ends the tick early (a fault, a faulted owner) returns its report."""
        supervised = self._supervise(t0)
        if isinstance(supervised, TickReport):
            return supervised
        now, gap, reason = supervised
        taken = self._take(reason)
        computed = self._compute(now, t0, gap)
        if isinstance(computed, TickReport):
            return computed
        return self._publish(now, t0, gap, taken, computed)

    def _supervise(self, t0: float) -> TickReport | tuple[float, float, str]:
        """Step 1: read the clock, then supervise late ticks, feedback and the active lease.

        t0: ``perf_counter()`` at the tick's start [s]. Returns (now [s], gap [periods],
        reason) to go on (a late tick or an invalid lease may have begun a brake and set the
        reason), or the tick's report when the tick ends here: an invalid clock, a faulted
        owner, a fault latched now (LATE_TICK, STALE_FEEDBACK, TRACKING_ERROR)."""
        now = self._clock.now()
        self._tick_index += 1
        self.stats.ticks += 1
        c = self.config
        last = self._last_tick_s
        if (
            (
                type(now) is not float
                and (isinstance(now, bool) or not isinstance(now, numbers.Real))
            )
            or not math.isfinite(now)
            or (last is not None and not now >= last)
        ):
            stamp = last if last is not None else self._started_s
            if self.mode is Mode.FAULTED:
                return self._report(now=stamp, reason=self.fault_reason, t0=t0)
            return self._latch(
                FaultKind.INVALID_CLOCK,
                f"clock read {describe(now)} after {describe(last)} s: "
                "not a finite, non-decreasing time",
                stamp,
                t0,
                0.0,
            )
        gap = 0.0 if last is None else (now - last) / c.period_s
        self._last_tick_s = now
        reason = ""

        if self.mode is Mode.FAULTED:
            return self._report(now=now, reason=self.fault_reason, t0=t0, gap=gap)

        if not gap <= c.late_tick_periods:
            if c.late_tick_action is LateTickAction.FAULT:
                return self._latch(
                    FaultKind.LATE_TICK,
                    f"tick gap {gap:.2f} periods > {c.late_tick_periods}",
                    now,
                    t0,
                    gap,
                )
            if self.mode is Mode.TRACKING:
                self._begin_brake(BrakeCause.LATE_TICK)
                reason = f"late tick ({gap:.2f} periods): braking"
        fault = self._supervise_feedback(now)
        if fault is not None:
            return self._latch(fault[0], fault[1], now, t0, gap)
        if self.mode is Mode.TRACKING and self._active is not None:
            st = self.authority.status(self._active.lease)
            if st is not LeaseStatus.VALID:
                self._begin_brake(BrakeCause.LEASE)
                reason = f"lease {st.value}: braking to hold"
        return now, gap, reason

    def _take(self, reason: str) -> tuple[bool, bool, int | None, str]:
        """Step 2: take the latest target from the mailbox (only the destination changes).

        Returns (new_plan, moving: retargeted while not at rest, the target's sequence or
        None, reason: ``reason`` unless a target was dropped at take)."""
        c = self.config
        new_plan, moving, seq = False, False, None
        if self.mode in (Mode.TRACKING, Mode.HOLD):
            tgt = self.mailbox.take()
            if tgt is not None:
                st = self.authority.status(tgt.lease)
                if st is not LeaseStatus.VALID or tgt.generation != self._generation:
                    self.stats.dropped_at_take += 1
                    reason = f"target {tgt.sequence} dropped at take: lease {st.value}"
                else:
                    moving = any(abs(x) > c.rest_velocity_rad_s for x in self._cmd_v.tolist())
                    self._retarget(tgt)
                    new_plan, seq = True, tgt.sequence
                    self.stats.plans += 1
                    self.stats.moving_retargets += int(moving)
                    if self.hooks.after_take:
                        self.hooks.after_take(tgt)
        return new_plan, moving, seq, reason

    def _compute(
        self, now: float, t0: float, gap: float
    ) -> TickReport | tuple[Result, float, np.ndarray, np.ndarray, np.ndarray, bool]:
        """Step 3: the next sample from Ruckig (tracking or braking), checked against the
        position bounds and limits.

        now: the tick's stamp [s]; t0: ``perf_counter()`` at its start [s]; gap [periods].
        Returns (Ruckig's result, ruckig_s [s], p [rad], v [rad/s], a [rad/s^2], snapped:
        p was snapped onto a bound), or the report of a latched PLANNER_ERROR or
        LIMIT_VIOLATION."""
        try:
            res = self._otg.update(self._inp, self._out)
        except RuckigError as err:  # submit refuses what Ruckig would; this is the last guard
            detail = " ".join(str(err).split())[:160]
            return self._latch(FaultKind.PLANNER_ERROR, f"ruckig raised: {detail}", now, t0, gap)
        ruckig_s = self._out.calculation_duration * 1e-6
        if res not in (Result.Working, Result.Finished):
            return self._latch(
                FaultKind.PLANNER_ERROR, f"ruckig returned {res}", now, t0, gap, ruckig_s
            )
        out = self._out
        pl, vl, al = out.new_position, out.new_velocity, out.new_acceleration
        p, v, a = np.array(pl), np.array(vl), np.array(al)
        if self.hooks.after_compute is None and self._sample_ok(pl, vl, al):
            snapped = False  # every joint inside its bounds and limits: nothing to snap
        else:  # the full path: snap float excursions, run the hook, name what is wrong
            p, snapped = self._onto_bounds(p)
            if self.hooks.after_compute:
                self.hooks.after_compute(p)
            bad = self._check(p, v, a)
            if bad:
                return self._latch(FaultKind.LIMIT_VIOLATION, bad, now, t0, gap, ruckig_s)
        return res, ruckig_s, p, v, a, snapped

    def _publish(
        self,
        now: float,
        t0: float,
        gap: float,
        taken: tuple[bool, bool, int | None, str],
        computed: tuple[Result, float, np.ndarray, np.ndarray, np.ndarray, bool],
    ) -> TickReport:
        """Step 4: publish the sample and report the tick; only ACCEPTED advances the
        coherent commanded state. A refusal brakes (or latches what the publisher asks, or
        BLOCKED_BRAKING_PATH when not tracking); PARTIAL, UNCERTAIN, a raising publisher or
        one that returns no PublishReport latch a fault, never retried.

        now: the tick's stamp [s]; t0: ``perf_counter()`` at its start [s]; gap [periods];
        taken: what ``_take`` returned; computed: what ``_compute`` returned."""
        new_plan, moving, seq, reason = taken
        res, ruckig_s, p, v, a, snapped = computed
        if self.hooks.before_publish:
            self.hooks.before_publish(p)
        try:
            if self._publish_state is not None:
                rep = self._publish_state(p, v, a)
            else:
                rep = self._pub.publish_sample(p)
        except Exception as err:  # noqa: BLE001 - a frame may be on the bus: never guess "not sent"
            return self._latch(
                FaultKind.UNCERTAIN_OUTPUT,
                f"publisher raised {type(err).__name__}: {describe(str(err))}; never retried",
                now,
                t0,
                gap,
                ruckig_s,
                PublishOutcome.UNCERTAIN,
            )
        if not isinstance(getattr(rep, "outcome", None), PublishOutcome):
            return self._latch(
                FaultKind.UNCERTAIN_OUTPUT,
                f"publisher returned {describe(rep)}, not a PublishReport; never retried",
                now,
                t0,
                gap,
                ruckig_s,
                PublishOutcome.UNCERTAIN,
            )
        if self.hooks.after_publish:
            self.hooks.after_publish(rep)
        if rep.outcome is PublishOutcome.ACCEPTED:
            self._out.pass_to_input(self._inp)
            if snapped:  # Ruckig continues from exactly what was published
                self._inp.current_position = p.tolist()
            self._cmd_p, self._cmd_v, self._cmd_a = p, v, a
            self._history.append((now, p.copy()))
            self.stats.published += 1
            if self.mode is Mode.BRAKING and res is Result.Finished:
                self._finish_brake()
            return self._report(
                now=now,
                reason=reason,
                t0=t0,
                gap=gap,
                published=True,
                outcome=rep.outcome,
                new_plan=new_plan,
                seq=seq,
                moving=moving,
                ruckig_s=ruckig_s,
            )
        if rep.outcome is PublishOutcome.REFUSED:
            self.stats.refused_outputs += 1
            if rep.fault_kind:  # a refusal the publisher says must latch, not brake
                return self._latch(
                    FaultKind(rep.fault_kind),
                    f"output refused: {rep.reason}",
                    now,
                    t0,
                    gap,
                    ruckig_s,
                    rep.outcome,
                )
            if self.mode is Mode.TRACKING:
                self._begin_brake(BrakeCause.OUTPUT_REFUSED)
                return self._report(
                    now=now,
                    reason=f"output refused ({rep.reason}): braking",
                    t0=t0,
                    gap=gap,
                    outcome=rep.outcome,
                    new_plan=new_plan,
                    seq=seq,
                    moving=moving,
                    ruckig_s=ruckig_s,
                )
            return self._latch(
                FaultKind.BLOCKED_BRAKING_PATH,
                f"publisher refused while {self.mode.value}: {rep.reason}",
                now,
                t0,
                gap,
                ruckig_s,
                rep.outcome,
            )
        kind = (
            FaultKind.PARTIAL_OUTPUT
            if rep.outcome is PublishOutcome.PARTIAL
            else FaultKind.UNCERTAIN_OUTPUT
        )
        return self._latch(
            kind,
            f"{rep.outcome.value} output (joints on bus {rep.accepted_joints}): {rep.reason}; "
            "never retried",
            now,
            t0,
            gap,
            ruckig_s,
            rep.outcome,
        )

    # ----------------------------------------------------------------- helpers
    def _retarget(self, tgt: ArmTarget) -> None:
        """Ruckig's target becomes ``tgt`` (positions [rad], velocity [rad/s] and acceleration
        [rad/s^2] on arrival, zero when not given); the current state is kept."""
        inp = self._inp
        inp.control_interface = ControlInterface.Position
        inp.target_position = tgt.positions_rad.tolist()
        n = self.joints
        inp.target_velocity = (
            [0.0] * n if tgt.velocity_rad_s is None else tgt.velocity_rad_s.tolist()
        )
        inp.target_acceleration = (
            [0.0] * n if tgt.acceleration_rad_s2 is None else tgt.acceleration_rad_s2.tolist()
        )
        # A target that carries a velocity or an acceleration is a state on a stream (the
        # executor sends the plan's state one period ahead): arrive no sooner than one
        # period. A time-optimal re-plan to it each tick can pick a profile that turns away
        # from the stream after an acceleration peak and falls behind it.
        streamed = tgt.velocity_rad_s is not None or tgt.acceleration_rad_s2 is not None
        inp.minimum_duration = self.config.period_s if streamed else None
        self._active = tgt
        self.mode = Mode.TRACKING

    def _begin_brake(self, cause: BrakeCause) -> None:
        """Discard pending targets and brake to velocity 0 [rad/s] within the limits (a
        stopped owner stays stopped unless ``cause`` is another Stop)."""
        self.mailbox.discard()
        self._active = None
        if self.mode is Mode.STOPPED and cause is not BrakeCause.STOP:
            return
        self.mode = Mode.BRAKING
        self._brake_cause = cause
        inp = self._inp
        inp.control_interface = ControlInterface.Velocity
        inp.minimum_duration = None
        inp.target_velocity = [0.0] * self.joints
        inp.target_acceleration = [0.0] * self.joints

    def _finish_brake(self) -> None:
        # Ruckig reports the brake Finished: velocity and acceleration are zero; what is
        # left is float residue, on which a hold at the same position can make Ruckig
        # raise. Continue from exact zeros.
        n = self.joints
        self._inp.current_velocity = [0.0] * n
        self._inp.current_acceleration = [0.0] * n
        self._cmd_v = np.zeros(n)
        self._cmd_a = np.zeros(n)
        self._set_hold_target(self._cmd_p)
        self.mode = Mode.STOPPED if self._brake_cause is BrakeCause.STOP else Mode.HOLD

    def _onto_bounds(self, p: np.ndarray) -> tuple[np.ndarray, bool]:
        """Snap float-rounding excursions past a position bound back onto it.

        Ruckig can land a target that sits on a bound a few ulps outside it [rad], which the
        codec would rightly refuse. Only excursions up to ``limit_tolerance`` [rad] are
        snapped; anything larger is left for ``_check`` to reject. Returns (p [rad],
        whether it was snapped)."""
        inside = np.clip(p, self._lo, self._hi)
        if np.array_equal(inside, p):
            return p, False
        if np.max(np.abs(inside - p)) > self.config.limit_tolerance:
            return p, False
        return inside, True

    def _sample_ok(self, pl: list, vl: list, al: list) -> bool:
        """True when the sample (plain floats: pl [rad], vl [rad/s], al [rad/s^2]) is inside
        every position bound and passes every limit of ``_check``; False sends the tick down
        the full path (``_onto_bounds``, ``_check``), which decides and names the failure.
        Every comparison is NaN-safe (a NaN fails it), and passing here implies passing
        there: ``lo <= x <= hi`` leaves nothing to snap and lies within ``lo - tol .. hi +
        tol``, and the other four are ``_check``'s own comparisons against the same
        ``lim + tol``."""
        dt = self.config.period_s
        for x, v, a, a0, p0, (lo, hi, vmax, amax, jmax, smax) in zip(
            pl, vl, al, self._cmd_a.tolist(), self._cmd_p.tolist(), self._fast_limits, strict=True
        ):
            if not (
                lo <= x <= hi
                and abs(v) <= vmax
                and abs(a) <= amax
                and abs(a - a0) / dt <= jmax
                and abs(x - p0) <= smax
            ):
                return False
        return True

    def _check(self, p: np.ndarray, v: np.ndarray, a: np.ndarray) -> str:
        """The per-sample limit check of p [rad], v [rad/s], a [rad/s^2] (plain floats: it
        runs every tick): position bounds, velocity, acceleration, discrete jerk [rad/s^3]
        and step [rad] against the last commanded sample. "" when it passes, else what is
        wrong (joint, value, limit)."""
        tol = self.config.limit_tolerance
        dt = self.config.period_s
        cmd_p, cmd_a = self._cmd_p.tolist(), self._cmd_a.tolist()
        pl, vl, al = p.tolist(), v.tolist(), a.tolist()
        for j, (x, lo, hi) in enumerate(zip(pl, self._lo_l, self._hi_l, strict=True)):
            if not lo - tol <= x <= hi + tol:  # Ruckig has no position limits: overshoot is ours
                return f"joint {j + 1}: position {x!r} outside the bounds [{lo!r}, {hi!r}] rad"
        for name, vals, lims in (
            ("velocity", [abs(x) for x in vl], self._lim_v),
            ("acceleration", [abs(x) for x in al], self._lim_a),
            (
                "discrete jerk",
                [abs(x - y) / dt for x, y in zip(al, cmd_a, strict=True)],
                self._lim_j,
            ),
            ("step", [abs(x - y) for x, y in zip(pl, cmd_p, strict=True)], self._lim_step),
        ):
            for j, (val, lim) in enumerate(zip(vals, lims, strict=True)):
                if not val <= lim + tol:  # NaN-safe
                    return f"joint {j + 1}: {name} {val!r} exceeds limit {lim!r}"
        return ""

    def _supervise_feedback(self, now: float) -> tuple[FaultKind, str] | None:
        """The feedback fault at ``now`` [s] (``feedback_fault``), or None."""
        with self._fb_lock:
            fb = self._fb
        return feedback_fault(self.config, now, self._started_s, fb, self._history)

    def _latch(self, kind, why, now, t0, gap, ruckig_s=0.0, outcome=None) -> TickReport:
        """Latch fault ``kind`` (FAULTED: nothing is published until reset) and report the
        tick; now, t0, gap, ruckig_s as in ``_report`` [s, s, periods, s]."""
        self.mode = Mode.FAULTED
        self.fault, self.fault_reason = kind, why
        self.stats.faults.append((kind, why))
        self.mailbox.close()
        self._active = None
        return self._report(now=now, reason=why, t0=t0, gap=gap, outcome=outcome, ruckig_s=ruckig_s)

    def _report(
        self,
        *,
        now: float,
        reason: str,
        t0: float,
        gap: float = 0.0,
        published: bool = False,
        outcome: PublishOutcome | None = None,
        new_plan: bool = False,
        seq: int | None = None,
        moving: bool = False,
        ruckig_s: float = 0.0,
    ) -> TickReport:
        """The report of this tick. now: its stamp [s]; t0: ``perf_counter()`` at its start [s];
        gap: time since the previous tick [periods]; ruckig_s: Ruckig's calculation time [s]."""
        return TickReport(
            index=self._tick_index,
            stamp_s=now,
            mode=self.mode,
            published=published,
            outcome=outcome,
            new_plan=new_plan,
            target_sequence=seq,
            moving_retarget=moving,
            positions_rad=self._cmd_p.copy(),
            velocities_rad_s=self._cmd_v.copy(),
            accelerations_rad_s2=self._cmd_a.copy(),
            fault=self.fault,
            reason=reason,
            compute_s=time.perf_counter() - t0,
            ruckig_s=ruckig_s,
            gap_periods=gap,
        )
