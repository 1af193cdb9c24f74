"""Wall-time bookkeeping of a planner's stages and its budget (seconds, ``time.perf_counter``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from rob_twin.planners.plan import PlanResult, PlanStatus


class StageTimer:
    """Adds the wall time of each ``with timer.stage(name):`` block to ``stages[name]`` [s].

    A stage entered again accumulates; ``total()`` writes ``stages["total"]``, the seconds
    since the timer was made (``start_s``, a ``time.perf_counter()`` reading).
    """

    def __init__(self, stages: dict[str, float] | None = None) -> None:
        self.stages: dict[str, float] = {} if stages is None else stages
        self.start_s = time.perf_counter()

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.stages[name] = self.stages.get(name, 0.0) + time.perf_counter() - t0

    def elapsed_s(self) -> float:
        return time.perf_counter() - self.start_s

    def total(self) -> float:
        """Record and return the seconds since the timer started as ``stages["total"]``."""
        self.stages["total"] = spent = self.elapsed_s()
        return spent


class PlanClock:
    """A ``plan`` call's timer and wall-time budget [s] (None: no limit, and nothing looks
    at the clock). ``late()`` says whether the deadline passed; ``timeout(stage)`` is the
    TIMEOUT result naming the stage it passed in."""

    def __init__(self, budget_s: float | None) -> None:
        self.timer = StageTimer()
        self.stages = self.timer.stages
        self.budget_s = budget_s
        self.deadline = None if budget_s is None else self.timer.start_s + budget_s

    def late(self) -> bool:
        return self.deadline is not None and time.perf_counter() > self.deadline

    def timeout(self, stage: str) -> PlanResult:
        spent = self.timer.total()
        return PlanResult(
            PlanStatus.TIMEOUT,
            reason=(
                f"wall-time budget {self.budget_s} s exhausted during {stage} after {spent:.4f} s"
            ),
            stage_times_s=self.stages,
        )
