"""A simulated clock and a scheduler that runs periodic tasks at their own rates.

Time is kept as an integer count of physics steps, so task phases never drift through
floating-point accumulation and a run is deterministic for a given seed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rob_twin.models.errors import RobTwinError


class SchedulerError(RobTwinError, ValueError):
    """A task period that is not a positive whole number of physics steps."""


@dataclass
class PeriodicTask:
    name: str
    every_steps: int  # run once every this many physics steps
    fn: Callable[[float], None]  # called with the simulated time [s]
    calls: int = 0


class Scheduler:
    """Runs tasks at rates that are whole multiples of the physics timestep ``dt`` [s]."""

    def __init__(self, dt: float):
        if not dt > 0:
            raise SchedulerError(f"physics timestep must be > 0 s, got {dt!r}")
        self.dt = dt
        self.step_count = 0
        self.tasks: list[PeriodicTask] = []

    @property
    def time(self) -> float:
        """Simulated time [s]."""
        return self.step_count * self.dt

    def add(self, name: str, rate_hz: float, fn: Callable[[float], None]) -> PeriodicTask:
        """Register ``fn`` to run at ``rate_hz``; the rate must divide the physics rate."""
        if any(t.name == name for t in self.tasks):
            raise SchedulerError(f"task {name!r} already registered")
        steps = 1.0 / (rate_hz * self.dt) if rate_hz > 0 else 0.0
        every = round(steps)
        if every < 1 or abs(steps - every) > 1e-9:
            raise SchedulerError(
                f"task {name!r}: rate {rate_hz!r} Hz must divide the physics rate "
                f"{1.0 / self.dt:g} Hz (valid: {1.0 / self.dt:g}/k for whole k >= 1)"
            )
        task = PeriodicTask(name, every, fn)
        self.tasks.append(task)
        return task

    def remove(self, name: str) -> None:
        """Unregister task ``name``; SchedulerError listing the registered names otherwise."""
        for i, t in enumerate(self.tasks):
            if t.name == name:
                del self.tasks[i]
                return
        raise SchedulerError(
            f"no task {name!r}; registered: {', '.join(t.name for t in self.tasks)}"
        )

    def due(self) -> list[PeriodicTask]:
        return [t for t in self.tasks if self.step_count % t.every_steps == 0]

    def run_due(self) -> None:
        k = self.step_count
        now = k * self.dt  # self.time, without the property call (every physics step)
        for task in self.tasks:
            if k % task.every_steps == 0:
                task.fn(now)
                task.calls += 1
