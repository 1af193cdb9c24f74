"""``rob-twin mirror``: listen to a live bus, never transmit, and run the twin beside the real arm.

``run_mirror(config)`` opens each arm's channel read-only (``listen_only``: socketcand on
127.0.0.1:29536 by default, or SocketCAN), waits until every joint of every mirrored arm
has sent feedback (``startup_feedback_timeout_s``), builds a ``MirrorTwin`` standing where
the real arms stand, then until ``seconds`` have passed hands every frame to it as it
arrives: the host's commands drive the twin's drives at their bus time, each feedback
frame is compared with the twin at that time (``rob_twin.twin.bus.mirror``), and a joint
alarms by ``alarm`` (``rob_twin.twin.bus.mirror.AlarmConfig``: one frame beyond the tolerance,
``max``, or the RMS over a sliding window beyond a multiple of the jitter floor measured in
the first seconds, ``rms``).

One reader thread per bus timestamps each frame's arrival (wall time, Unix [s]) and queues
it; the thread that owns the twin takes frames from the queue at once, so an alarm is
emitted (``on_alarm``: printed, a telemetry line) right after the frame that shows it;
its detection latency (emission minus arrival, and minus the frame's bus stamp) is
summarised, apart from alarms on frames that queued while the twin was being built
(``backlog_alarms``: their latency is the build's). ``on_status`` gets one line every
``status_every_s``; with ``telemetry`` (a text stream) one JSON line per
``1 / telemetry_hz`` s holds the real arm, the twin and their difference, alarms are lines of
their own and the summary the last.

A mirror that falls more than ``max_lag_s`` behind the bus (frames queued, the twin not
keeping up) stops with ``MirrorLagError``: a late mirror must not pretend to be live.

Beside a simulated ``rob-twin bank`` (``bank_control_port``: its control port) the mirror
asks the bank for ``status`` every ``bank_lag_watch.POLL_S`` (a thread of its own,
``BankLagPoller``; first once before anything opens: ``MirrorInputError`` when the port does
not answer like a bank) and holds each compared reply until the bank's lag at its bus time
is known (``LagGate``): replies stamped while the bank's physics lagged the wall clock by
more than ``LAG_THRESHOLD_S`` (and ``SETTLE_S`` after) are left out of the alarm statistic
and counted, the rest judged as before, up to one poll later. The summary's ``bank_lag``
says what was left out (``excluded_for_bank_lag_s`` [s of bus time]) or, without a control
port, that the bank's lag was not observable (a real bus: nothing to observe).
"""

from __future__ import annotations

import json
import math
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

import can
from rob_twin.models.errors import RobTwinError
from rob_twin.models.names import BUS_MAPPING, DEFAULT_ROBOT, Arm
from rob_twin.twin.bus.bank_lag_watch import (
    BankLagPoller,
    BankLagWatch,
    LagGate,
    not_observable,
)
from rob_twin.twin.bus.host_process import captured_bus_log
from rob_twin.twin.bus.listen_only import LISTEN_INTERFACES, ListenOnlyBus, open_listen_only
from rob_twin.twin.bus.mirror import (
    COMMAND,
    REPLY,
    Alarm,
    AlarmConfig,
    BusProtocol,
    MirrorInputError,
    MirrorTwin,
    TwinParameters,
    bus_protocol,
)
from rob_twin.twin.bus.socketcand import LOCALHOST
from rob_twin.twin.bus.timing import percentiles_us

READ_POLL_S = 0.05  # a reader thread's recv timeout: how soon it sees the stop [s]


class MirrorLagError(RobTwinError):
    """The mirror fell too far behind the live bus to call itself live."""


