"""The host's end of a simulated CAN bus, with the wire faults of ``rob_twin.twin.sim.faults``.

``FaultInjectingBus`` is a python-can ``BusABC`` wrapping a ``virtual`` bus, so the
project's ``CanTransport`` uses it exactly as it would a SocketCAN bus. Frames are
stamped with simulated time (``preserve_timestamps``), which makes logs and runs
deterministic. Faults apply to what the host *writes*; received frames pass through.

A python-can ``virtual`` channel is process-global: every ``ClosedLoop`` gets its own
channel names (``CAN10@<run>``) so two twins in one process never hear each other.
"""

from __future__ import annotations

import heapq
import itertools
import queue
import time
from collections.abc import Callable

import can
import numpy as np
from can.interfaces.virtual import VirtualBus
from rob_twin.models.errors import RobTwinError
from rob_twin.models.names import COMMAND_IDS, Arm
from rob_twin.twin.sim.faults import FaultKind, FaultSchedule

FIRST_COMMAND_ID = COMMAND_IDS[0]


class DelayedFrameRefused(RobTwinError, RuntimeError):
    """Frames the host had reported sent, held behind an injected delay, were refused by the
    bus when the delay released them (a full transmit queue). Raised into the transport's
    next write: not a ``can.CanError``, so the transport reports UNCERTAIN and the owner
    latches (the drives may hold a mixed sample); never retried."""


class LockstepVirtualBus(VirtualBus):
    """python-can's ``virtual`` bus with a cheaper delivery for the lockstep twin.

    Same channels, queues and semantics as ``VirtualBus`` (every other bus on the
    channel gets its own copy; not our own unless ``receive_own_messages``); only
    the copy is a fresh ``Message`` (cheaper than ``deepcopy``), and a non-blocking
    ``recv(timeout=0)`` skips ``BusABC``'s polling loop. The twin moves about 3,000
    frames per simulated second. ``recv(timeout=0)`` on the
    (unbounded) rx queue pops under the queue's own mutex, skipping ``get_nowait``'s
    condition bookkeeping (there is never a sender waiting for room). Sending to an
    unbounded queue appends under the queue's mutex and wakes a receiver only when one
    is blocked in ``recv(timeout > 0)`` (``Queue.put`` would take the ``not_full``
    condition and notify every time)."""

    def send(self, msg: can.Message, timeout: float | None = None) -> None:
        self._check_if_open()
        stamp = msg.timestamp if self.preserve_timestamps else time.time()
        data = bytes(msg.data)
        for q in self.channel:
            if q is self.queue and not self.receive_own_messages:
                continue
            # positional (python-can 4.6's order; tests/test_lockstep_bus.py checks every
            # field): a third cheaper than keywords, 3,000 frames per simulated second
            copy = can.Message(
                stamp,
                msg.arbitration_id,
                msg.is_extended_id,
                msg.is_remote_frame,
                msg.is_error_frame,
                self.channel_id,
                msg.dlc,
                data,
                msg.is_fd,
                q is not self.queue,
                msg.bitrate_switch,
            )
            if q.maxsize <= 0 and type(q) is queue.Queue:  # unbounded: put() never blocks or raises
                _append(q, copy)
                continue
            try:
                q.put(copy, block=True, timeout=timeout)
            except queue.Full:
                raise can.CanOperationError(
                    "Could not send message to one or more recipients"
                ) from None

    def recv(self, timeout: float | None = None) -> can.Message | None:
        q = self.queue
        if timeout == 0 and not self._filters and q.maxsize <= 0:
            if not q.queue:  # peek at the deque: atomic under the GIL, no lock
                return None
            with q.mutex:  # Queue.get_nowait's lock; unbounded: no sender waits on not_full
                return q.queue.popleft() if q.queue else None
        return super().recv(timeout)


def _append(q: queue.Queue, item: can.Message) -> None:
    """``q.put(item)`` for an unbounded queue: the same state change under the same mutex.

    The ``not_empty`` condition is notified only when a receiver waits on it (its waiter
    list is read under the mutex that ``wait`` registers under, so no wake-up is lost);
    without CPython's ``_waiters`` it is notified every time, as ``put`` does."""
    with q.mutex:
        q.queue.append(item)
        q.unfinished_tasks += 1
        cond = q.not_empty
        if getattr(cond, "_waiters", True):
            cond.notify()


def open_virtual(channel: str) -> can.BusABC:
    """A python-can virtual bus on ``channel`` that keeps the sender's timestamps."""
    return LockstepVirtualBus(channel=channel, receive_own_messages=False, preserve_timestamps=True)


