"""Synchronized execution of a multi-arm timed trajectory through the arm owners (no mujoco).

A two-arm plan is only safe when both arms run it *together* (seed 002: run one arm
after the other, 97 of 1,400 states intersected). ``SyncExecutor.begin(trajectory)``:

1. validates the arrays (``rob_twin.controllers.trajectory``: one shared time base, finite, shapes);
2. acquires every moving arm all-or-nothing: each owner must be TRACKING or HOLD, at rest
   at the trajectory's first sample, and the samples must be inside its limits; then a
   lease is granted on every owner and a fresh generation opened (no stale target of an
   earlier client can land); a failure on any arm releases all and names the arm;
3. computes ONE start stamp ``start = clock.now() + lead_time_s``, once.

Streaming: ``Execution.feed(arm, tick_s)`` submits the planned state (q, qd, qdd) at plan
time ``tick_s - start + lookahead_s`` as the target the owner takes at its tick at
``tick_s`` [s], and renews the arm's lease. It is called per owner tick in lockstep
(``Execution.on_tick`` for ``ClosedLoop.on_tick``) or by one thread per arm against the
shared stamp in real time (``SyncExecutor.run_realtime``).

One shared cancel (``Execution.cancel_event``): an arm's fault, a rejected target, a lost
lease, an owner leaving TRACKING, a missed settle deadline or ``abort()`` sets it once
(first cause wins) and stops *every* arm's owner (brake to hold; Stop refuses targets
until reset). Stop closes the mailbox under the owner's barrier, so no target of this
execution can land after the cancel returned.

Units: seconds, radians.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
from rob_twin.controllers.clock import Clock
from rob_twin.controllers.execution_report import (
    START_TOLERANCE_RAD,
    AcquireReason,
    AcquisitionFailure,
    ArmReport,
    ExecutionReport,
    Outcome,
)
from rob_twin.controllers.lease import Lease, LeaseStatus
from rob_twin.controllers.owner import ArmOwner
from rob_twin.controllers.owner_types import Mode, TickReport
from rob_twin.controllers.target import ArmTarget
from rob_twin.controllers.trajectory import MultiArmTrajectory, TrajectoryError
from rob_twin.models.names import Arm


@dataclass(frozen=True)
class ExecutorConfig:
    """lead_time_s: start stamp = now + this [s] (time to acquire and spin up the arm
    threads); lookahead_s: targets are the plan this far past the tick they are taken at
    [s] (see ``default_config``); lease_s: lease length, renewed at every feed [s];
    start_tolerance_rad: owner's commanded position vs the first sample [rad];
    rest_tolerance_rad_s: |commanded velocity| counted as rest [rad/s];
    final_tolerance_rad: commanded vs last sample to count as arrived [rad];
    settle_timeout_s: after the plan's end, time allowed to arrive [s];
    limit_tolerance: relative slack of the plan-vs-owner limit check; holder: lease holder."""

    lead_time_s: float = 0.05
    lookahead_s: float = 0.005
    lease_s: float = 0.25
    start_tolerance_rad: float = START_TOLERANCE_RAD
    rest_tolerance_rad_s: float = 1e-3
    final_tolerance_rad: float = 1e-4
    settle_timeout_s: float = 0.5
    limit_tolerance: float = 1e-6
    holder: str = "executor"

    def __post_init__(self) -> None:
        for name in (
            "lead_time_s",
            "lease_s",
            "start_tolerance_rad",
            "rest_tolerance_rad_s",
            "final_tolerance_rad",
            "settle_timeout_s",
        ):
            v = getattr(self, name)
            if not (np.isfinite(v) and v > 0):
                raise TrajectoryError(None, f"config.{name}", v, "finite and > 0")
        if not (np.isfinite(self.lookahead_s) and self.lookahead_s >= 0):
            raise TrajectoryError(None, "config.lookahead_s", self.lookahead_s, "finite and >= 0 s")


def default_config() -> ExecutorConfig:
    """50 ms lead, lookahead one owner period (5 ms), 0.25 s leases, 0.5 s to settle.

    Lookahead L: Ruckig's update returns the state one period ahead, so the sample an owner
    publishes at tick T is the commanded state for T + period. A target of
    plan(T - start + L) with L = one period keeps the published samples closest to
    plan(T + period - start): a shorter L lags by up to a period, a longer one lets Ruckig
    reach the target early and run ahead (tests/test_execution.py checks the deviation).
    Both arms use the same L, so the arms stay synchronized whatever L is."""
    return ExecutorConfig()


@dataclass
class ExecutorHooks:
    """Deterministic interleaving points (tests): ``on_stamp(start_s)`` after the stamp;
    ``thread_started(arm)`` first thing in an arm's real-time thread; ``before_submit(arm,
    target)`` between building a target and offering it to the owner;
    ``waiting_for_stamp(arm, now_s)`` when an arm's real-time thread waits for the stamp."""

    on_stamp: Callable[[float], None] | None = None
    thread_started: Callable[[Arm], None] | None = None
    before_submit: Callable[[Arm, ArmTarget], None] | None = None
    waiting_for_stamp: Callable[[Arm, float], None] | None = None


