"""CAN bus timing in simulated time: frame durations, arbitration, queues, errors.

One ``BusTimeline`` per bus. Every node (the host, each drive) has a bounded FIFO
transmit queue; ``submit`` puts a frame at its tail at simulated time ``now`` and
raises ``TransmitQueueFullError`` (a ``can.CanOperationError``, so the transport
reports a refusal) when the queue is full: never a silent drop. ``advance(t)``
plays the bus up to ``t``:

- when the bus is idle (after the previous frame and its 3-bit interframe space)
  the head frames of all nodes that are waiting contend; the lowest identifier wins
  (ISO 11898-1 bitwise arbitration: base id first, then a standard frame beats an
  extended one with the same base id, then the extended bits; a data frame beats a
  remote frame). The winner occupies the bus for its exact length
  (``rob_twin.twin.bus.frame_bits``);
- a frame is delivered to every other node at the end of its EOF, stamped with that
  time; arbitration for an instant ``s`` is settled only once ``advance`` passes
  beyond ``s``, so frames submitted at ``s`` by any task of that instant contend;
- a frame the fault layer destroys on the wire (``drop``) still takes its bus time,
  plus an error frame (``error_frame_bits``), and is counted as lost; a node that
  goes bus-off (``bus_off``) first fails ``bus_off_attempts`` transmissions (each
  up to the ACK slot plus an error frame: TEC +8 each, bus-off at 256).

Figures per bus (``report``): load (share of time the bus was busy, interframe
spaces included), queueing latency (submit -> start of transmission), command-to-drive
latency (host submit -> end of frame at the drive) and feedback latency (drive
submit -> end of frame at the host), as p50/p99/max in microseconds, frames lost,
error frames, bus-off events, queue refusals and the deepest queue per node.

All times are simulated seconds; nothing here reads a wall clock.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import can
import numpy as np
from rob_twin.models.errors import RobTwinError
from rob_twin.models.names import COMMAND_IDS, FEEDBACK_IDS
from rob_twin.twin.bus.frame_bits import (
    INTERFRAME_BITS,
    FrameBits,
    Stuffing,
    classic_frame_bits,
    fd_frame_bits,
)

FRAME_FORMATS = ("classic", "fd")


class BusTimingConfigError(RobTwinError, ValueError):
    """A bus timing setting out of its valid range (the message names both)."""


class TransmitQueueFullError(RobTwinError, can.CanOperationError):
    """A node's transmit queue is full: the frame was not accepted (nothing was sent)."""

    def __init__(self, bus: str, node: str, capacity: int, arbitration_id: int):
        self.bus, self.node, self.capacity = bus, node, capacity
        super().__init__(
            f"{bus}: transmit queue of {node} is full ({capacity} frames); "
            f"frame 0x{arbitration_id:03X} refused"
        )