@dataclass(frozen=True)
class MirrorConfig:
    """interface/host/port: where the bus is (the same as ``rob-twin host``); channels:
    {arm: channel}; arms: which arms to mirror; seconds: run length [s, wall];
    tolerance_rad: per-joint alarm threshold [rad]; status_every_s [s]; telemetry_hz
    [Hz]; connect_timeout_s, startup_feedback_timeout_s [s]; max_lag_s: stop when a frame
    is handled this long after its arrival [s]; seed: the twin's seed; robot: the robot on
    the bus (a shipped name, a robot file or a ``Robot``): its drive family's ids, reply
    decoding and joint count (``rob_twin.twin.bus.mirror.bus_protocol``); alarm: how a joint
    alarms (``rob_twin.twin.bus.mirror.AlarmConfig``; default ``max`` at ``tolerance_rad``,
    ``rob-twin mirror``'s default ``rms``); bank_control_port: the control port of the
    ``rob-twin bank`` that serves the bus (on ``host`` for socketcand, else 127.0.0.1), to
    leave out the replies stamped while the bank lagged (module doc); None (a real bus):
    every reply judged."""

    interface: str = "socketcand"
    host: str = LOCALHOST
    port: int = 29536
    channels: dict = field(default_factory=lambda: {a.value: BUS_MAPPING[a].channel for a in Arm})
    arms: tuple[str, ...] = ("right", "left")
    seconds: float = 10.0
    tolerance_rad: float = 0.05
    status_every_s: float = 1.0
    telemetry_hz: float = 20.0
    connect_timeout_s: float = 3.0
    startup_feedback_timeout_s: float = 3.0
    max_lag_s: float = 1.0
    seed: int = 0
    robot: object = DEFAULT_ROBOT
    alarm: AlarmConfig = field(default_factory=AlarmConfig)
    bank_control_port: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.alarm, AlarmConfig):
            raise MirrorInputError("alarm", self.alarm, "an AlarmConfig")
        p = self.bank_control_port
        if p is not None and (isinstance(p, bool) or not isinstance(p, int) or not 1 <= p <= 65535):
            raise MirrorInputError(
                "bank_control_port", p, "a TCP port 1..65535 (a rob-twin bank's control port)"
            )
        if self.interface not in LISTEN_INTERFACES:
            raise MirrorInputError("interface", self.interface, f"one of {LISTEN_INTERFACES}")
        if not 0 <= self.port <= 65535 or isinstance(self.port, bool):
            raise MirrorInputError("port", self.port, "0..65535")
        limits = {
            "seconds": (0.0, 86400.0),
            "tolerance_rad": (0.0, math.pi),
            "status_every_s": (0.0, 3600.0),
            "telemetry_hz": (0.0, 1000.0),
            "connect_timeout_s": (0.0, 60.0),
            "startup_feedback_timeout_s": (0.0, 60.0),
            "max_lag_s": (0.0, 60.0),
        }
        for name, (lo, hi) in limits.items():
            v = getattr(self, name)
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and lo < v <= hi
            if not ok:
                raise MirrorInputError(name, v, f"a number in ({lo:g}, {hi:g}]")
        if not self.arms:
            raise MirrorInputError("arms", self.arms, "at least one of 'right', 'left'")
        for a in self.arms:
            arm = Arm.parse(a)
            if arm.value not in self.channels:
                raise MirrorInputError(
                    "channels", self.channels, f"a channel for the {arm.value} arm"
                )


def default_config() -> MirrorConfig:
    """socketcand on 127.0.0.1:29536, both arms, 10 s, 0.05 rad."""
    return MirrorConfig()


def _read_into(bus: ListenOnlyBus, arm: Arm, out: queue.Queue, stop: threading.Event) -> None:
    """Queue (arm, frame, arrival [s, Unix]) for every frame of ``bus`` until ``stop``."""
    while not stop.is_set():
        try:
            msg = bus.recv(timeout=READ_POLL_S)
        except (can.CanError, OSError, ValueError) as err:
            out.put((arm, err, time.time()))
            return
        if msg is not None and not msg.is_error_frame:
            out.put((arm, msg, time.time()))


@dataclass
class StartState:
    """What the bus showed before the twin was built: per arm the joints' positions [rad,
    drive frame] and status nibbles, the host's last frame per command id, and the bus stamp
    [s] of the last reply needed."""

    positions: dict = field(default_factory=dict)
    velocities: dict = field(default_factory=dict)
    statuses: dict = field(default_factory=dict)
    last_frames: dict = field(default_factory=dict)
    stamp_s: float = -math.inf

    def start(self) -> dict:
        return {a: [s[j] for j in sorted(s)] for a, s in self.positions.items()}

    def start_velocity(self) -> dict | None:
        """{arm: joint velocities [rad/s]} where every joint of the arm reported one."""
        out = {
            a: [v[j] for j in sorted(v)]
            for a, v in self.velocities.items()
            if len(v) == len(self.positions[a])
        }
        return out or None


def _wait_for_start(
    frames: queue.Queue,
    arms: tuple[Arm, ...],
    timeout_s: float,
    protocol: BusProtocol | None = None,
) -> tuple[dict, float]:
    """The real arms' joint positions [rad, drive frame] once every joint sent feedback, and
    the bus stamp [s] of the last frame needed; MirrorInputError after ``timeout_s``."""
    state = _wait_for_state(frames, arms, timeout_s, protocol or BusProtocol())
    return state.start(), state.stamp_s


