"""LEGACY MODEL, FOR STUDY ONLY. Never use this to drive anything.

A Python model of the installed Amber host's position-task path as seed 000 describes
it (section 1): every position task starts a *detached* trajectory worker; the worker
replans from the shared commanded position with velocity and acceleration
finite-differenced separately from the shared output history; its cancellation check
and its shared-array write + publish are two separate steps, not one ownership
transaction. ``LegacyHooks.between_check_and_write`` lets a test hold a worker inside
that window and show an old worker publishing after a replacement was accepted.

It exists so the owner's tests and the ``legacy-race`` experiment can reproduce the
hazard side by side with the replacement (``rob_twin.controllers.owner.ArmOwner``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from rob_twin.controllers.publish import SamplePublisher
from ruckig import InputParameter, OutputParameter, Result, Ruckig


@dataclass
class LegacyHooks:
    between_check_and_write: Callable[[int, int], None] | None = None  # (task_id, step)
    after_write: Callable[[int, int], None] | None = None


@dataclass
class LegacyHost:
    """Shared state of the legacy host: one commanded array that every worker writes."""

    publisher: SamplePublisher
    n: int = 7
    dt: float = 0.005
    max_velocity: float = 0.3
    max_acceleration: float = 0.6
    max_jerk: float = 2.0
    hooks: LegacyHooks = field(default_factory=LegacyHooks)
    paced: Callable[[int, int], None] | None = None  # per-step pacing (tests: an Event wait)

    def __post_init__(self) -> None:
        self.commanded = np.zeros(self.n)  # the shared array
        self.history: list[np.ndarray] = [self.commanded.copy()] * 3
        self.active_task = 0
        self.accepted_at: dict[int, int] = {}  # task id -> publish count when accepted
        self.publish_log: list[tuple[int, np.ndarray]] = []  # (task id, sample)
        self._ids = 0
        self._lock = threading.Lock()  # protects the log only, as in the original

    def position_task(self, target, max_steps: int = 10_000) -> tuple[int, threading.Thread]:
        """Command 4 analogue: acknowledge at once, start a detached worker, return (id, thread)."""
        self._ids += 1
        tid = self._ids
        self.active_task = tid  # "cancels" older workers by changing the flag only
        self.accepted_at[tid] = len(self.publish_log)
        th = threading.Thread(
            target=self._worker, args=(tid, np.asarray(target, float), max_steps), daemon=True
        )
        th.start()
        return tid, th

    def stop(self) -> None:
        self.active_task = -1

    def _seed(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Position from the shared array; v and a finite-differenced separately from history."""
        p = self.commanded.copy()
        h = self.history
        v = (h[-1] - h[-2]) / self.dt
        a = ((h[-1] - h[-2]) - (h[-2] - h[-3])) / self.dt**2
        return p, v, a

    def _worker(self, tid: int, target: np.ndarray, max_steps: int) -> None:
        otg, inp, out = Ruckig(self.n, self.dt), InputParameter(self.n), OutputParameter(self.n)
        p, v, a = self._seed()
        inp.current_position, inp.current_velocity, inp.current_acceleration = (
            p.tolist(),
            v.tolist(),
            a.tolist(),
        )
        inp.target_position = target.tolist()
        inp.max_velocity = [self.max_velocity] * self.n
        inp.max_acceleration = [self.max_acceleration] * self.n
        inp.max_jerk = [self.max_jerk] * self.n
        for step in range(max_steps):
            if self.paced:
                self.paced(tid, step)
            res = otg.update(inp, out)
            if res not in (Result.Working, Result.Finished):
                return
            if self.active_task != tid:  # cancellation check ...
                return
            if self.hooks.between_check_and_write:
                self.hooks.between_check_and_write(tid, step)
            sample = np.array(out.new_position)  # ... then the write: not one atomic step
            self.commanded[:] = sample
            self.history = [*self.history[-2:], sample.copy()]
            self.publisher.publish_sample(sample)
            with self._lock:
                self.publish_log.append((tid, sample))
            if self.hooks.after_write:
                self.hooks.after_write(tid, step)
            out.pass_to_input(inp)
            if res is Result.Finished:
                return

    def stale_publishes(self) -> list[tuple[int, int]]:
        """(log index, task id) of samples from a task published after a newer task was accepted."""
        stale = []
        for idx, (tid, _) in enumerate(self.publish_log):
            newer = [t for t, at in self.accepted_at.items() if t > tid and at <= idx]
            if newer:
                stale.append((idx, tid))
        return stale
