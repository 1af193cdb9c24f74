"""Injected clocks for the arm owner: lockstep simulated time or the real monotonic clock.

Every owner decision that depends on time (lease expiry, feedback age, late ticks)
reads ``clock.now()`` [s]; nothing in the owner calls ``time.time`` directly, so a
lockstep twin run is deterministic.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol

from rob_twin.controllers.checks import finite_real
from rob_twin.controllers.errors import OwnerConfigError


class Clock(Protocol):
    def now(self) -> float:
        """Current time [s] on this clock's time base (monotonic, arbitrary origin)."""
        ...


class SimClock:
    """Lockstep clock advanced explicitly by the twin's scheduler (thread-safe)."""

    def __init__(self, start_s: float = 0.0):
        self._t = _seconds("start_s", start_s)
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._t

    def advance(self, dt_s: float) -> float:
        """Move time forward by a finite ``dt_s`` >= 0 [s]; return the new time [s]."""
        dt = _seconds("dt_s", dt_s)
        if not dt >= 0.0:
            raise OwnerConfigError("dt_s", dt_s, ">= 0 s (simulated time never runs backwards)")
        with self._lock:
            self._t += dt
            return self._t

    def set(self, t_s: float) -> None:
        """Jump to a finite ``t_s`` [s], which must not be earlier than now."""
        t = finite_real(t_s, "t_s", _SECONDS, OwnerConfigError)
        with self._lock:
            if not t >= self._t:
                raise OwnerConfigError("t_s", t_s, f">= current time {self._t!r} s")
            self._t = t


class MonotonicClock:
    """Real time: ``time.monotonic()`` [s]."""

    def now(self) -> float:
        return time.monotonic()


_SECONDS = "a finite number of seconds"


def _seconds(field: str, value: object) -> float:
    return finite_real(value, field, _SECONDS, OwnerConfigError)
