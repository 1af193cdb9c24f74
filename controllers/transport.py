"""The CAN transport boundary of one arm on Amber drives: samples out, feedback in.

``CanTransport`` is a thin layer over a python-can ``Bus`` (``virtual`` by default;
interface and channel are configuration, the channel defaulting to the arm's
``BUS_MAPPING`` entry). It implements ``SamplePublisher``; the sending rules, the
polling and the second-writer accounting are ``rob_twin.controllers.transport_core``'s:

* ``publish_sample`` encodes the seven joints with ``rob_twin.controllers.codec`` all or
  nothing (REFUSED when one does not encode), then sends the seven frames in joint
  order, once, with the core's outcome rules (REFUSED, PARTIAL, UNCERTAIN; a batch
  later than ``publish_deadline_s`` is UNCERTAIN when ``late_is_uncertain``). It
  never retries.
* ``poll_feedback`` hands every waiting frame to ``handle_message``, which records
  per joint the latest decoded ``JointFeedback`` and its receive time on the injected
  clock (``clock``, default ``time.monotonic``; the twin passes simulated time). A
  frame on one of our command ids (a second writer) is kept with its decoded command.
* Traffic logging: ``log_path`` attaches python-can's standard writer chosen by
  suffix (``.log`` -> ``CanutilsLogWriter``, ``.asc`` -> ``ASCWriter``, ...), fed
  with every frame sent (``is_rx=False``) and received (``is_rx=True``). Log
  timestamps are wall-clock seconds (python-can's own convention for received
  frames), not the injected clock.

No mujoco here; stdlib, numpy, python-can and other ``controllers`` modules only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import can
import numpy as np
from rob_twin.controllers.checks import finite_real
from rob_twin.controllers.codec import (
    CodecConfig,
    DecodedCommand,
    JointFeedback,
    decode_command,
    decode_feedback,
    encode_sample,
)
from rob_twin.controllers.codec import (
    default_config as default_codec_config,
)
from rob_twin.controllers.errors import CodecError, TransportConfigError
from rob_twin.controllers.publish import PublishReport
from rob_twin.controllers.transport_core import (
    Clock,
    ForeignFrame,
    TransportCore,
    TransportCounters,
)
from rob_twin.models.names import BUS_MAPPING, COMMAND_IDS, FEEDBACK_IDS, Arm

__all__ = [
    "CanTransport",
    "Clock",
    "ForeignFrame",
    "TransportConfig",
    "TransportCounters",
    "default_config",
]


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


class CanTransport(TransportCore):
    """One arm's CAN boundary on Amber drives. Not thread-safe: one owner thread calls it."""

    def __init__(
        self,
        config: TransportConfig | None = None,
        *,
        bus: can.BusABC | None = None,
        clock: Clock = time.monotonic,
    ):
        self.config = config or default_config()
        super().__init__(
            self.config,
            bus=bus,
            clock=clock,
            counters=TransportCounters(),
            command_ids=COMMAND_IDS,
        )
        self._logger: can.Listener | None = (
            can.Logger(str(self.config.log_path)) if self.config.log_path is not None else None
        )
        self.latest_feedback: dict[int, JointFeedback] = {}

    # ------------------------------------------------------------------ output

    def publish_sample(self, positions_rad: np.ndarray) -> PublishReport:
        """Encode (all or nothing) and send one seven-joint sample [rad]; never retries."""
        self._check_open()
        self.counters.samples += 1
        start = self.clock()
        try:
            frames = encode_sample(positions_rad, self.config.codec)
        except CodecError as err:
            return self._refused(f"encode: {err}", err)
        return self._finish(self._send_batch(frames, start))

    # ------------------------------------------------------------------- input

    def _decode_foreign(self, msg: can.Message) -> DecodedCommand | None:
        try:
            return decode_command(msg.arbitration_id, msg.data, self.config.codec)
        except CodecError:
            return None

    def _handle_reply(self, msg: can.Message, now: float) -> JointFeedback | None:
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

    def close(self) -> None:
        """Stop the logger (flushing it) and shut the bus down if this transport opened it."""
        if not self._closed and self._logger is not None:
            self._logger.stop()
        super().close()