def _wait_for_state(
    frames: queue.Queue, arms: tuple[Arm, ...], timeout_s: float, protocol: BusProtocol
) -> StartState:
    """The bus until every joint of every mirrored arm replied (``StartState``); the
    joint count and the reply decoding are ``protocol``'s. MirrorInputError after
    ``timeout_s``."""
    st = StartState(
        positions={a: {} for a in arms},
        velocities={a: {} for a in arms},
        statuses={a: {} for a in arms},
        last_frames={a: {} for a in arms},
    )
    n = protocol.joints
    deadline = time.monotonic() + timeout_s
    while any(len(st.positions[a]) < n[a] for a in arms):
        left = deadline - time.monotonic()
        if left <= 0:
            missing = {
                a.value: sorted(set(range(1, n[a] + 1)) - set(s))
                for a, s in st.positions.items()
                if len(s) < n[a]
            }
            raise MirrorInputError(
                "feedback",
                f"none from joints {missing} within {timeout_s} s",
                "feedback from every joint of each mirrored arm (is the robot, or a "
                "rob-twin bank, powered and on these channels, and is a host talking to "
                "drives that only answer?)",
            )
        try:
            arm, msg, _ = frames.get(timeout=min(left, 0.1))
        except queue.Empty:
            continue
        if isinstance(msg, Exception):
            raise msg
        if msg.is_extended_id or msg.is_remote_frame:
            continue
        kind, reply = protocol.classify(arm, msg)
        if kind == COMMAND:
            st.last_frames[arm][msg.arbitration_id] = msg
        elif kind == REPLY and reply is not None:
            st.positions[arm][reply.joint] = reply.position_rad
            if reply.status is not None:
                st.statuses[arm][reply.joint] = reply.status
            if reply.velocity_rad_s is not None:
                st.velocities[arm][reply.joint] = reply.velocity_rad_s
            st.stamp_s = max(st.stamp_s, float(msg.timestamp))
    return st


def status_line(mirror: MirrorTwin, elapsed_s: float, lag_s: float) -> str:
    """One human line: per arm the worst joint now, frames, alarms, lag."""
    parts = [f"mirror {elapsed_s:6.1f} s"]
    for arm, c in mirror.compare.items():
        diff = abs(c.real_rad - c.twin_rad)
        if all(math.isnan(x) for x in diff):
            parts.append(f"{arm.value}: no feedback")
            continue
        k = int(max(range(len(diff)), key=lambda i: -1 if math.isnan(diff[i]) else diff[i]))
        parts.append(f"{arm.value}: |real-twin| {diff[k]:.4f} rad (J{k + 1})")
    parts.append(f"commands {mirror.commands}")
    parts.append(f"alarms {len(mirror.alarms)}")
    parts.append(f"lag {1000 * lag_s:.1f} ms")
    gate = mirror.lag_gate
    if gate is not None:
        now, answering = gate.watch.lag_s, gate.watch.answering
        if now is None or answering is False:
            bank = "bank lag: no answer"
        elif now < 0:  # the bank's physics a step ahead of the wall clock: no lag
            bank = f"bank {-1000 * now:.1f} ms ahead"
        else:
            bank = f"bank lag {1000 * now:.1f} ms"
        parts.append(f"{bank}, {gate.excluded} replies left out")
    return " | ".join(parts)


def run_mirror(
    config: MirrorConfig | None = None,
    parameters: TwinParameters | None = None,
    on_status: Callable[[str], None] | None = None,
    on_alarm: Callable[[Alarm], None] | None = None,
    on_ready: Callable[[str], None] | None = None,
    telemetry: TextIO | None = None,
    on_tick: Callable[[MirrorTwin], None] | None = None,
) -> dict:
    """Mirror the live bus (see the module docstring) and return the summary; ``on_tick`` is
    called with the mirror's twin after every frame or idle wait, from the thread that steps
    it (a 3-D view redraws there: ``rob_twin.twin.viewer.mirror_view``)."""
    cfg = config or default_config()
    with captured_bus_log() as bus_log:
        summary = _run(cfg, parameters, on_status, on_alarm, on_ready, telemetry, on_tick)
    summary["bus_log"] = bus_log.report()
    if telemetry is not None:
        _line(telemetry, {"type": "summary", **summary})
    return summary


def _line(stream: TextIO, obj: dict) -> None:
    stream.write(json.dumps(obj, default=str) + "\n")
    stream.flush()


