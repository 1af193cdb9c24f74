"""The CAN transport boundary of one arm: samples out, feedback in, nothing clever.

``CanTransport`` is a thin layer over a python-can ``Bus`` (``virtual`` by default;
interface and channel are configuration, the channel defaulting to the arm's
``BUS_MAPPING`` entry). It implements ``SamplePublisher``:

* ``publish_sample`` encodes the seven joints with ``controllers.codec`` all or
  nothing, then sends the seven frames in joint order, once. It never retries.
* Outcome of a batch whose frame ``k`` (0-based) raised during ``bus.send``:

  - ``can.CanTimeoutError`` / ``TimeoutError``: UNCERTAIN. The frame may sit in
    an adapter queue; frames ``< k`` are reported accepted.
  - any other ``can.CanError`` (``CanOperationError`` ...): python-can raises
    these when the write itself failed, so frame ``k`` is taken as *not* sent
    (a clean refusal): REFUSED if ``k == 0``, else PARTIAL with joints ``1..k``.
  - any other exception (a wrapper's bug, OSError): UNCERTAIN, even at ``k == 0``.

* Publication deadline (``publish_deadline_s``, measured on the injected clock):
  the batch is always sent whole (stopping midway would leave a mixed sample on
  the drives); a batch that finished late is reported UNCERTAIN (all seven joints
  listed as accepted, ``extra["deadline_missed"] = True``) when
  ``late_is_uncertain``, else ACCEPTED with the same flag. Either way it counts.
* ``poll_feedback`` reads every frame already waiting (``recv(timeout=0)``,
  non-blocking) and hands each to ``handle_message``, which records per joint the
  latest decoded ``JointFeedback`` and its receive time on the injected clock
  (``clock``, default ``time.monotonic``; the twin passes simulated time).
* Second writer: a frame on one of *our* command ids received from the bus was
  written by someone else (we open buses with ``receive_own_messages=False``, so
  our own frames never come back). It is counted and the last one kept.
  An injected bus must not echo our own frames, or they will be counted too.
* Traffic logging: ``log_path`` attaches python-can's standard writer chosen by
  suffix (``.log`` -> ``CanutilsLogWriter``, ``.asc`` -> ``ASCWriter``, ...), fed
  with every frame sent (``is_rx=False``) and received (``is_rx=True``). Log
  timestamps are wall-clock seconds (python-can's own convention for received
  frames), not the injected clock.

No mujoco here; stdlib, numpy, python-can and other ``controllers`` modules only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import can
import numpy as np

from controllers.checks import finite_real
from controllers.codec import (
    CodecConfig,
    DecodedCommand,
    JointFeedback,
    decode_command,
    decode_feedback,
    encode_sample,
)
from controllers.codec import (
    default_config as default_codec_config,
)
from controllers.errors import CodecError, TransportClosedError, TransportConfigError
from controllers.names import BUS_MAPPING, COMMAND_IDS, FEEDBACK_IDS, JOINTS_PER_ARM, Arm
from controllers.publish import PublishOutcome, PublishReport

Clock = Callable[[], float]


@dataclass(frozen=True)
class TransportConfig:
    """Where and how one arm's transport talks. Times in seconds."""

    arm: Arm = Arm.RIGHT
    interface: str = "virtual"
    channel: str | None = None  # None: BUS_MAPPING[arm].channel (CAN10 / CAN11)
    publish_deadline_s: float = 0.005  # one sample's seven frames must be out within this
    send_timeout_s: float | None = 0.001  # passed to bus.send; None blocks
    late_is_uncertain: bool = True
    log_path: str | Path | None = None  # .log (canutils), .asc, ... any can.Logger suffix
    codec: CodecConfig = field(default_factory=default_codec_config)

    def __post_init__(self) -> None:
        object.__setattr__(self, "arm", Arm.parse(self.arm))
        # finite: an infinite publication deadline would switch the late-publish check off
        d = finite_real(
            self.publish_deadline_s,
            "publish_deadline_s",
            "a finite number > 0 s",
            TransportConfigError,
        )
        if not d > 0:
            raise TransportConfigError("publish_deadline_s", self.publish_deadline_s, "> 0 s")
        if self.send_timeout_s is not None:
            t = finite_real(
                self.send_timeout_s,
                "send_timeout_s",
                "a finite number >= 0 s or None",
                TransportConfigError,
            )
            if not t >= 0:
                raise TransportConfigError("send_timeout_s", self.send_timeout_s, ">= 0 s or None")
        if not isinstance(self.late_is_uncertain, bool):
            raise TransportConfigError("late_is_uncertain", self.late_is_uncertain, "True or False")
        if not isinstance(self.interface, str) or not self.interface:
            raise TransportConfigError(
                "interface", self.interface, "a python-can interface name (str)"
            )
        if self.channel is not None and not isinstance(self.channel, str):
            raise TransportConfigError("channel", self.channel, "a channel name (str) or None")
        if not isinstance(self.codec, CodecConfig):
            raise TransportConfigError("codec", self.codec, "a CodecConfig")

    @property
    def resolved_channel(self) -> str:
        return self.channel if self.channel is not None else BUS_MAPPING[self.arm].channel


