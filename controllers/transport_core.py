"""What every arm transport shares, whatever its drives: the bus, the sending rules, polling.

``TransportCore`` is the base of ``CanTransport`` (Amber position drives) and
``DamiaoTransport`` (Damiao MIT drives). A drive family encodes its own frames and
decodes its own replies; the core does the rest, the same way for both:

* The bus: opened from the configuration's interface and channel with
  ``receive_own_messages=False`` (our own frames never come back), or injected; an
  injected bus is not shut down by ``close``.
* ``_send_batch`` sends one sample's frames in joint order, once. It never retries.
  Outcome of a batch whose frame ``k`` (0-based) raised during ``bus.send``:

  - ``can.CanTimeoutError`` / ``TimeoutError``: UNCERTAIN. The frame may sit in an
    adapter queue; frames ``< k`` are reported accepted.
  - any other ``can.CanError`` (``CanOperationError`` ...): python-can raises these
    when the write itself failed, so frame ``k`` is taken as *not* sent (a clean
    refusal): REFUSED if ``k == 0``, else PARTIAL with the joints before it.
  - any other exception (a wrapper's bug, OSError): UNCERTAIN, even at ``k == 0``.

  The batch is always sent whole (stopping midway would leave a mixed sample on the
  drives). One that took longer than ``publish_deadline_s`` on the injected clock (or
  whose duration is not a number) is reported UNCERTAIN when ``late_is_uncertain``,
  else ACCEPTED, with ``extra["deadline_missed"] = True`` either way.
* ``_finish`` counts every report by outcome and keeps the last one.
* ``poll_feedback`` reads every frame already waiting (``recv(timeout=0)``,
  non-blocking) and hands each to ``handle_message``: frames that are extended,
  remote or error frames count as ``other_frames``; a frame on one of our command ids
  was written by someone else (a second writer): it is counted and the last one kept
  in ``last_foreign_frame``; anything else goes to the family's ``_handle_reply``.
  An injected bus must not echo our own frames, or they will be counted as foreign.

Not thread-safe: one owner thread calls a transport. No mujoco here; stdlib, numpy,
python-can and other ``controllers`` modules only.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, Self

import can
import numpy as np
from rob_twin.controllers.errors import TransportClosedError, TransportConfigError
from rob_twin.controllers.publish import PublishOutcome, PublishReport
from rob_twin.models.names import JOINTS_PER_ARM

Clock = Callable[[], float]


class LinkConfig(Protocol):
    """The part of a transport configuration the core reads. Times in seconds."""

    @property
    def interface(self) -> str: ...

    @property
    def resolved_channel(self) -> str: ...

    @property
    def publish_deadline_s(self) -> float: ...

    @property
    def send_timeout_s(self) -> float | None: ...

    @property
    def late_is_uncertain(self) -> bool: ...


class JointFrame(Protocol):
    """One encoded frame of one joint (1..joints) of a sample."""

    @property
    def joint(self) -> int: ...

    @property
    def arbitration_id(self) -> int: ...

    @property
    def data(self) -> bytes: ...


@dataclass
class TransportCounters:
    samples: int = 0  # publish calls
    accepted: int = 0
    partial: int = 0
    uncertain: int = 0
    refused: int = 0
    encode_errors: int = 0
    frames_sent: int = 0
    deadline_misses: int = 0
    frames_received: int = 0
    feedback_frames: int = 0
    feedback_errors: int = 0  # feedback ids with a malformed frame
    foreign_command_frames: int = 0  # our command ids written by someone else
    other_frames: int = 0  # ids that are neither ours nor our feedback

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class ForeignFrame:
    """A command-id frame we did not send (a second writer on the bus)."""

    arbitration_id: int
    data: bytes
    received_at: float  # injected clock [s]
    decoded: Any = None  # the family's decoded command, None when it does not decode


_OUTCOME_COUNTER = {
    PublishOutcome.ACCEPTED: "accepted",
    PublishOutcome.PARTIAL: "partial",
    PublishOutcome.UNCERTAIN: "uncertain",
    PublishOutcome.REFUSED: "refused",
}


class TransportCore:
    """One arm's CAN boundary without its drive family (module doc).

    config: where and how to talk; bus: an open bus to use instead of opening one;
    clock: the time base of deadlines and receive stamps [s]; counters: the family's
    counters (a ``TransportCounters``, perhaps extended); command_ids: our command ids
    (a frame on one of them that reaches us is foreign); joints: the arm's joint count, one
    frame per joint in a sample (the Amber codec: seven; Damiao: one per motor)."""

    def __init__(
        self,
        config: LinkConfig,
        *,
        bus: can.BusABC | None,
        clock: Clock,
        counters: TransportCounters,
        command_ids: Collection[int],
        joints: int = JOINTS_PER_ARM,
    ):
        if isinstance(joints, bool) or not isinstance(joints, int) or joints < 1:
            raise TransportConfigError("joints", joints, "an arm's joint count: an integer >= 1")
        self.joints = joints
        self.clock = clock
        self._own_bus = bus is None
        self.bus = (
            bus
            if bus is not None
            else can.Bus(
                interface=config.interface,
                channel=config.resolved_channel,
                receive_own_messages=False,
            )
        )
        self._link = config
        self._command_ids = command_ids
        self.counters = counters
        self.feedback_received_at: dict[int, float] = {}
        self.last_foreign_frame: ForeignFrame | None = None
        self.last_feedback_error: str = ""
        self.last_report: PublishReport | None = None
        self._closed = False

    # ------------------------------------------------------------------ output

    def _send_batch(self, frames: Sequence[JointFrame], start: float) -> PublishReport:
        """Send ``frames`` in order, once; ``start``: the clock when the sample arrived [s]."""
        bus, timeout = self.bus, self._link.send_timeout_s
        sent: list[int] = []
        for k, frame in enumerate(frames):
            msg = can.Message(
                arbitration_id=frame.arbitration_id,
                data=frame.data,
                is_extended_id=False,
                is_rx=False,
            )
            where = f"joint {frame.joint} (0x{frame.arbitration_id:02X})"
            try:
                bus.send(msg, timeout=timeout)
            except (can.CanTimeoutError, TimeoutError) as err:
                reason = f"timeout sending {where}: {err}"
                return self._failed(PublishOutcome.UNCERTAIN, sent, start, reason, err)
            except can.CanError as err:
                outcome = PublishOutcome.REFUSED if k == 0 else PublishOutcome.PARTIAL
                return self._failed(outcome, sent, start, f"bus refused {where}: {err}", err)
            except Exception as err:  # unknown state of frame k: never guess "not sent"
                reason = f"unexpected {type(err).__name__} sending joint {frame.joint}: {err}"
                return self._failed(PublishOutcome.UNCERTAIN, sent, start, reason, err)
            sent.append(frame.joint)
            self.counters.frames_sent += 1
            self._log(msg, rx=False)
        duration = self.clock() - start
        deadline = self._link.publish_deadline_s
        if not duration <= deadline:  # NaN-safe: an unreadable clock is late
            self.counters.deadline_misses += 1
            late_is = (
                PublishOutcome.UNCERTAIN
                if self._link.late_is_uncertain
                else PublishOutcome.ACCEPTED
            )
            return PublishReport(
                late_is,
                tuple(sent),
                reason=f"deadline missed: batch took {duration:.6f} s > {deadline:.6f} s",
                frames_sent=len(sent),
                duration_s=duration,
                extra={"deadline_missed": True},
            )
        return PublishReport(
            PublishOutcome.ACCEPTED,
            tuple(sent),
            frames_sent=len(sent),
            duration_s=duration,
            extra={"deadline_missed": False},
        )

    def _failed(
        self,
        outcome: PublishOutcome,
        sent: list[int],
        start: float,
        reason: str,
        err: BaseException,
    ) -> PublishReport:
        return PublishReport(
            outcome,
            tuple(sent),
            reason=reason,
            frames_sent=len(sent),
            duration_s=self.clock() - start,
            extra={"error": type(err).__name__},
        )

    def _refused(self, reason: str, err: BaseException) -> PublishReport:
        """A sample refused before any frame went out (it did not encode)."""
        self.counters.encode_errors += 1
        return self._finish(
            PublishReport(
                PublishOutcome.REFUSED, reason=reason, extra={"error": type(err).__name__}
            )
        )

    def _finish(self, report: PublishReport) -> PublishReport:
        name = _OUTCOME_COUNTER[report.outcome]
        setattr(self.counters, name, getattr(self.counters, name) + 1)
        self.last_report = report
        return report

    # ------------------------------------------------------------------- input

    def poll_feedback(self, max_frames: int | None = None) -> int:
        """Handle every frame already waiting (non-blocking); return how many were read.

        max_frames: None (all waiting) or an int >= 0; TransportConfigError otherwise."""
        if max_frames is not None and (
            isinstance(max_frames, bool) or not isinstance(max_frames, int) or max_frames < 0
        ):
            raise TransportConfigError("max_frames", max_frames, "None or an int >= 0")
        self._check_open()
        n = 0
        while max_frames is None or n < max_frames:
            msg = self.bus.recv(timeout=0)
            if msg is None:
                break
            self.handle_message(msg)
            n += 1
        return n

    def handle_message(self, msg: can.Message) -> Any:
        """Account for one received frame; return its feedback if it is valid feedback."""
        now = self.clock()
        self.counters.frames_received += 1
        self._log(msg, rx=True)
        if msg.is_extended_id or msg.is_remote_frame or msg.is_error_frame:
            self.counters.other_frames += 1
            return None
        if msg.arbitration_id in self._command_ids:
            self.counters.foreign_command_frames += 1
            self.last_foreign_frame = ForeignFrame(
                msg.arbitration_id, bytes(msg.data), now, self._decode_foreign(msg)
            )
            return None
        return self._handle_reply(msg, now)

    def _handle_reply(self, msg: can.Message, now: float) -> Any:
        """A standard data frame on an id other than our command ids, received at ``now``
        [s]: the family's feedback (returned), another reply, or ``other_frames``."""
        raise NotImplementedError(f"{type(self).__name__} does not decode replies")

    def _decode_foreign(self, msg: can.Message) -> Any:
        """The family's reading of a foreign command frame, or None."""
        return None

    def feedback_age(self, joint: int, now: float | None = None) -> float:
        """Seconds since joint ``joint`` (1..joints) last gave valid feedback; inf if never."""
        t = self.feedback_received_at.get(joint)
        if t is None:
            return float("inf")
        return (self.clock() if now is None else now) - t

    def feedback_ages(self, now: float | None = None) -> np.ndarray:
        """Ages [s] of joints 1..joints (inf for a joint never heard from)."""
        now = self.clock() if now is None else now
        return np.array([self.feedback_age(j, now) for j in range(1, self.joints + 1)])

    # -------------------------------------------------------------- lifecycle

    def _log(self, msg: can.Message, rx: bool) -> None:
        """A family with a traffic log writes ``msg`` there (``rx``: received)."""

    def _check_open(self) -> None:
        if self._closed:
            raise TransportClosedError()

    def close(self) -> None:
        """Shut the bus down if this transport opened it; later use raises."""
        if self._closed:
            return
        self._closed = True
        if self._own_bus:
            self.bus.shutdown()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
