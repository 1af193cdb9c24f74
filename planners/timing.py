"""Wall-time bookkeeping of a planner's stages (seconds, ``time.perf_counter``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


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