def _run(cfg, parameters, on_status, on_alarm, on_ready, telemetry, on_tick=None) -> dict:
    arms = tuple(Arm.parse(a) for a in cfg.arms)
    buses: dict[Arm, ListenOnlyBus] = {}
    frames: queue.Queue = queue.Queue()
    stop = threading.Event()
    readers: list[threading.Thread] = []
    mirror: MirrorTwin | None = None
    from rob_twin.models.robot import robot_of

    robot = robot_of(cfg.robot)
    protocol = bus_protocol(robot)
    poller: BankLagPoller | None = None
    if cfg.bank_control_port is not None:  # asked once now: a wrong port is bad input
        host = cfg.host if cfg.interface == "socketcand" else LOCALHOST
        poller = BankLagPoller(cfg.bank_control_port, BankLagWatch(), host)
        poller.check()
    try:
        if poller is not None:
            poller.start()
        for arm in arms:
            buses[arm] = open_listen_only(
                cfg.interface, cfg.channels[arm.value], cfg.host, cfg.port, cfg.connect_timeout_s
            )
        for arm, bus in buses.items():
            t = threading.Thread(
                target=_read_into, args=(bus, arm, frames, stop), name=f"mirror-{arm}", daemon=True
            )
            t.start()
            readers.append(t)
        state = _wait_for_state(frames, arms, cfg.startup_feedback_timeout_s, protocol)
        t_build = time.monotonic()
        start = state.start()
        mirror = MirrorTwin(
            _joint_frame(start, parameters) if protocol.family == "amber" else start,
            state.stamp_s,
            cfg.tolerance_rad,
            parameters,
            cfg.seed,
            protocol=protocol,
            start_velocity=state.start_velocity() if protocol.family == "damiao" else None,
            alarm=cfg.alarm,
            lag_gate=LagGate(poller.watch) if poller is not None else None,
        )
        for arm in arms:  # drives the host enabled before the mirror saw it: as reported
            mirror.prime(arm, state.statuses[arm], state.last_frames[arm])
        build_s = time.monotonic() - t_build
        # frames that queued while the twin was built belong to the twin's first steps
        if on_ready is not None:
            on_ready(
                "mirror: listening (never transmitting) on "
                + ", ".join(f"{cfg.channels[a.value]} ({a.value})" for a in arms)
                + f", robot {robot.name} "
                f"({protocol.family} drives), {_alarm_words(cfg)}, parameters "
                f"{mirror.parameters.name} (simulated twin; hardware_io: false)"
            )
        summary = _follow(
            cfg, mirror, frames, on_status, on_alarm, telemetry, buses, build_s, on_tick, poller
        )
        return {"robot": robot.identity(), **summary}
    finally:
        if poller is not None:
            poller.stop()
        stop.set()
        for t in readers:
            t.join(timeout=1.0)
        for bus in buses.values():
            bus.shutdown()
        if mirror is not None:
            mirror.close()


def _alarm_words(cfg: MirrorConfig) -> str:
    a = cfg.alarm
    if a.kind == "max":
        return f"alarm: one frame beyond {cfg.tolerance_rad:g} rad"
    return (
        f"alarm: RMS over {a.window_s:g} s beyond max({a.factor:g} x the floor of the first "
        f"{a.floor_s:g} s, {a.min_rad:g} rad), or one frame beyond {cfg.tolerance_rad:g} rad"
    )


def _joint_frame(start: dict, parameters: TwinParameters | None) -> dict:
    """Drive-frame start positions -> joint frame, through the drive configs in use."""
    from rob_twin.twin.drives.amber_bank import default_drive_configs

    configs = (parameters.drive_configs if parameters else None) or default_drive_configs()
    return {
        arm: [
            c.sign * q + c.zero_offset_rad
            for c, q in zip(configs[arm] if isinstance(configs, dict) else configs, qs, strict=True)
        ]
        for arm, qs in start.items()
    }