def default_config(arm: Arm | str = Arm.RIGHT) -> TransportConfig:
    """Virtual bus on the arm's mapped channel, 5 ms publication deadline, no log."""
    return TransportConfig(arm=Arm.parse(arm))


@dataclass
class TransportCounters:
    samples: int = 0  # publish_sample calls
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
    decoded: DecodedCommand | None  # None when it is not a valid position command


_OUTCOME_COUNTER = {
    PublishOutcome.ACCEPTED: "accepted",
    PublishOutcome.PARTIAL: "partial",
    PublishOutcome.UNCERTAIN: "uncertain",
    PublishOutcome.REFUSED: "refused",
}


class CanTransport:
    """One arm's CAN boundary. Not thread-safe: one owner thread calls it."""

    def __init__(
        self,
        config: TransportConfig | None = None,
        *,
        bus: can.BusABC | None = None,
        clock: Clock = time.monotonic,
    ):
        self.config = config or default_config()
        self.clock = clock
        self._own_bus = bus is None
        self.bus = (
            bus
            if bus is not None
            else can.Bus(
                interface=self.config.interface,
                channel=self.config.resolved_channel,
                receive_own_messages=False,
            )
        )
        self._logger: can.Listener | None = (
            can.Logger(str(self.config.log_path)) if self.config.log_path is not None else None
        )
        self.counters = TransportCounters()
        self.latest_feedback: dict[int, JointFeedback] = {}
        self.feedback_received_at: dict[int, float] = {}
        self.last_foreign_frame: ForeignFrame | None = None
        self.last_feedback_error: str = ""
        self.last_report: PublishReport | None = None
        self._closed = False

    # ------------------------------------------------------------------ output

    def publish_sample(self, positions_rad: np.ndarray) -> PublishReport:
        """Encode (all or nothing) and send one seven-joint sample [rad]; never retries."""
        self._check_open()
        self.counters.samples += 1
        start = self.clock()
        try:
            frames = encode_sample(positions_rad, self.config.codec)
        except CodecError as err:
            self.counters.encode_errors += 1
            return self._finish(
                PublishReport(
                    PublishOutcome.REFUSED,
                    reason=f"encode: {err}",
                    extra={"error": type(err).__name__},
                )
            )
        bus, timeout = self.bus, self.config.send_timeout_s
        sent: list[int] = []
        for k, frame in enumerate(frames):
            msg = can.Message(
                arbitration_id=frame.arbitration_id,
                data=frame.data,
                is_extended_id=False,
                is_rx=False,
            )
            try:
                bus.send(msg, timeout=timeout)
            except (can.CanTimeoutError, TimeoutError) as err:
                return self._finish(
                    self._report(
                        PublishOutcome.UNCERTAIN,
                        sent,
                        start,
                        f"timeout sending joint {frame.joint} "
                        f"(0x{frame.arbitration_id:02X}): {err}",
                        err,
                    )
                )
            except can.CanError as err:
                outcome = PublishOutcome.REFUSED if k == 0 else PublishOutcome.PARTIAL
                return self._finish(
                    self._report(
                        outcome,
                        sent,
                        start,
                        f"bus refused joint {frame.joint} (0x{frame.arbitration_id:02X}): {err}",
                        err,
                    )
                )
            except Exception as err:  # unknown state of frame k: never guess "not sent"
                return self._finish(
                    self._report(
                        PublishOutcome.UNCERTAIN,
                        sent,
                        start,
                        f"unexpected {type(err).__name__} sending joint {frame.joint}: {err}",
                        err,
                    )
                )
            sent.append(frame.joint)
            self.counters.frames_sent += 1
            if self._logger is not None:
                self._log(msg, rx=False)
        duration = self.clock() - start
        if not duration <= self.config.publish_deadline_s:  # NaN-safe: an unreadable clock is late
            self.counters.deadline_misses += 1
            outcome = (
                PublishOutcome.UNCERTAIN
                if self.config.late_is_uncertain
                else PublishOutcome.ACCEPTED
            )
            return self._finish(
                PublishReport(
                    outcome,
                    tuple(sent),
                    reason=f"deadline missed: batch took {duration:.6f} s > "
                    f"{self.config.publish_deadline_s:.6f} s",
                    frames_sent=len(sent),
                    duration_s=duration,
                    extra={"deadline_missed": True},
                )
            )
        return self._finish(
            PublishReport(
                PublishOutcome.ACCEPTED,
                tuple(sent),
                frames_sent=len(sent),
                duration_s=duration,
                extra={"deadline_missed": False},
            )
        )

    def _report(
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

    def handle_message(self, msg: can.Message) -> JointFeedback | None:
        """Account for one received frame; return its feedback if it is valid feedback."""
        now = self.clock()
        self.counters.frames_received += 1
        self._log(msg, rx=True)
        if msg.is_extended_id or msg.is_remote_frame or msg.is_error_frame:
            self.counters.other_frames += 1
            return None
        if msg.arbitration_id in COMMAND_IDS:
            self.counters.foreign_command_frames += 1
            try:
                decoded = decode_command(msg.arbitration_id, msg.data, self.config.codec)
            except CodecError:
                decoded = None
            self.last_foreign_frame = ForeignFrame(
                msg.arbitration_id, bytes(msg.data), now, decoded
            )
            return None
        if msg.arbitration_id not in FEEDBACK_IDS:
            self.counters.other_frames += 1
            return None
        try:
            fb = decode_feedback(msg.arbitration_id, msg.data, self.config.codec)
        except CodecError as err:
            self.counters.feedback_errors += 1
            self.last_feedback_error = str(err)
            return None
        self.counters.feedback_frames += 1
        self.latest_feedback[fb.joint] = fb
        self.feedback_received_at[fb.joint] = now
        return fb

    def feedback_age(self, joint: int, now: float | None = None) -> float:
        """Seconds since joint ``joint`` (1..7) last gave valid feedback; inf if never."""
        t = self.feedback_received_at.get(joint)
        if t is None:
            return float("inf")
        return (self.clock() if now is None else now) - t

    def feedback_ages(self, now: float | None = None) -> np.ndarray:
        """Ages [s] of joints 1..7 (inf for a joint never heard from)."""
        now = self.clock() if now is None else now
        return np.array([self.feedback_age(j, now) for j in range(1, JOINTS_PER_ARM + 1)])

    # -------------------------------------------------------------- lifecycle

    def _log(self, msg: can.Message, rx: bool) -> None:
        if self._logger is None:
            return
        entry = can.Message(
            timestamp=msg.timestamp if rx and msg.timestamp else time.time(),
            arbitration_id=msg.arbitration_id,
            is_extended_id=msg.is_extended_id,
            is_remote_frame=msg.is_remote_frame,
            is_error_frame=msg.is_error_frame,
            data=bytes(msg.data),
            is_rx=rx,
            channel=self.config.resolved_channel,
        )
        self._logger.on_message_received(entry)

    def _check_open(self) -> None:
        if self._closed:
            raise TransportClosedError()

    def close(self) -> None:
        """Stop the logger (flushing it) and shut the bus down if this transport opened it."""
        if self._closed:
            return
        self._closed = True
        if self._logger is not None:
            self._logger.stop()
        if self._own_bus:
            self.bus.shutdown()

    def __enter__(self) -> CanTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