@dataclass
class _Arm:
    owner: ArmOwner
    lease: Lease
    generation: int
    seq: int = 0
    sent_final: bool = False
    arrived: bool = False
    first_planned_s: float | None = None
    sent: int = 0
    rejected: int = 0
    last_tick_s: float | None = None
    rows: list = field(default_factory=list)  # (stamp, p, v, a)


class Execution:
    """One synchronized run; made by ``SyncExecutor.begin``. Thread-safe."""

    def __init__(self, executor: SyncExecutor, traj: MultiArmTrajectory) -> None:
        self.executor = executor
        self.config = executor.config
        self.trajectory = traj
        self.clock = executor.clock
        self.cancel_event = threading.Event()
        self.finished = threading.Event()
        self.start_s: float | None = None
        self._lock = threading.Lock()
        self._arms: dict[Arm, _Arm] = {}
        self._outcome: tuple[Outcome, str, Arm | None] | None = None
        self.acquisition: AcquisitionFailure | None = None

    # ------------------------------------------------------------------ state
    @property
    def arms(self) -> tuple[Arm, ...]:
        return tuple(self.trajectory.arms)

    @property
    def done(self) -> bool:
        return self.finished.is_set()

    @property
    def end_s(self) -> float:
        """Shared stamp + plan duration [s]."""
        return (self.start_s or 0.0) + self.trajectory.duration_s

    # ------------------------------------------------------------------ streaming
    def feed(self, arm: Arm, tick_s: float) -> bool:
        """Submit ``arm``'s target for the owner tick at ``tick_s`` [s] and renew its lease.

        Returns False once this execution is over (nothing is submitted then)."""
        if self.cancel_event.is_set() or self.done or self.start_s is None:
            return False
        st = self._arms[arm]
        if tick_s < self.start_s - 1e-9:
            return True
        lease = st.owner.authority.renew(st.lease, self.config.lease_s)
        if lease is None:
            st_ = st.owner.authority.status(st.lease)
            self._finish(Outcome.FAULTED, arm, f"{arm.value}: lease lost ({st_.value})")
            return False
        st.lease = lease
        if st.sent_final:
            return True
        tau = tick_s - self.start_s + self.config.lookahead_s
        q, qd, qdd = self.trajectory.sample(arm, tau)
        if tau >= self.trajectory.duration_s:  # the last target arrives at rest
            qd, qdd = np.zeros_like(qd), np.zeros_like(qdd)
        qd, qdd = _feasible(qd, qdd, st.owner)
        st.seq += 1
        target = ArmTarget(
            arm=arm,
            positions_rad=q,
            sequence=st.seq,
            generation=st.generation,
            lease=lease,
            velocity_rad_s=qd,
            acceleration_rad_s2=qdd,
            joints=st.owner.joints,
        )
        hook = self.executor.hooks.before_submit
        if hook:
            hook(arm, target)
        res = st.owner.submit(target)
        if not res.accepted:
            st.rejected += 1
            self.poll(arm)  # a faulted or stopped owner is the cause worth reporting
            why = res.reason.value if res.reason else "rejected"
            self._finish(Outcome.FAULTED, arm, f"{arm.value}: target {st.seq} rejected ({why})")
            return False
        st.sent += 1
        st.sent_final = tau >= self.trajectory.duration_s
        return True

    def observe(self, arm: Arm, report: TickReport) -> None:
        """Record one owner tick of ``arm``; detect its failure, arrival, or a missed deadline."""
        st = self._arms.get(arm)
        if st is None or self.start_s is None:
            return
        with self._lock:
            st.last_tick_s = report.stamp_s
            if report.published:
                st.rows.append(
                    (
                        report.stamp_s,
                        report.positions_rad,
                        report.velocities_rad_s,
                        report.accelerations_rad_s2,
                    )
                )
            if report.new_plan and st.first_planned_s is None and st.sent:
                st.first_planned_s = report.stamp_s
        if self.done:
            return
        self._supervise(
            arm,
            report.stamp_s,
            report.mode,
            report.reason,
            report.fault,
            report.positions_rad,
            report.velocities_rad_s,
        )

    def on_tick(self, arm: Arm, report: TickReport) -> None:
        """Lockstep hook (``ClosedLoop.on_tick``): observe, then feed the next tick."""
        self.observe(arm, report)
        st = self._arms.get(arm)
        if st is not None:
            self.feed(arm, report.stamp_s + st.owner.config.period_s)

    def next_tick(self, arm: Arm, now: float) -> float:
        """Estimated time [s] of ``arm``'s next owner tick at or after ``now`` (from the last
        observed tick; ``now`` + one period when no tick was observed)."""
        st = self._arms[arm]
        period = st.owner.config.period_s
        last = st.last_tick_s
        if last is None:
            return now + period
        return last + max(1, int(np.ceil((now - last) / period - 1e-9))) * period

    def poll(self, arm: Arm) -> None:
        """Supervise ``arm`` from its owner's commanded state (real-time threads)."""
        owner = self._arms[arm].owner
        p, v, _ = owner.commanded_state()
        self._supervise(arm, self.clock.now(), owner.mode, owner.fault_reason, owner.fault, p, v)

    def _supervise(self, arm, now, mode, reason, fault, p, v) -> None:
        st = self._arms[arm]
        if mode is Mode.FAULTED:
            kind = fault.value if fault is not None else "fault"
            self._finish(Outcome.FAULTED, arm, f"{arm.value} owner faulted ({kind}): {reason}")
            return
        if mode in (Mode.BRAKING, Mode.STOPPED) or (mode is Mode.HOLD and st.sent):
            self._finish(
                Outcome.FAULTED,
                arm,
                f"{arm.value} owner left tracking ({mode.value})"
                + (f": {reason}" if reason else ""),
            )
            return
        if st.sent_final and now >= self.end_s - 1e-9:
            q_end = self.trajectory.arms[arm].q[-1]
            st.arrived = bool(
                np.max(np.abs(p - q_end)) <= self.config.final_tolerance_rad
                and np.max(np.abs(v)) <= self.config.rest_tolerance_rad_s
            )
        if all(a.arrived for a in self._arms.values()):
            self._finish(Outcome.COMPLETED, None, "every arm arrived at its last sample")
        elif now > self.end_s + self.config.settle_timeout_s:
            late = [a.value for a, s in self._arms.items() if not s.arrived]
            self._finish(
                Outcome.CANCELLED,
                arm,
                f"{', '.join(late)} not at the last sample "
                f"{self.config.settle_timeout_s} s after the plan's end",
            )

    # ------------------------------------------------------------------ ending
    def abort(self, reason: str = "aborted") -> None:
        """Cancel: every arm's owner brakes to hold (Stop)."""
        self._finish(Outcome.CANCELLED, None, reason)

    def _finish(self, outcome: Outcome, arm: Arm | None, reason: str) -> None:
        with self._lock:
            if self._outcome is not None:
                return
            self._outcome = (outcome, reason, arm)
            if outcome is not Outcome.COMPLETED:
                self.cancel_event.set()
        if outcome is Outcome.COMPLETED:
            self._release()
        elif outcome is not Outcome.ACQUISITION_FAILED:
            for st in self._arms.values():
                st.owner.stop()
        self.finished.set()

    def _release(self) -> None:
        for st in self._arms.values():
            if st.owner.authority.status(st.lease) is LeaseStatus.VALID:
                st.owner.revoke_authority()

    def wait(self, timeout_s: float | None = None) -> bool:
        return self.finished.wait(timeout_s)

    # ------------------------------------------------------------------ report
    def report(self) -> ExecutionReport:
        with self._lock:
            outcome = self._outcome or (Outcome.CANCELLED, "still running", None)
            rows = {a: list(s.rows) for a, s in self._arms.items()}
        arms = {a: self._arm_report(a, rows[a]) for a in self._arms}
        return ExecutionReport(
            outcome=outcome[0],
            reason=outcome[1],
            arm=outcome[2],
            start_s=self.start_s,
            duration_s=self.trajectory.duration_s,
            arms=arms,
            acquisition=self.acquisition,
        )

    def _arm_report(self, arm: Arm, rows: list) -> ArmReport:
        st = self._arms[arm]
        start = self.start_s or 0.0
        if rows:
            stamps = np.array([r[0] for r in rows])
            p, v, a = (np.array([r[k] for r in rows]) for k in (1, 2, 3))
        else:
            n = st.owner.joints
            stamps, p, v, a = np.zeros(0), *(np.zeros((0, n)) for _ in range(3))
        due = stamps - start + st.owner.config.period_s  # a sample is the state at its period's end
        planned = self.trajectory.sample_many(arm, due) if rows else np.zeros((0, st.owner.joints))
        window = (stamps >= start - 1e-9) & (stamps <= self.end_s + self.config.settle_timeout_s)
        dev = np.abs(p[window] - planned[window]).max(axis=1) if window.any() else np.zeros(0)
        first = st.first_planned_s
        return ArmReport(
            arm=arm,
            stamps_s=stamps,
            positions_rad=p,
            velocities_rad_s=v,
            accelerations_rad_s2=a,
            planned_rad=planned,
            first_planned_s=first,
            start_offset_s=None if first is None else first - start,
            max_deviation_rad=float(dev.max()) if dev.size else 0.0,
            rms_deviation_rad=float(np.sqrt(np.mean(dev**2))) if dev.size else 0.0,
            targets_sent=st.sent,
            targets_rejected=st.rejected,
        )