def _follow(
    cfg, mirror, frames, on_status, on_alarm, telemetry, buses, build_s, on_tick=None, poller=None
) -> dict:
    gated = mirror.lag_gate is not None
    t0 = time.monotonic()
    wall0 = time.time()  # frames that arrived before this queued while the twin was built
    next_status = t0 + cfg.status_every_s
    next_sample = t0
    handled = backlog_frames = backlog_alarms = 0
    delays: list[float] = []  # handled minus arrival [s]
    latency_arrival: list[float] = []
    latency_stamp: list[float] = []
    lag = max_lag = 0.0
    ended, error = "seconds", None

    def emit(alarm: Alarm) -> None:
        """Tell an alarm; its latency from the arrival of the frame that shows it."""
        nonlocal backlog_alarms
        if on_alarm is not None:
            on_alarm(alarm)
        if telemetry is not None:
            _line(telemetry, {"type": "alarm", **alarm.record()})
        emitted = time.time()
        arrived = alarm.arrival_s
        if arrived is None or arrived < wall0:  # queued while the twin was built
            backlog_alarms += 1
        else:
            latency_arrival.append(emitted - arrived)
            latency_stamp.append(emitted - alarm.stamp_s)

    while True:
        now = time.monotonic()
        if now - t0 >= cfg.seconds:
            break
        try:
            arm, msg, arrival = frames.get(timeout=min(0.05, max(0.0, cfg.seconds - (now - t0))))
        except queue.Empty:
            arm = None
        if arm is not None:
            if isinstance(msg, Exception):
                ended, error = "bus_lost", f"{arm.value}: {type(msg).__name__}: {msg}"
                break
            mirror.handle(arm, msg, arrival)
            handled += 1
            done = time.time()
            backlog = arrival < wall0
            lag = 0.0 if backlog else done - arrival
            if backlog:
                backlog_frames += 1
            else:
                delays.append(lag)
            max_lag = max(max_lag, lag)
            for alarm in mirror.pop_alarms():  # this frame's (beside a bank: held ones')
                emit(alarm)
            if lag > cfg.max_lag_s:
                ended = "lagging"
                error = (
                    f"the mirror fell {lag:.2f} s behind the bus (limit {cfg.max_lag_s} s): "
                    "the machine is too loaded to mirror live"
                )
                break
        if gated:  # held replies the bank's lag is known for by now (bus clock: Unix)
            mirror.judge_pending(time.time())
            for alarm in mirror.pop_alarms():
                emit(alarm)
        now = time.monotonic()
        if telemetry is not None and now >= next_sample:
            next_sample += 1.0 / cfg.telemetry_hz
            _line(
                telemetry,
                {
                    "type": "sample",
                    "wall_s": round(time.time(), 6),
                    "twin_s": round(mirror.twin.time, 6),
                    "arms": mirror.sample(),
                },
            )
        if on_status is not None and now >= next_status:
            next_status += cfg.status_every_s
            on_status(status_line(mirror, now - t0, lag))
        if on_tick is not None:
            on_tick(mirror)
    if ended == "lagging":
        raise MirrorLagError(error)
    bank_lag = _bank_lag_report(mirror, poller)
    for alarm in mirror.pop_alarms():  # the replies still held: judged now
        emit(alarm)
    send_attempts = sum(b.send_attempts for b in buses.values())
    return {
        "hardware_io": False,
        "evidence_class": "simulated twin beside observed frames",
        "interface": cfg.interface,
        "endpoint": f"{cfg.host}:{cfg.port}" if cfg.interface == "socketcand" else None,
        "channels": {a.value: cfg.channels[a.value] for a in mirror.arms},
        "ended": ended,
        "end_reason": error,
        "seconds": round(time.monotonic() - t0, 3),
        "started_unix_s": round(wall0, 6),
        "twin_build_s": round(build_s, 3),
        "frames_handled": handled,
        "backlog_frames": backlog_frames,
        "send_attempts": send_attempts,
        "handling_delay": percentiles_us(delays),
        "max_handling_delay_s": round(max_lag, 6),
        "alarm_latency_from_arrival": percentiles_us(latency_arrival),
        "backlog_alarms": backlog_alarms,
        "alarm_latency_from_bus_stamp": percentiles_us(latency_stamp),
        "excluded_for_bank_lag_s": bank_lag["excluded_for_bank_lag_s"],
        "bank_lag": bank_lag,
        **mirror.summary(),
    }


def _bank_lag_report(mirror: MirrorTwin, poller: BankLagPoller | None) -> dict:
    """The summary's ``bank_lag``: after one last poll, every held reply judged (the
    ``LagGate`` report, plus the bus time left out after the host's first command [s]), or
    why the bank's lag was not observable."""
    gate = mirror.lag_gate
    if gate is None or poller is None:
        return not_observable(
            "no bank control port given (--bank-control-port): a real bus has no bank to "
            "lag, and beside a rob-twin bank its lag was not watched; every reply was judged"
        )
    poller.stop()
    poller.poll_once()  # the bank's lag up to now: fewer replies judged unknowing
    mirror.judge_pending(time.time(), final=True)
    out = gate.report(mirror.start_stamp_s)
    first, end = mirror.first_command_stamp_s, gate.last_s
    known = first is not None and end is not None
    out["excluded_since_first_command_s"] = (
        round(gate.watch.excluded_s(first, end), 4) if known else None
    )
    return out
