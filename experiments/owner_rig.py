"""The one owner test rig (simulated bus, no hardware): a recording publisher, a lockstep rig,
a null publisher for benchmarks, and the held-tick stop-race harness.

Shared by ``tests/``, ``experiments/exp_*`` and ``experiments/bench_owner.py``. Runs lockstep on
a SimClock with idealized feedback unless a case injects a fault.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field

import numpy as np
from rob_twin.controllers.clock import SimClock
from rob_twin.controllers.owner import ArmOwner
from rob_twin.controllers.owner_config import OwnerConfig, default_config
from rob_twin.controllers.owner_types import OwnerHooks
from rob_twin.controllers.publish import PublishOutcome, PublishReport
from rob_twin.controllers.target import ArmTarget
from rob_twin.models.names import Arm

ALL_JOINTS = tuple(range(1, 8))


class RecordingPublisher:
    """Records every sample it is handed; outcomes come from an injectable script.

    detailed: report a reason ("scripted"), frames sent and the joints of a PARTIAL batch
    (1, 2, 3), as the tests expect; False gives the bare report the experiments were
    recorded with (no reason, no frame count, no joints unless accepted).
    """

    def __init__(self, detailed: bool = True):
        self.samples: list[np.ndarray] = []
        self.outcomes: list[PublishOutcome] = []
        self.script: deque[PublishOutcome] = deque()
        self.default = PublishOutcome.ACCEPTED
        self.on_publish = None  # optional callback(sample)
        self.lock = threading.Lock()
        self.detailed = detailed

    def publish_sample(self, positions_rad: np.ndarray) -> PublishReport:
        with self.lock:
            outcome = self.script.popleft() if self.script else self.default
            self.samples.append(np.array(positions_rad, float))
            self.outcomes.append(outcome)
        if self.on_publish:
            self.on_publish(positions_rad)
        if not self.detailed:
            return PublishReport(outcome, ALL_JOINTS if outcome is PublishOutcome.ACCEPTED else ())
        joints = (
            ALL_JOINTS
            if outcome is PublishOutcome.ACCEPTED
            else ((1, 2, 3) if outcome is PublishOutcome.PARTIAL else ())
        )
        return PublishReport(outcome, joints, reason="scripted", frames_sent=len(joints))

    @property
    def accepted(self) -> int:
        return sum(o is PublishOutcome.ACCEPTED for o in self.outcomes)


class NullPublisher:
    """Accepts every sample and keeps nothing (for timing the owner alone)."""

    report = PublishReport(PublishOutcome.ACCEPTED, ALL_JOINTS)

    def publish_sample(self, positions_rad: np.ndarray) -> PublishReport:
        return self.report


def _vec(positions) -> np.ndarray:
    arr = np.asarray(positions, float)
    return np.full(7, float(arr)) if arr.ndim == 0 else arr


class Rig:
    """A lockstep right-arm owner with idealized feedback, stamped now.

    Args:
        config: the owner's configuration (``default_config()`` when None).
        hooks: the owner's interleaving hooks.
        p0: initial joint positions, rad (zeros when None).
        feedback: feed back every tick (a case turns it off to starve the owner).
        feedback_from_published: feed back the last published sample (the experiments) rather
            than the owner's commanded state (the tests).
        publisher: the publisher (a detailed ``RecordingPublisher`` when None).
        lease_holder: the name the lease is granted to.
        lease_s: the lease's duration, s.
    """

    def __init__(
        self,
        config: OwnerConfig | None = None,
        hooks: OwnerHooks | None = None,
        p0=None,
        feedback: bool = True,
        *,
        feedback_from_published: bool = False,
        publisher: RecordingPublisher | None = None,
        lease_holder: str = "test",
        lease_s: float = 1e6,
    ):
        self.clock = SimClock()
        self.pub = RecordingPublisher() if publisher is None else publisher
        self.owner = ArmOwner(
            Arm.RIGHT,
            self.pub,
            self.clock,
            np.zeros(7) if p0 is None else p0,
            config or default_config(),
            hooks,
        )
        self.lease = self.owner.grant_lease(lease_holder, lease_s)
        self.seq = 0
        self.feedback = feedback
        self.feedback_from_published = feedback_from_published
        self.fb_offset = np.zeros(7)

    def target(
        self, positions, seq: int | None = None, generation: int | None = None, lease="own", **kw
    ) -> ArmTarget:
        if seq is None:
            self.seq += 1
            seq = self.seq
        return ArmTarget(
            arm=Arm.RIGHT,
            positions_rad=_vec(positions),
            sequence=seq,
            generation=self.owner.generation if generation is None else generation,
            lease=self.lease if lease == "own" else lease,
            **kw,
        )

    def submit(self, positions, **kw):
        return self.owner.submit(self.target(positions, **kw))

    def _feedback_positions(self) -> np.ndarray:
        if self.feedback_from_published and self.pub.samples:
            return self.pub.samples[-1]
        return self.owner.commanded_state()[0]

    def step(self, n: int = 1):
        reps = []
        for _ in range(n):
            if self.feedback:
                self.owner.observe_feedback(
                    self._feedback_positions() + self.fb_offset, self.clock.now()
                )
            reps.append(self.owner.tick())
            self.clock.advance(self.owner.config.period_s)
        return reps


def experiment_rig(
    config: OwnerConfig | None = None, hooks: OwnerHooks | None = None, p0=None
) -> Rig:
    """The rig of the owner experiments: bare reports, feedback = the published sample."""
    return Rig(
        config,
        hooks,
        p0,
        feedback_from_published=True,
        publisher=RecordingPublisher(detailed=False),
        lease_holder="experiment",
        lease_s=1e9,
    )


@dataclass
class StopRaceLog:
    """What happened around a stop() issued while one tick held a computed, unpublished sample.

    events: ("computed" | "published" | "stop_returned", stop had returned at that moment),
    in order.
    stop_returned_while_held: stop() returned before the held sample was released (must be False).
    """

    rig: Rig
    events: list[tuple[str, bool]] = field(default_factory=list)
    stop_returned_while_held: bool = False

    def flags(self, kind: str) -> list[bool]:
        return [done for name, done in self.events if name == kind]


def held_tick_stop_race(
    rig: Rig,
    *,
    first_target: float,
    warmup_ticks: int,
    ticks_after: int,
    probe_s: float = 0.0,
    timeout_s: float = 5.0,
) -> StopRaceLog:
    """Move the rig, hold one tick between compute and publish, call stop() from another thread,
    release, then run ``ticks_after`` more ticks. probe_s > 0: wait that long for stop() while
    the sample is held, to see that it blocks."""
    log = StopRaceLog(rig)
    held, release, stop_done = threading.Event(), threading.Event(), threading.Event()
    hold = {"on": False}

    def after_compute(p):
        log.events.append(("computed", stop_done.is_set()))
        if hold["on"]:
            hold["on"] = False
            held.set()
            release.wait(timeout_s)

    rig.owner.hooks.after_compute = after_compute
    rig.pub.on_publish = lambda p: log.events.append(("published", stop_done.is_set()))
    rig.submit(first_target)
    rig.step(warmup_ticks)
    log.events.clear()
    hold["on"] = True
    ticker = threading.Thread(target=rig.step, args=(1,))
    ticker.start()
    held.wait(timeout_s)

    def stopper():
        rig.owner.stop()
        stop_done.set()
        log.events.append(("stop_returned", True))

    st = threading.Thread(target=stopper)
    st.start()
    if probe_s > 0:
        st.join(probe_s)
        log.stop_returned_while_held = stop_done.is_set()
    release.set()
    ticker.join(timeout_s)
    st.join(timeout_s)
    rig.step(ticks_after)
    return log