@dataclass(frozen=True)
class BusTimingConfig:
    """bitrate_bps: nominal (arbitration) rate; frame_format: 'classic' or 'fd' (every
    frame on the bus is sent in that format, as OpenArm sends 8-byte frames as FD);
    data_bitrate_bps: FD data-phase rate (None: the nominal rate); brs: FD bit-rate
    switch; stuffing: exact (from the frame's bits) or worst case; host_queue_frames:
    the host's transmit queue (Linux's default CAN txqueuelen is 10); drive_queue_frames:
    each drive's (ASSUMED: a few transmit mailboxes); bus_off_attempts and
    error_frame_bits: what entering bus-off costs (error flag 6 + echo 6 + delimiter 8)."""

    bitrate_bps: float = 1_000_000.0
    frame_format: str = "classic"
    data_bitrate_bps: float | None = None
    brs: bool = True
    stuffing: Stuffing = Stuffing.EXACT
    host_queue_frames: int = 10
    drive_queue_frames: int = 3
    bus_off_attempts: int = 32
    error_frame_bits: int = 20

    def __post_init__(self) -> None:
        object.__setattr__(self, "stuffing", Stuffing(self.stuffing))
        if not (math.isfinite(self.bitrate_bps) and 10_000 <= self.bitrate_bps <= 1_000_000):
            raise BusTimingConfigError(
                f"bitrate_bps {self.bitrate_bps!r} is outside 10 kbit/s .. 1 Mbit/s (nominal rate)"
            )
        if self.frame_format not in FRAME_FORMATS:
            raise BusTimingConfigError(
                f"frame_format {self.frame_format!r} is not one of {FRAME_FORMATS}"
            )
        d = self.data_bitrate_bps
        if d is not None and not (math.isfinite(d) and self.bitrate_bps <= d <= 12_000_000):
            raise BusTimingConfigError(
                f"data_bitrate_bps {d!r} is outside [nominal {self.bitrate_bps:g}, 12e6] bit/s"
            )
        for name in (
            "host_queue_frames",
            "drive_queue_frames",
            "bus_off_attempts",
            "error_frame_bits",
        ):
            v = getattr(self, name)
            if not (isinstance(v, int) and v >= 1):
                raise BusTimingConfigError(f"{name} must be a whole number >= 1, got {v!r}")

    @property
    def data_rate(self) -> float:
        return self.data_bitrate_bps or self.bitrate_bps

    def label(self) -> str:
        if self.frame_format == "fd":
            return f"CAN FD {self.bitrate_bps / 1e6:g}/{self.data_rate / 1e6:g} Mbit/s"
        return f"classic CAN {self.bitrate_bps / 1e3:g} kbit/s"

    def frame_bits(self, msg: can.Message) -> FrameBits:
        data = bytes(msg.data)
        if self.frame_format == "fd":
            from rob_twin.twin.bus.frame_bits import FD_LENGTHS

            n = next(k for k in FD_LENGTHS if k >= len(data))  # FD pads to a valid length
            return fd_frame_bits(
                msg.arbitration_id,
                data.ljust(n, b"\0"),
                extended=msg.is_extended_id,
                brs=self.brs,
                stuffing=self.stuffing,
            )
        return classic_frame_bits(
            msg.arbitration_id,
            data,
            extended=msg.is_extended_id,
            remote=msg.is_remote_frame,
            dlc=msg.dlc,
            stuffing=self.stuffing,
        )

    def frame_seconds(self, msg: can.Message) -> float:
        """Seconds the frame occupies the bus, interframe space included."""
        return (
            self.frame_bits(msg).duration_s(self.bitrate_bps, self.data_rate)
            + INTERFRAME_BITS / self.bitrate_bps
        )


_RATE_SUFFIX = {"k": 1e3, "M": 1e6}


def _rate(text: str, spec: str) -> float:
    try:
        if text[-1:] in _RATE_SUFFIX:
            return float(text[:-1]) * _RATE_SUFFIX[text[-1]]
        return float(text)
    except ValueError:
        raise BusTimingConfigError(
            f"bus spec {spec!r}: {text!r} is not a bit rate (e.g. 1M, 500k, 250000)"
        ) from None


def parse_bus_spec(spec: str) -> BusTimingConfig | None:
    """'off' -> None; '1M', '500k', 'classic:250k' -> classic CAN; 'fd:1M/5M' -> CAN FD
    with a 5 Mbit/s data phase (BRS); a '+worst' suffix counts worst-case stuffing."""
    text, stuffing = spec.strip(), Stuffing.EXACT
    if text == "off":
        return None
    if text.endswith("+worst"):
        text, stuffing = text[: -len("+worst")], Stuffing.WORST
    fmt, _, rates = text.rpartition(":")
    fmt = fmt or "classic"
    if fmt not in FRAME_FORMATS or not rates:
        raise BusTimingConfigError(
            f"bus spec {spec!r} is not one of: off, RATE, classic:RATE, fd:RATE/DATA_RATE "
            "(rates like 1M, 500k), optionally with +worst"
        )
    nominal, _, data = rates.partition("/")
    return BusTimingConfig(
        bitrate_bps=_rate(nominal, spec),
        frame_format=fmt,
        data_bitrate_bps=_rate(data, spec) if data else None,
        stuffing=stuffing,
    )


def default_config() -> BusTimingConfig:
    """ROB's assumed bus: classic CAN at 1 Mbit/s, exact stuffing."""
    return BusTimingConfig()