class FaultInjectingBus(can.BusABC):
    """Host-side bus of one arm: sends through ``inner`` unless a wire fault says otherwise.

    clock: simulated time [s]; faults: the run's schedule; rng: seeded, for drops and jitter.
    Delayed frames wait in a queue until ``pump(now)`` releases them (the twin calls it
    every physics step). A released frame the bus refuses (``can.CanError``: with bus
    timing on, a host queue too full for the burst) is counted in ``released_refused``
    and the next ``send`` raises ``DelayedFrameRefused``, so the owner latches it.
    """

    def __init__(
        self,
        inner: can.BusABC,
        arm: Arm,
        clock: Callable[[], float],
        faults: FaultSchedule,
        rng: np.random.Generator,
        first_command_id: int = FIRST_COMMAND_ID,
    ):
        self._inner = inner
        self._first_command_id = first_command_id  # a sample's first frame (batch faults)
        self.arm = arm
        self._clock = clock
        self.faults = faults
        self._rng = rng
        self._held: list[tuple[float, int, can.Message]] = []
        self._order = itertools.count()
        self._last_release = -np.inf
        self._frame_in_sample = 0
        self.dropped = 0
        self.delayed = 0
        self.refused = 0
        self.timed_out = 0
        self.released_refused = 0  # frames refused by the bus when a delay released them
        self._release_error: str | None = None  # raised into the next send, then cleared
        # the bus timing layer, when on: told of frames destroyed on the wire and of bus-off
        self.on_wire_fault: Callable[[str, can.Message], None] | None = None
        super().__init__(channel=inner.channel_info)
        self.channel_info = f"fault-injecting {inner.channel_info}"

    # python-can calls this from BusABC.recv
    def _recv_internal(self, timeout: float | None):
        return self._inner.recv(timeout=timeout), False

    def recv(self, timeout: float | None = None) -> can.Message | None:
        if timeout == 0 and not self._filters:  # the transport's non-blocking poll
            return self._inner.recv(timeout=0)
        return super().recv(timeout)

    def send(self, msg: can.Message, timeout: float | None = None) -> None:
        now = self._clock()
        msg.timestamp = now
        if self._release_error is not None:
            reason, self._release_error = self._release_error, None
            raise DelayedFrameRefused(reason)
        if msg.arbitration_id == self._first_command_id:
            self._frame_in_sample = 0
        k = self._frame_in_sample
        self._frame_in_sample += 1
        f, arm = self.faults, self.arm
        if f:
            if f.first(FaultKind.BUS_OFF, arm, now):
                self.refused += 1
                if self.on_wire_fault is not None:
                    self.on_wire_fault("bus_off", msg)
                raise can.CanOperationError("bus-off (injected): the controller refuses to send")
            spec = f.first(FaultKind.PARTIAL_BATCH, arm, now)
            if spec and k >= spec.params["accept_frames"]:
                self.refused += 1
                raise can.CanOperationError(
                    f"transmit queue full (injected partial batch after "
                    f"{int(spec.params['accept_frames'])} frames)"
                )
            spec = f.first(FaultKind.UNCERTAIN_WRITE, arm, now)
            if spec and k == int(spec.params["at_frame"]):
                self.timed_out += 1
                raise can.CanTimeoutError("write timed out (injected): the frame may be on the bus")
            spec = f.first(FaultKind.DROP, arm, now)
            if spec and self._rng.random() < spec.params["probability"]:
                self.dropped += 1
                if self.on_wire_fault is not None:
                    self.on_wire_fault("drop", msg)
                return  # the controller accepted it; the wire lost it
            spec = f.first(FaultKind.DELAY, arm, now)
            if spec:
                jitter = (
                    spec.params["jitter_s"] * self._rng.random() if spec.params["jitter_s"] else 0.0
                )
                due = max(now + spec.params["delay_s"] + jitter, self._last_release)
                self._last_release = due  # CAN keeps order: jitter never reorders frames
                heapq.heappush(self._held, (due, next(self._order), msg))
                self.delayed += 1
                return
        if self._held:  # frames behind a delay keep their order
            heapq.heappush(self._held, (max(now, self._last_release), next(self._order), msg))
            return
        self._inner.send(msg, timeout=timeout)

    def pump(self, now: float) -> int:
        """Release held frames due at or before ``now`` [s]; return how many went out."""
        n = 0
        while self._held and self._held[0][0] <= now:
            due, _, msg = heapq.heappop(self._held)
            msg.timestamp = due
            try:
                self._inner.send(msg)
            except can.CanError as err:  # counted (bus report too), latched via the next send
                self.released_refused += 1
                self._release_error = self._release_error or (
                    f"frame 0x{msg.arbitration_id:03X} (released at "
                    f"{msg.timestamp:.4f} s) was refused after an injected delay: {err}"
                )
                continue
            n += 1
        return n

    @property
    def held(self) -> int:
        return len(self._held)

    def shutdown(self) -> None:
        self._inner.shutdown()
        super().shutdown()