class SyncExecutor:
    """Runs multi-arm trajectories on a set of owners sharing one clock.

    owners: arm -> its ArmOwner; clock: the owners' time base (SimClock in lockstep,
    MonotonicClock in real time); config: ``default_config()``; hooks: test points."""

    def __init__(
        self,
        owners: Mapping[Arm | str, ArmOwner],
        clock: Clock,
        config: ExecutorConfig | None = None,
        hooks: ExecutorHooks | None = None,
    ):
        self.owners = {Arm.parse(a): o for a, o in owners.items()}
        self.clock = clock
        self.config = config or default_config()
        self.hooks = hooks or ExecutorHooks()
        self.current: Execution | None = None

    def begin(self, trajectory: MultiArmTrajectory | Mapping[Arm | str, tuple]) -> Execution:
        """Validate, acquire every moving arm (all or none), compute the shared stamp once.

        Raises TrajectoryError / UnknownNameError for malformed input (an arm's columns are
        its owner's joint count). An acquisition failure comes back as a finished Execution
        with outcome ACQUISITION_FAILED."""
        joints = {arm: owner.joints for arm, owner in self.owners.items()}
        traj = (
            trajectory
            if isinstance(trajectory, MultiArmTrajectory)
            else MultiArmTrajectory.from_arrays(trajectory, joints)
        )
        for arm, s in traj.arms.items():
            n = joints.get(arm, s.q.shape[1])
            if s.q.shape[1] != n:
                raise TrajectoryError(
                    arm, "q shape", s.q.shape, f"({s.q.shape[0]}, {n}): one column per joint"
                )
            for k, what in ((0, "first"), (-1, "last")):
                v = float(np.max(np.abs(s.qd[k])))
                if v > self.config.rest_tolerance_rad_s:
                    raise TrajectoryError(
                        arm,
                        f"qd[{k}]",
                        v,
                        f"the {what} sample at rest "
                        f"(|qd| <= {self.config.rest_tolerance_rad_s} rad/s)",
                    )
        ex = Execution(self, traj)
        self.current = ex
        failure = self._acquire(ex)
        if failure is not None:
            ex.acquisition = failure
            ex.start_s = None
            ex._finish(
                Outcome.ACQUISITION_FAILED,
                failure.arm,
                f"{failure.arm.value}: {failure.kind.value}: {failure.reason}",
            )
            return ex
        ex.start_s = self.clock.now() + self.config.lead_time_s
        if self.hooks.on_stamp:
            self.hooks.on_stamp(ex.start_s)
        return ex

    def observe(self, arm: Arm, report: TickReport) -> None:
        """Forward an owner's tick report to the current execution (real-time ``on_report``)."""
        ex = self.current
        if ex is not None:
            ex.observe(arm, report)

    def run_realtime(self, trajectory, timeout_s: float | None = None) -> ExecutionReport:
        """Acquire, then stream each arm from its own thread against the shared stamp.

        The owners must be ticking in their own real-time threads (``start_realtime_thread``,
        best with ``on_report=lambda r: executor.observe(arm, r)`` for the published states).
        timeout_s: wall limit [s] (default: lead + duration + settle + 1 s), then abort."""
        ex = self.begin(trajectory)
        if ex.done:
            return ex.report()
        threads = [
            threading.Thread(
                target=self._arm_thread, args=(ex, arm), name=f"exec-{arm.value}", daemon=True
            )
            for arm in ex.arms
        ]
        for th in threads:
            th.start()
        c = self.config
        limit = (
            timeout_s
            if timeout_s is not None
            else (c.lead_time_s + ex.trajectory.duration_s + c.settle_timeout_s + 1.0)
        )
        if not ex.wait(limit):
            ex.abort(f"real-time execution exceeded {limit:.3f} s")
        for th in threads:
            th.join(5.0)
        return ex.report()

    def _arm_thread(self, ex: Execution, arm: Arm) -> None:
        if self.hooks.thread_started:
            self.hooks.thread_started(arm)
        owner = self.owners[arm]
        period = owner.config.period_s
        # Nothing of the plan may reach the owner before the shared stamp. The owner's tick
        # times are only estimated here (a late real-time tick re-phases them), so the first
        # target is offered once the clock itself has reached the stamp, and only after
        # passing the owner's barrier (commanded_state): a tick that read its clock before
        # the stamp has then finished, and any tick that takes the target reads it later.
        while not ex.cancel_event.is_set() and not ex.done:
            now = self.clock.now()
            if now >= ex.start_s:
                break
            if self.hooks.waiting_for_stamp:
                self.hooks.waiting_for_stamp(arm, now)
            if ex.cancel_event.wait(min(ex.start_s - now, period)):
                return
        owner.commanded_state()
        while not ex.cancel_event.is_set() and not ex.done:
            tick = ex.next_tick(arm, self.clock.now())
            if not ex.feed(arm, tick):
                break
            ex.poll(arm)
            # wake shortly after that tick: the next target lands before the following one
            wait = tick + 0.25 * period - self.clock.now()
            if wait > 0 and ex.cancel_event.wait(wait):
                break

    # ------------------------------------------------------------------ acquisition
    def _acquire(self, ex: Execution) -> AcquisitionFailure | None:
        for arm in ex.arms:
            why = self._check(arm, ex.trajectory)
            if why is not None:
                return why
        granted: dict[Arm, tuple[Lease, int]] = {}
        c = self.config
        try:
            for arm in ex.arms:
                owner = self.owners[arm]
                lease = owner.grant_lease(c.holder, c.lead_time_s + c.lease_s)
                granted[arm] = (lease, owner.reconnect())  # fresh generation: no stale target
            for arm in ex.arms:  # re-check: an owner may have faulted meanwhile
                why = self._check(arm, ex.trajectory)
                if why is not None:
                    raise _Refused(why)
        except _Refused as err:
            self._release(granted)
            return err.failure
        except Exception as err:  # a grant that raised: release the ones already granted
            self._release(granted)
            arm = next((a for a in ex.arms if a not in granted), ex.arms[0])
            return AcquisitionFailure(arm, AcquireReason.LEASE, f"{type(err).__name__}: {err}")
        ex._arms = {a: _Arm(self.owners[a], *granted[a]) for a in ex.arms}
        return None

    def _release(self, granted: dict[Arm, tuple[Lease, int]]) -> None:
        for arm, (lease, _) in granted.items():
            owner = self.owners[arm]
            if owner.authority.status(lease) is LeaseStatus.VALID:
                owner.revoke_authority()

    def _check(self, arm: Arm, traj: MultiArmTrajectory) -> AcquisitionFailure | None:
        owner = self.owners.get(arm)
        if owner is None:
            return AcquisitionFailure(
                arm, AcquireReason.NO_OWNER, f"no owner; owners: {[a.value for a in self.owners]}"
            )
        if owner.mode not in (Mode.TRACKING, Mode.HOLD):
            extra = f" ({owner.fault.value}: {owner.fault_reason})" if owner.fault else ""
            return AcquisitionFailure(
                arm, AcquireReason.NOT_ACCEPTING, f"owner is {owner.mode.value}{extra}"
            )
        p, v, _ = owner.commanded_state()
        c = self.config
        if np.max(np.abs(v)) > c.rest_tolerance_rad_s:
            return AcquisitionFailure(
                arm,
                AcquireReason.MOVING,
                f"commanded |v| {np.max(np.abs(v)):.4g} rad/s > {c.rest_tolerance_rad_s} rad/s",
            )
        s = traj.arms[arm]
        err = np.abs(p - s.q[0])
        j = int(np.argmax(err))
        if err[j] > c.start_tolerance_rad:
            return AcquisitionFailure(
                arm,
                AcquireReason.START_MISMATCH,
                f"joint {j + 1}: commanded {p[j]:.5f} rad vs first sample "
                f"{s.q[0][j]:.5f} rad (tolerance {c.start_tolerance_rad})",
            )
        why = _limit_violation(owner, traj.t, s, c.limit_tolerance)
        return None if why is None else AcquisitionFailure(arm, AcquireReason.LIMITS, why)