def arbitration_key(msg: can.Message) -> tuple[int, int, int, int]:
    """Smaller wins arbitration: base id, standard before extended, extended bits, data
    before remote."""
    if msg.is_extended_id:
        return (msg.arbitration_id >> 18, 1, msg.arbitration_id & 0x3FFFF, int(msg.is_remote_frame))
    return (msg.arbitration_id, 0, 0, int(msg.is_remote_frame))


@dataclass
class _Queued:
    msg: can.Message
    node: str
    submit_s: float
    lost: bool = False  # destroyed on the wire: takes bus time, never delivered
    busy_s: float | None = None  # override of the bus time (bus-off attempts)
    key: tuple = field(init=False)

    def __post_init__(self) -> None:
        self.key = arbitration_key(self.msg)


@dataclass
class NodeState:
    capacity: int
    deliver: Callable[[can.Message], None] | None
    queue: deque = field(default_factory=deque)
    refused: int = 0
    max_depth: int = 0
    bus_off: bool = False


def percentiles_us(values: list[float]) -> dict:
    """p50/p99/max of ``values`` [s] in microseconds, and how many there were."""
    if not values:
        return {"n": 0, "p50_us": None, "p99_us": None, "max_us": None}
    a = np.asarray(values) * 1e6
    return {
        "n": len(values),
        "p50_us": round(float(np.percentile(a, 50)), 2),
        "p99_us": round(float(np.percentile(a, 99)), 2),
        "max_us": round(float(a.max()), 2),
    }


