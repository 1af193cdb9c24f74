"""The bus timing layer in the lockstep twin: python-can buses whose sends take bus time.

``TimedBus`` wraps one node's python-can bus: ``send`` queues the frame on the bus's
``BusTimeline`` (``rob_twin.twin.bus.timing``) instead of delivering it; the timeline hands it
to the inner bus (and so to every other node on the channel) at the end of its
frame, stamped with that simulated time. ``recv`` reads the inner bus unchanged.

``BusTimingLayer`` builds one timeline per channel of a ``ClosedLoop`` and wraps its
buses: the host of each arm is one node (its transport's frames contend as one
queue, like a SocketCAN interface), each drive is its own node (Amber feedback ids
0x91..0x97, Damiao reply ids 0x11..0x17), anything else the bank sends is node ``bank``.
The twin calls ``advance(now)`` every physics step before the drives read their buses, so a frame
reaches a drive at the first physics step at or after the end of its EOF.

A full host queue raises ``TransmitQueueFullError`` into the transport (a refusal:
the owner latches it). A full drive queue refuses that drive's feedback frame; the
refusal is counted in the bus report (``queue_refusals``), never silently lost.
"""

from __future__ import annotations

from collections.abc import Callable

import can
from rob_twin.models.damiao_motors import MST_IDS
from rob_twin.models.names import FEEDBACK_IDS
from rob_twin.twin.bus.timing import BusTimeline, BusTimingConfig, TransmitQueueFullError

HOST_NODE = "host"
BANK_NODE = "bank"


def drive_node(arbitration_id: int) -> str:
    """The node that sends ``arbitration_id`` on a bank's bus: ``drive<j>`` (Amber feedback
    ids 0x91..0x97, Damiao reply ids 0x11..0x17: each drive its own transmit queue) or
    ``bank``."""
    for ids in (FEEDBACK_IDS, MST_IDS):
        if arbitration_id in ids:
            return f"drive{ids.index(arbitration_id) + 1}"
    return BANK_NODE


class TimedBus(can.BusABC):
    """A node's bus whose frames go through ``timeline``; clock: simulated time [s].

    node: a fixed node name, or a function of the arbitration id (the bank's drives);
    raise_when_full: False counts a refused frame instead of raising (drive firmware)."""

    def __init__(
        self,
        inner: can.BusABC,
        timeline: BusTimeline,
        node: str | Callable[[int], str],
        clock: Callable[[], float],
        capacity: int,
        raise_when_full: bool = True,
    ):
        self._inner = inner
        self.timeline = timeline
        self._node = node
        self._clock = clock
        self._capacity = capacity
        self._raise = raise_when_full
        self.refused = 0
        super().__init__(channel=inner.channel_info)
        self.channel_info = f"timed {inner.channel_info}"

    def node_of(self, arbitration_id: int) -> str:
        node = self._node if isinstance(self._node, str) else self._node(arbitration_id)
        if node not in self.timeline.nodes:
            self.timeline.add_node(node, self._capacity, self._deliver)
        return node

    def _deliver(self, msg: can.Message) -> None:
        self._inner.send(msg)

    def send(self, msg: can.Message, timeout: float | None = None) -> None:
        try:
            self.timeline.submit(self.node_of(msg.arbitration_id), msg, self._clock())
        except TransmitQueueFullError:
            self.refused += 1
            if self._raise:
                raise

    def destroyed(self, msg: can.Message) -> None:
        """The fault layer destroyed ``msg`` on the wire: it still takes bus time."""
        self.timeline.destroyed(self.node_of(msg.arbitration_id), msg, self._clock())

    def bus_off(self, msg: can.Message) -> None:
        self.timeline.bus_off(self.node_of(msg.arbitration_id), msg, self._clock())

    def _recv_internal(self, timeout: float | None):
        return self._inner.recv(timeout=timeout), False

    def recv(self, timeout: float | None = None) -> can.Message | None:
        if timeout == 0 and not self._filters:
            return self._inner.recv(timeout=0)
        return super().recv(timeout)

    def shutdown(self) -> None:
        self._inner.shutdown()
        super().shutdown()


class BusTimingLayer:
    """One timeline per channel; ``clock`` is the twin's simulated time [s]."""

    def __init__(self, config: BusTimingConfig, clock: Callable[[], float], start_s: float = 0.0):
        self.config = config
        self._clock = clock
        self.timelines: dict[str, BusTimeline] = {}
        self._start = start_s
        self._host: dict[str, TimedBus] = {}

    def timeline(self, channel: str) -> BusTimeline:
        if channel not in self.timelines:
            self.timelines[channel] = BusTimeline(channel.split("@")[0], self.config, self._start)
        return self.timelines[channel]

    def host_bus(self, channel: str, inner: can.BusABC) -> TimedBus:
        bus = TimedBus(
            inner, self.timeline(channel), HOST_NODE, self._clock, self.config.host_queue_frames
        )
        self._host[channel] = bus
        return bus

    def bank_bus(self, channel: str, inner: can.BusABC) -> TimedBus:
        return TimedBus(
            inner,
            self.timeline(channel),
            drive_node,
            self._clock,
            self.config.drive_queue_frames,
            raise_when_full=False,
        )

    def wire_fault_sink(self, channel: str) -> Callable[[str, can.Message], None]:
        """What the host's fault layer calls when it destroys a frame or goes bus-off."""
        bus = self._host[channel]

        def sink(kind: str, msg: can.Message) -> None:
            if kind == "bus_off":
                bus.bus_off(msg)
            else:
                bus.destroyed(msg)

        return sink

    def advance(self, now: float) -> None:
        for tl in self.timelines.values():
            tl.advance(now)

    def latencies(self) -> dict[str, dict[str, list[float]]]:
        """Per bus: raw queueing, command-to-drive and feedback latencies [s]."""
        return {
            tl.name: {
                "queue": tl.queue_latency_s,
                "command_to_drive": tl.command_latency_s,
                "feedback": tl.feedback_latency_s,
            }
            for tl in self.timelines.values()
        }

    def report(self) -> dict:
        """Per bus (CAN10, CAN11): load, latencies, losses (simulated)."""
        return {tl.name: tl.report() for tl in self.timelines.values()}
