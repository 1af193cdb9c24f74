"""Bus budget: does an arm's streaming fit on its bus, and with what latency?

Each arm bus carries one host streaming ``joints`` commands at ``command_rate_hz`` and
``joints`` drives answering at ``feedback_rate_hz``, in the frames of the drive family
(``FAMILY_FRAMES``: Amber 3-byte position commands on 0x11.. and 8-byte feedback on 0x91..;
Damiao 8-byte MIT commands on 0x01.. each answered by an 8-byte reply on 0x11..), all
released on the same instants (the worst alignment, and
the twin's: feedback ticks coincide with owner ticks). The traffic is played through
a ``BusTimeline`` (``rob_twin.twin.bus.timing``) for ``duration_s`` with worst-case bit
stuffing by default, and judged:

- offered load (bits per second the schedule asks for / what the bus can carry,
  interframe spaces included) at most ``max_load`` (ASSUMED margin 0.8: a bus run near
  saturation leaves no room for error frames, retransmissions or a diagnostic tool);
- worst command-to-drive latency (host submit -> end of the last frame of a sample)
  within one command period, so a sample is on the drives before the next one is
  queued; the worst is the larger of the simulated maximum and the response-time bound
  (one lower-priority frame already on the wire plus the sample's seven commands);
- no transmit queue refused a frame.

``bus_budget`` gives the figures; the rehearsal gate built on them is
``rob_twin.twin.rehearsal.gates.gate_bus_budget`` (``rob-twin rehearse --gate bus_budget``).
Simulated; hardware_io: false.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import can
from rob_twin.models.names import COMMAND_IDS, FEEDBACK_IDS
from rob_twin.twin.bus.frame_bits import INTERFRAME_BITS, Stuffing
from rob_twin.twin.bus.timing import (
    BusTimeline,
    BusTimingConfig,
    BusTimingConfigError,
    TransmitQueueFullError,
)

COMMAND_BYTES = 3  # opcode 0x40 + 16-bit position word
FEEDBACK_BYTES = 8
DAMIAO_ESC_ID0, DAMIAO_MST_ID0 = 0x01, 0x11  # OpenArm's ids: commands 0x01.., replies 0x11..


def _frames(ids: tuple[int, ...], data: bytes, n: int) -> list[can.Message]:
    return [can.Message(arbitration_id=i, data=data, is_extended_id=False) for i in ids[:n]]


def amber_frames(n: int) -> tuple[list[can.Message], list[can.Message]]:
    """(commands, feedback) of one Amber sample of ``n`` joints (seed 001)."""
    return (
        _frames(COMMAND_IDS, bytes([0x40, 0x7F, 0x7F]), n),
        _frames(FEEDBACK_IDS, bytes(FEEDBACK_BYTES), n),
    )


def damiao_frames(n: int) -> tuple[list[can.Message], list[can.Message]]:
    """(commands, replies) of one Damiao MIT sample of ``n`` joints: 8 bytes each way."""
    return (
        _frames(tuple(range(DAMIAO_ESC_ID0, DAMIAO_ESC_ID0 + n)), bytes(8), n),
        _frames(tuple(range(DAMIAO_MST_ID0, DAMIAO_MST_ID0 + n)), bytes(8), n),
    )


FAMILY_FRAMES = {"amber": amber_frames, "damiao": damiao_frames}


def _worst_case_bus() -> BusTimingConfig:
    return BusTimingConfig(stuffing=Stuffing.WORST)


@dataclass(frozen=True)
class BusBudgetConfig:
    """bus: the bus to budget (default classic 1 Mbit/s, worst-case stuffing);
    command_rate_hz / feedback_rate_hz: None takes the rehearsal's owner and feedback
    rates [Hz]; joints: drives per bus; max_load: the load allowed (share of bus time);
    duration_s: simulated seconds of traffic played."""

    bus: BusTimingConfig = field(default_factory=_worst_case_bus)
    command_rate_hz: float | None = None
    feedback_rate_hz: float | None = None
    joints: int = 7
    max_load: float = 0.8
    duration_s: float = 1.0
    family: str = "amber"  # whose frames: a key of FAMILY_FRAMES

    def __post_init__(self) -> None:
        for name in ("command_rate_hz", "feedback_rate_hz"):
            v = getattr(self, name)
            if v is not None and not (math.isfinite(v) and 0 < v <= 10_000):
                raise BusTimingConfigError(f"{name} {v!r} is outside (0, 10000] Hz")
        if self.family not in FAMILY_FRAMES:
            raise BusTimingConfigError(
                f"drive family {self.family!r} has no bus frames; valid: {sorted(FAMILY_FRAMES)}"
            )
        if not 0 < self.max_load <= 1:
            raise BusTimingConfigError(f"max_load {self.max_load!r} is outside (0, 1]")
        if not 1 <= self.joints <= len(COMMAND_IDS):
            raise BusTimingConfigError(f"joints {self.joints!r} is outside 1..{len(COMMAND_IDS)}")


def default_config() -> BusBudgetConfig:
    return BusBudgetConfig()


def bus_budget(
    cfg: BusBudgetConfig, command_rate_hz: float, feedback_rate_hz: float, bus_name: str = "CAN10"
) -> dict:
    """Figures of one arm bus carrying ROB's streaming (see the module docstring)."""
    # deep queues: an overloaded schedule shows as load and latency, not as a refusal
    # on the first burst; the queue limit still applies (and is reported)
    tl = BusTimeline(bus_name, cfg.bus)
    tl.add_node("host", max(cfg.bus.host_queue_frames, cfg.joints), None)
    for j in range(1, cfg.joints + 1):
        tl.add_node(f"drive{j}", cfg.bus.drive_queue_frames, None)
    cmd, fb = FAMILY_FRAMES[cfg.family](cfg.joints)
    offered_s = command_rate_hz * sum(
        cfg.bus.frame_seconds(m) for m in cmd
    ) + feedback_rate_hz * sum(cfg.bus.frame_seconds(m) for m in fb)
    events: list[tuple[float, int, int]] = []  # (time, kind 0 command / 1 feedback, k)
    for kind, rate in ((0, command_rate_hz), (1, feedback_rate_hz)):
        n = int(math.floor(cfg.duration_s * rate + 1e-9))
        events += [(k / rate, kind, k) for k in range(n)]
    events.sort()
    refused = 0
    for t, kind, _ in events:
        tl.advance(t)
        for j in range(cfg.joints):
            node, msg = ("host", cmd[j]) if kind == 0 else (f"drive{j + 1}", fb[j])
            try:
                tl.submit(node, msg.__copy__(), t)
            except TransmitQueueFullError:
                refused += 1
    tl.advance(cfg.duration_s)
    rep = tl.report()
    # response-time bound (Davis et al. 2007): the commands are the highest-priority ids,
    # so the last of a sample waits for at most one lower-priority frame already on the
    # wire, then the six commands before it; the simulation only sees the phases it plays
    ifs = INTERFRAME_BITS / cfg.bus.bitrate_bps
    bound_s = (
        max(cfg.bus.frame_seconds(m) for m in fb) + sum(cfg.bus.frame_seconds(m) for m in cmd) - ifs
    )
    sim_worst_s = (rep["command_to_drive_latency"]["max_us"] or math.inf) * 1e-6
    worst_s = max(sim_worst_s, bound_s)
    period_s = 1.0 / command_rate_hz
    offered = offered_s  # seconds of bus time per second
    fits = offered <= cfg.max_load and worst_s <= period_s and refused == 0
    return {
        "bus": bus_name,
        "config": cfg.bus.label(),
        "stuffing": cfg.bus.stuffing.value,
        "command_rate_hz": command_rate_hz,
        "feedback_rate_hz": feedback_rate_hz,
        "joints": cfg.joints,
        "offered_load": round(offered, 4),
        "max_load": cfg.max_load,
        "measured_load": rep["load"],
        "worst_command_to_drive_us": None if math.isinf(worst_s) else round(worst_s * 1e6, 1),
        "bound_command_to_drive_us": round(bound_s * 1e6, 1),
        "simulated_max_command_to_drive_us": rep["command_to_drive_latency"]["max_us"],
        "p99_command_to_drive_us": rep["command_to_drive_latency"]["p99_us"],
        "command_period_us": round(period_s * 1e6, 1),
        "worst_feedback_us": rep["feedback_latency"]["max_us"],
        "frames_refused": refused,
        "fits": bool(fits),
    }


def with_bus(cfg: BusBudgetConfig, bus: BusTimingConfig | None = None, **kw) -> BusBudgetConfig:
    """``cfg`` with another bus (stuffing kept worst-case unless ``bus`` says otherwise)."""
    return replace(cfg, **({"bus": bus} if bus is not None else {}), **kw)