class _Refused(Exception):
    def __init__(self, failure: AcquisitionFailure):
        self.failure = failure


def _limit_violation(owner: ArmOwner, t: np.ndarray, s, tol: float) -> str | None:
    cfg = owner.config
    lo, hi = np.array(cfg.position_lower), np.array(cfg.position_upper)
    checks = [
        ("position below lower bound", lo - s.q, 0.0),
        ("position above upper bound", s.q - hi, 0.0),
        ("velocity", np.abs(s.qd) - np.array(cfg.max_velocity), 0.0),
        ("acceleration", np.abs(s.qdd) - np.array(cfg.max_acceleration), 0.0),
    ]
    if t.size > 1:
        jerk = np.abs(np.diff(s.qdd, axis=0)) / np.diff(t)[:, None]
        checks.append(("jerk", jerk - np.array(cfg.max_jerk), 0.0))
    for name, excess, _ in checks:
        scale = 1.0 if name.startswith("position") else 1.0 + tol
        bad = np.argwhere(excess > tol * scale)
        if bad.size:
            k, j = (int(x) for x in bad[0])
            return (
                f"joint {j + 1} sample {k}: {name} exceeds the owner's limit by {excess[k, j]:.4g}"
            )
    return None


def _feasible(qd: np.ndarray, qdd: np.ndarray, owner: ArmOwner) -> tuple[np.ndarray, np.ndarray]:
    """Clip an interpolated target (v [rad/s], a [rad/s^2]) into the owner's limits so Ruckig
    accepts it: |v| <= vmax, |a| <= amax, and no acceleration that would carry v past vmax."""
    cfg = owner.config
    vmax = np.array(cfg.max_velocity) * (1 - 1e-9)
    amax = np.array(cfg.max_acceleration) * (1 - 1e-9)
    jmax = np.array(cfg.max_jerk)
    v = np.clip(qd, -vmax, vmax)
    a = np.clip(qdd, -amax, amax)
    room = np.sqrt(np.maximum(2.0 * jmax * (vmax - np.abs(v)), 0.0))
    outward = np.sign(a) == np.sign(v)
    a = np.where(outward, np.clip(a, -room, room), a)
    return v, a
