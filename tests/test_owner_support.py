"""Shared fakes for the owner tests (no tests here): a recording publisher, a rig."""

from __future__ import annotations

import threading
from collections import deque

import numpy as np

from controllers.clock import SimClock
from controllers.names import Arm
from controllers.owner import ArmOwner, OwnerConfig, OwnerHooks, default_config
from controllers.publish import PublishOutcome, PublishReport
from controllers.target import ArmTarget


class RecordingPublisher:
    """Records every sample it is handed; outcomes come from an injectable script."""

    def __init__(self):
        self.samples: list[np.ndarray] = []
        self.outcomes: list[PublishOutcome] = []
        self.script: deque[PublishOutcome] = deque()
        self.default = PublishOutcome.ACCEPTED
        self.on_publish = None  # optional callback(sample)
        self.lock = threading.Lock()

    def publish_sample(self, positions_rad: np.ndarray) -> PublishReport:
        with self.lock:
            outcome = self.script.popleft() if self.script else self.default
            self.samples.append(np.array(positions_rad, float))
            self.outcomes.append(outcome)
        if self.on_publish:
            self.on_publish(positions_rad)
        joints = tuple(range(1, 8)) if outcome is PublishOutcome.ACCEPTED else (
            (1, 2, 3) if outcome is PublishOutcome.PARTIAL else ())
        return PublishReport(outcome, joints, reason="scripted", frames_sent=len(joints))

    @property
    def accepted(self) -> int:
        return sum(o is PublishOutcome.ACCEPTED for o in self.outcomes)


def _vec(positions):
    arr = np.asarray(positions, float)
    return np.full(7, float(arr)) if arr.ndim == 0 else arr


class Rig:
    """A lockstep owner with idealized feedback (the previous output, stamped now)."""

    def __init__(self, config: OwnerConfig | None = None, hooks: OwnerHooks | None = None,
                 p0=None, feedback: bool = True):
        self.clock = SimClock()
        self.pub = RecordingPublisher()
        self.owner = ArmOwner(Arm.RIGHT, self.pub, self.clock,
                              np.zeros(7) if p0 is None else p0, config or default_config(), hooks)
        self.lease = self.owner.grant_lease("test", 1e6)
        self.seq = 0
        self.feedback = feedback
        self.fb_offset = np.zeros(7)

    def target(self, positions, seq: int | None = None, generation: int | None = None, lease="own", **kw):
        if seq is None:
            self.seq += 1
            seq = self.seq
        return ArmTarget(Arm.RIGHT, _vec(positions), seq,
                         self.owner.generation if generation is None else generation,
                         self.lease if lease == "own" else lease, **kw)

    def submit(self, positions, **kw):
        return self.owner.submit(self.target(positions, **kw))

    def step(self, n: int = 1):
        reps = []
        for _ in range(n):
            if self.feedback:
                self.owner.observe_feedback(self.owner.commanded_state()[0] + self.fb_offset, self.clock.now())
            reps.append(self.owner.tick())
            self.clock.advance(self.owner.config.period_s)
        return reps