class BusTimeline:
    """One bus played in simulated time; see the module docstring."""

    def __init__(self, name: str, config: BusTimingConfig | None = None, start_s: float = 0.0):
        self.name = name
        self.config = config or default_config()
        self.nodes: dict[str, NodeState] = {}
        self._states: list[NodeState] = []
        self._free_at = start_s  # the bus is idle from this instant
        self._current: tuple[_Queued, float, float] | None = None  # item, start, end
        self._waiting = 0  # frames in all queues
        self.start_s = self.now_s = start_s
        self.busy_s = 0.0
        self.frames = 0
        self.frames_lost = 0
        self.error_frames = 0
        self.bus_off_events = 0
        self.queue_latency_s: list[float] = []
        self.command_latency_s: list[float] = []
        self.feedback_latency_s: list[float] = []
        self._ifs_s = INTERFRAME_BITS / self.config.bitrate_bps
        self._error_s = self.config.error_frame_bits / self.config.bitrate_bps

    # ------------------------------------------------------------------ nodes
    def add_node(
        self, node: str, capacity: int, deliver: Callable[[can.Message], None] | None
    ) -> None:
        if node in self.nodes:
            raise BusTimingConfigError(f"{self.name}: node {node!r} is already on the bus")
        self.nodes[node] = NodeState(capacity, deliver)
        self._states = list(self.nodes.values())

    def submit(self, node: str, msg: can.Message, now: float) -> None:
        """Queue ``msg`` at ``node`` at ``now`` [s]; TransmitQueueFullError when full."""
        st = self._node(node)
        if len(st.queue) >= st.capacity:
            st.refused += 1
            raise TransmitQueueFullError(self.name, node, st.capacity, msg.arbitration_id)
        st.bus_off = False  # it sends again: any bus-off episode is over
        st.queue.append(_Queued(msg=msg, node=node, submit_s=now))
        self._waiting += 1
        st.max_depth = max(st.max_depth, len(st.queue))

    def destroyed(self, node: str, msg: can.Message, now: float) -> None:
        """``msg`` goes out from ``node`` but is destroyed on the wire (error frame)."""
        st = self._node(node)
        st.queue.append(_Queued(msg=msg, node=node, submit_s=now, lost=True))
        self._waiting += 1
        st.max_depth = max(st.max_depth, len(st.queue))

    def bus_off(self, node: str, msg: can.Message, now: float) -> None:
        """``node`` enters bus-off while sending ``msg``: its failing attempts take bus
        time once per episode (the episode ends when the node sends again)."""
        st = self._node(node)
        if st.bus_off:
            return
        st.bus_off = True
        self.bus_off_events += 1
        bits = self.config.frame_bits(msg)
        upto_ack = bits.total_bits - 9  # the ACK error shows at the ACK slot: no delimiter, EOF
        per_try = (
            bits.duration_s(self.config.bitrate_bps, self.config.data_rate)
            * upto_ack
            / bits.total_bits
            + self._error_s
        )
        for _ in range(self.config.bus_off_attempts):
            st.queue.append(_Queued(msg=msg, node=node, submit_s=now, lost=True, busy_s=per_try))
        self._waiting += self.config.bus_off_attempts

    def _node(self, node: str) -> NodeState:
        try:
            return self.nodes[node]
        except KeyError:
            raise BusTimingConfigError(
                f"{self.name}: no node {node!r}; nodes: {sorted(self.nodes)}"
            ) from None

    # ------------------------------------------------------------------ time
    def advance(self, t: float) -> int:
        """Play the bus up to ``t`` [s]; return the frames delivered."""
        delivered = 0
        ifs = self._ifs_s
        if self._current is None and not self._waiting:
            self.now_s = max(self.now_s, t)
            return 0
        while True:
            cur = self._current
            if cur is not None:
                item, start, end = cur
                if end > t:
                    break
                self._current = None
                self._finish(item, start, end)
                delivered += 0 if item.lost else 1
                continue
            nxt = self._arbitrate(t)
            if nxt is None:
                break
            item, start = nxt
            self._waiting -= 1
            if item.busy_s is not None:
                end = start + item.busy_s
            else:
                end = start + self.config.frame_bits(item.msg).duration_s(
                    self.config.bitrate_bps, self.config.data_rate
                )
                if item.lost:
                    end += self._error_s
            self._current = (item, start, end)
            self._free_at = end + ifs
            self.busy_s += end + ifs - start
        self.now_s = max(self.now_s, t)
        return delivered

    def _arbitrate(self, t: float) -> tuple[_Queued, float] | None:
        """The frame that wins the bus next if its start lies before ``t`` [s]."""
        free = self._free_at
        earliest = math.inf
        best = best_state = None
        for st in self._states:  # one pass: most of the time the bus has a backlog
            q = st.queue
            if q:
                head = q[0]
                s = head.submit_s
                if s < earliest:
                    earliest = s
                if s <= free and (best is None or head.key < best.key):
                    best, best_state = head, st
        if earliest == math.inf:
            return None
        start = free if earliest <= free else earliest
        if start >= t:
            return None  # contenders of the instant ``start`` may still arrive
        if best is None:  # the bus idled: the contenders are the frames of instant ``start``
            for st in self._states:
                q = st.queue
                if q and q[0].submit_s <= start and (best is None or q[0].key < best.key):
                    best, best_state = q[0], st
        best_state.queue.popleft()
        return best, start

    def _finish(self, item: _Queued, start: float, end: float) -> None:
        if item.lost:
            self.error_frames += 1
            if item.busy_s is None:
                self.frames_lost += 1
            return
        self.frames += 1
        self.queue_latency_s.append(start - item.submit_s)
        aid = item.msg.arbitration_id
        if aid in COMMAND_IDS:
            self.command_latency_s.append(end - item.submit_s)
        elif aid in FEEDBACK_IDS:
            self.feedback_latency_s.append(end - item.submit_s)
        st = self.nodes[item.node]
        if st.deliver is not None:
            item.msg.timestamp = end
            st.deliver(item.msg)

    # ------------------------------------------------------------------ figures
    @property
    def load(self) -> float:
        span = self.now_s - self.start_s
        return self.busy_s / span if span > 0 else 0.0

    def report(self) -> dict:
        return {
            "bus": self.name,
            "config": self.config.label(),
            "simulated_s": round(self.now_s - self.start_s, 6),
            "load": round(self.load, 4),
            "frames": self.frames,
            "frames_lost": self.frames_lost,
            "error_frames": self.error_frames,
            "bus_off_events": self.bus_off_events,
            "queue_latency": percentiles_us(self.queue_latency_s),
            "command_to_drive_latency": percentiles_us(self.command_latency_s),
            "feedback_latency": percentiles_us(self.feedback_latency_s),
            "queue_refusals": {n: s.refused for n, s in self.nodes.items() if s.refused},
            "max_queue_depth": {n: s.max_depth for n, s in self.nodes.items()},
        }
