"""A calibration's transport delays where they act: between the host and its bus.

A calibration (``rob_twin.twin.calibration.parameters``) carries per arm a command delay
(``{arm}/command_delay_s``: the host's frame reaches the drives that much after the host
sent it) and a feedback delay (``{arm}/feedback_delay_s``: a drive's reply reaches the host
that much after the drive sent it). ``TransportDelayBus`` wraps the host's side of one arm's
bus in the lockstep closed loop (``rob_twin.twin.sim.closed_loop.ClosedLoop``) and plays
both:

- ``send``: the host's frame is held, stamped with its send time; ``pump(now)`` (the loop
  calls it every physics step, after the drives read their buses) releases each frame whose
  send time plus the command delay has come. A released frame is read by the drives at the
  next step, as every host frame is, so it acts exactly ``command_delay_s`` later than it
  would without the delay (whole physics steps: 11 ms is 11 steps at 1 kHz). Order is kept.
- ``recv``: a drive's reply is handed to the host only once its send time (the frame's
  stamp: the drives' physics step, or the end of the frame with bus timing on) plus the
  feedback delay has come; it then carries that arrival time as its stamp.

Zero delays are not wrapped at all (the loop stays byte-identical to one without a
calibration). Simulated time only; nothing here reads a wall clock.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable

import can
from rob_twin.models.errors import InvalidValueError

MAX_DELAY_S = 0.5  # a transport delay beyond this is not a transport delay [s]
_EPS_S = 1e-9  # physics-step times are k * dt: a due time equal to ``now`` is due


class TransportDelayError(InvalidValueError):
    """A transport delay out of range (names the value and the range)."""

    subject = "transport delay"


def check_delay(name: str, value: float) -> float:
    """``value`` [s] as a float in [0, MAX_DELAY_S]; TransportDelayError otherwise."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or not 0.0 <= value <= MAX_DELAY_S:
        raise TransportDelayError(name, value, f"0 to {MAX_DELAY_S:g} s")
    return float(value)


class TransportDelayBus(can.BusABC):
    """The host's side of one arm's bus with a command and a feedback delay (module doc).

    inner: the bus the host would use (a virtual bus, or the bus timing layer's host bus);
    command_delay_s, feedback_delay_s [s]; clock: simulated time [s]."""

    def __init__(
        self,
        inner: can.BusABC,
        command_delay_s: float,
        feedback_delay_s: float,
        clock: Callable[[], float],
    ):
        self._inner = inner
        self.command_delay_s = check_delay("command_delay_s", command_delay_s)
        self.feedback_delay_s = check_delay("feedback_delay_s", feedback_delay_s)
        self._clock = clock
        self._outgoing: deque[tuple[float, can.Message]] = deque()  # (due, frame), in order
        self._incoming: deque[tuple[float, can.Message]] = deque()
        self.commands_delayed = 0
        self.replies_delayed = 0
        super().__init__(channel=inner.channel_info)
        self.channel_info = f"transport-delayed {inner.channel_info}"

    # ------------------------------------------------------------------ host -> drives
    def send(self, msg: can.Message, timeout: float | None = None) -> None:
        now = self._clock()
        if not self.command_delay_s:
            self._inner.send(msg, timeout=timeout)
            return
        msg.timestamp = now
        self._outgoing.append((now + self.command_delay_s, msg))
        self.commands_delayed += 1

    def pump(self, now: float) -> int:
        """Release the held host frames due at or before ``now`` [s]; how many went out."""
        n = 0
        out = self._outgoing
        while out and out[0][0] <= now + _EPS_S:
            _, msg = out.popleft()
            msg.timestamp = now
            self._inner.send(msg)
            n += 1
        return n

    @property
    def held(self) -> int:
        """Host frames still on their way to the drives."""
        return len(self._outgoing)

    # ------------------------------------------------------------------ drives -> host
    def _recv_internal(self, timeout: float | None):
        return self.recv(timeout), False

    def recv(self, timeout: float | None = None) -> can.Message | None:
        """The next reply that has reached the host by now (never blocks: simulated time
        does not pass while the host waits)."""
        if not self.feedback_delay_s:
            return self._inner.recv(timeout=0)
        while (msg := self._inner.recv(timeout=0)) is not None:
            self._incoming.append((float(msg.timestamp) + self.feedback_delay_s, msg))
            self.replies_delayed += 1
        if self._incoming and self._incoming[0][0] <= self._clock() + _EPS_S:
            due, msg = self._incoming.popleft()
            msg.timestamp = due
            return msg
        return None

    def shutdown(self) -> None:
        self._inner.shutdown()
        super().shutdown()
