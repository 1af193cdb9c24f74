"""``rob-twin host``: the project's host stack (owners + codec + transport) on a real python-can
interface, for the robot's drive family.

The same drivers as in the lockstep twin, driven by the wall clock at the owners' rate
against drives it did not start: ``rob-twin bank`` over socketcand (default, 127.0.0.1),
SocketCAN, or anything python-can opens. Amber drives (ROB): ``ArmDriver`` /
``CanTransport``. Damiao drives (OpenArm, any robot file with ``drives.family =
"damiao"``): ``DamiaoArmDriver`` / ``DamiaoTransport`` with the bring-up of the in-process
loop (``rob_twin.twin.bus.damiao_host``). A robot without CAN drives is refused
(``MissingCapabilityError`` naming ``can_drives``: exit 2).

Start-up: connect (a bounded TCP check first, so a missing bank is an error in
``connect_timeout_s``, not python-can's 10 s retry), read the arm as it is: Amber drives'
periodic feedback from every joint, or each Damiao drive's state frame asked for with a
register refresh (within ``startup_feedback_timeout_s``); those positions become the owners'
initial commanded state. Damiao drives are then brought up (registers checked, enabled
holding that pose). Before the first sample (and any enable), a ``wave`` is checked on
the robot's own model over the run (``rob_twin.twin.bus.wave_clearance``): where it would
drive a link into the robot, the other arm or the floor (a Damiao bank's limp arms rest
against them), the first clear one of ``WAVE_SCALES`` (mirrored, half, a quarter) is
streamed, and when none is clear the stream is refused, ``WaveBlockedError`` naming the
geoms, the depth and when (exit 2). Then tick every ``1/rate_hz`` s: stream targets
(``wave``: a smooth motion around the start; ``hold``: the start pose; ``home``: the robot
file's home pose, reached along the owner's trajectory and held), ``stop_after_s`` calls
Stop, ``seconds`` ends
the run (Damiao drives are disabled then, ``disable_at_end``). With ``ping_hz`` the host also
sends a ping frame the bank answers at once (a twin-only diagnostic id), to measure
the round trip through the bank process.

A lost bank ends the run: when every driven owner has latched a loss of its bus or of
its feedback (``stale_feedback``, ``uncertain_output``, ``partial_output``: a bank killed,
frozen or unplugged), the host stops at once, within one ``feedback_timeout_s`` of the
loss, and reports ``ended: "bank_lost"`` with the cause per arm (``loss``: the bank stopped
answering, or the connection closed). When every owner latched only because the host itself
wrote a sample later than ``publish_deadline_s`` (a loaded machine), it stops the same way
but reports ``ended: "deadline_missed"``, with how late (``rob_twin.twin.bus.host_loss``).
python-can's own log
lines (a socketcand bus logs a traceback when its socket dies) are kept out of stderr and
counted in the report (``bus_log``).

Report: per arm the owner's mode and fault, samples published, frames sent and
feedback received, the last goal submitted and the measured distance from it
(``goal_error_rad``; a Damiao arm adds its drives' start statuses and its bring-up); a
one-line ``verdict``; tick jitter (actual tick interval minus the period) and ping round
trip as p50/p99/max in microseconds; ``ended`` (``"seconds"``, ``"bank_lost"``,
``"deadline_missed"`` or ``"bring_up_failed"``), ``end_reason``, ``loss`` (per arm: cause,
fault, times in s; None unless the host stopped for a loss) and ``ended_at_s`` [s since
streaming began]; per arm ``start_feedback_rad`` (the arm as its drives reported it at start)
and ``first_command_rad`` (the owner's commanded sample after the stream's first tick:
that report, clipped a hair inside the joint bounds). ``on_ready`` is called once streaming
starts.
"""

from __future__ import annotations

import contextlib
import logging
import math
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import can
import numpy as np
from rob_twin.controllers.arm_driver import ArmDriver
from rob_twin.controllers.clock import MonotonicClock
from rob_twin.controllers.codec import CodecConfig, decode_feedback
from rob_twin.controllers.target import ArmTarget
from rob_twin.controllers.transport import TransportConfig
from rob_twin.models.errors import RobTwinError
from rob_twin.models.names import BUS_MAPPING, DEFAULT_ROBOT, FEEDBACK_IDS, JOINTS_PER_ARM, Arm
from rob_twin.models.robot import CAN_DRIVES, robot_of
from rob_twin.twin.bus.bank_process import PING_ID, PONG_ID
from rob_twin.twin.bus.host_loss import why_stopped
from rob_twin.twin.bus.socketcand import LOCALHOST
from rob_twin.twin.bus.timing import percentiles_us
from rob_twin.twin.drives.amber_robot import bounded_codec, bounded_owner
from rob_twin.twin.sim.closed_loop import twin_owner_config

STREAMS = ("wave", "hold", "home")
BOUND_MARGIN_RAD = 0.002
PING_POLL_S = 0.0005
BUS_LOG_KEPT = 5  # python-can log lines kept (first line of each) in the report
FEEDBACK_DRAIN_FRAMES = 1000  # bound on the frames read after every joint reported


class HostError(RobTwinError):
    """The host cannot reach its drives (no bank, unknown channel, no feedback)."""


class WaveBlockedError(HostError):
    """The wave from where the arms are would drive a link into the robot, the other arm or
    the floor (its own model says so): refused before any drive is enabled (exit 2)."""


class BankConnectionError(HostError, ConnectionError):
    """The host's connection to its bus closed under it (the bank ended, or closed this
    client): one line naming the bus and the system's reason, never a bare OSError. A
    ``ConnectionError`` too, so a transport still reports the frame's fate as uncertain."""


@dataclass(frozen=True)
class HostConfig:
    """interface/host/port: where the drives are (socketcand on 127.0.0.1 by default);
    channels: {arm: channel}; arms: which arms to drive; rate_hz: owner tick rate;
    seconds: run length [s]; stream: 'wave', 'hold' or 'home'; stop_after_s: call Stop then
    (None: never); feedback_timeout_s: owner feedback supervision [s];
    late_tick_periods: owner late-tick threshold (a loaded desktop needs slack);
    ping_hz: round-trip probes per second (0: none); publish_deadline_s: a sample's
    writes (one per joint) must finish within this (a TCP link on a shared desktop is no
    real-time bus: the default is 20 ms, where SocketCAN on a real-time host would use the
    period). Damiao drives only: settle_s: the longest wait for the next reply during the
    bring-up [s] (the transport looks five times per round of requests); drive_timeout_s:
    the drives' CAN watchdog written at bring-up [s] (None: left as the drives have it);
    disable_at_end: disable the drives when the run ends; rest_timeout_s: how long to wait
    for a moving arm to come to rest before enabling its drives [s] (0: do not wait).
    max_velocity_rad_s: the owners' speed limit on every joint [rad/s] (None: the twin's
    owner limits, 1 rad/s)."""

    interface: str = "socketcand"
    host: str = LOCALHOST
    port: int = 29536
    channels: dict = field(default_factory=lambda: {a.value: BUS_MAPPING[a].channel for a in Arm})
    arms: tuple[str, ...] = ("right", "left")
    rate_hz: float = 200.0
    seconds: float = 3.0
    stream: str = "wave"
    stop_after_s: float | None = None
    connect_timeout_s: float = 3.0
    startup_feedback_timeout_s: float = 3.0
    feedback_timeout_s: float = 0.5
    late_tick_periods: float = 10.0
    ping_hz: float = 0.0
    publish_deadline_s: float = 0.02
    robot: str = DEFAULT_ROBOT  # a shipped robot or a robot file with Amber or Damiao drives
    settle_s: float = 0.05
    drive_timeout_s: float | None = 0.25
    disable_at_end: bool = True
    rest_timeout_s: float = 5.0
    max_velocity_rad_s: float | None = None  # every joint's speed limit (None: the twin's 1.0)

    def __post_init__(self) -> None:
        if self.stream not in STREAMS:
            raise HostError(f"stream {self.stream!r} is not one of {STREAMS}")
        if not (self.rate_hz > 0 and self.seconds > 0):
            raise HostError(f"rate_hz {self.rate_hz!r} and seconds {self.seconds!r} must be > 0")
        if self.max_velocity_rad_s is not None and not 0 < self.max_velocity_rad_s <= 10.0:
            raise HostError(
                f"max_velocity_rad_s {self.max_velocity_rad_s!r} is invalid; valid: (0, 10] rad/s"
            )
        if not 0 <= self.rest_timeout_s <= 60.0:
            raise HostError(f"rest_timeout_s {self.rest_timeout_s!r} is invalid; valid: [0, 60] s")
        if not 0 < self.settle_s <= 1.0:
            raise HostError(f"settle_s {self.settle_s!r} is invalid; valid: (0, 1] s")
        if self.drive_timeout_s is not None and not 0 < self.drive_timeout_s <= 60.0:
            raise HostError(
                f"drive_timeout_s {self.drive_timeout_s!r} is invalid; valid: (0, 60] s or None"
            )


def open_bus(cfg: HostConfig, channel: str) -> can.BusABC:
    """The host's python-can bus on ``channel``; HostError (bounded in time) if unreachable."""
    if cfg.interface == "socketcand":
        try:
            socket.create_connection((cfg.host, cfg.port), timeout=cfg.connect_timeout_s).close()
        except OSError as err:
            raise HostError(
                f"no socketcand server (rob-twin bank) at {cfg.host}:{cfg.port}: {err}"
            ) from None
        try:
            return can.Bus(
                interface="socketcand",
                channel=channel,
                host=cfg.host,
                port=cfg.port,
                tcp_tune=True,
                receive_own_messages=False,
            )
        except can.CanError as err:
            raise HostError(
                f"socketcand server {cfg.host}:{cfg.port} refused channel {channel!r}: {err}"
            ) from None
        except OSError as err:  # closed during the handshake (a full or closing server)
            raise BankConnectionError(
                f"socketcand server {cfg.host}:{cfg.port} closed the connection for channel "
                f"{channel!r} during the handshake: {_reason(err)}"
            ) from None
    try:
        return can.Bus(interface=cfg.interface, channel=channel, receive_own_messages=False)
    except (OSError, can.CanError, ImportError, ValueError) as err:
        raise HostError(f"cannot open {cfg.interface} channel {channel!r}: {err}") from None


def wait_for_feedback(
    bus: can.BusABC, timeout_s: float, channel: str, codec: CodecConfig | None = None
) -> np.ndarray:
    """The arm as its drives report it: joint positions [rad] once all seven joints sent
    feedback, each joint's newest (frames already waiting then are read too, at most
    ``FEEDBACK_DRAIN_FRAMES``), decoded with ``codec`` (None: the default codec);
    HostError after ``timeout_s`` [s]. The host's owners start there: their first
    commanded sample is the arm as it is, wherever an earlier host left it."""
    seen: dict[int, float] = {}

    def take(msg: can.Message | None) -> None:
        if msg is not None and msg.arbitration_id in FEEDBACK_IDS and not msg.is_extended_id:
            fb = decode_feedback(msg.arbitration_id, msg.data, codec)
            seen[fb.joint] = fb.position_rad

    deadline = time.monotonic() + timeout_s
    while len(seen) < JOINTS_PER_ARM:
        left = deadline - time.monotonic()
        if left <= 0:
            raise HostError(
                f"no feedback from joints {sorted(set(range(1, 8)) - set(seen))} on "
                f"{channel} within {timeout_s} s: is the bank running and wired?"
            )
        take(bus.recv(timeout=min(left, 0.1)))
    for _ in range(FEEDBACK_DRAIN_FRAMES):  # newer frames already here replace older ones
        msg = bus.recv(timeout=0)
        if msg is None:
            break
        take(msg)
    return np.array([seen[j] for j in range(1, JOINTS_PER_ARM + 1)])


# the waves tried in turn when the full one runs into something: (amplitude factor, sign)
WAVE_SCALES = (1.0, -1.0, 0.5, -0.5, 0.25, -0.25)


def wave_around(
    start: np.ndarray, k: int, lo: np.ndarray, hi: np.ndarray, scale: float = 1.0
) -> Callable[[float], np.ndarray]:
    """A smooth motion of every joint around ``start`` (0.15 rad times ``scale``, 0.3-0.5 Hz;
    a negative scale mirrors it), inside [lo, hi] (as many joints as ``start`` has; seven:
    as it always was)."""
    n = len(start)
    freq = 0.3 + 0.03 * np.arange(n)
    phase = 0.7 * np.arange(n) + k
    shape = np.resize(np.array([1, 1, 1, -1, 1, 0.5, 1]), n) * 0.15 * scale
    return lambda t: np.clip(
        start + shape * (np.sin(2 * math.pi * freq * t + phase) - np.sin(phase)), lo, hi
    )


def clear_wave(
    robot,
    waves: Callable[[float], dict[Arm, Callable[[float], np.ndarray]]],
    seconds: float,
) -> tuple[float, dict[Arm, Callable[[float], np.ndarray]]]:
    """The first of ``WAVE_SCALES`` whose wave (``waves(scale)``: {arm: targets [rad] at t
    [s]}) runs into nothing within ``seconds`` [s] on the robot's own model
    (``rob_twin.twin.bus.wave_clearance``), with its sources; WaveBlockedError naming where
    the full wave runs in when none is clear."""
    from rob_twin.twin.bus.wave_clearance import CONTACT_TOLERANCE_M, first_wave_contact

    model, joints = robot.model(), {a.value: robot.joints(a) for a in Arm}
    first = None
    for scale in WAVE_SCALES:
        sources = waves(scale)
        hit = first_wave_contact(
            model, joints, {a.value: src for a, src in sources.items()}, seconds
        )
        if hit is None:
            return scale, sources
        first = first or hit
    raise WaveBlockedError(
        f"stream wave from where the arms are runs into the robot {robot.name!r} (its own "
        f"model): {first.describe()}, and so does the wave mirrored, at half and at a "
        f"quarter of its size; valid: no pair more than {1000 * CONTACT_TOLERANCE_M:.0f} mm "
        f"deeper than at the start. The wave moves every joint up to 0.3 rad from its start; "
        f"use --stream home or hold, or --seconds under {first.first_s:.2f}"
    )


class BusLog(logging.Handler):
    """Keeps python-can's log records (``can.*``, WARNING and up) out of stderr: counts
    them and keeps the first line of the first ``BUS_LOG_KEPT``."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0
        self.first: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1
        if len(self.first) < BUS_LOG_KEPT:
            try:
                text = record.getMessage()
            except Exception:  # noqa: BLE001 - a log record must never end the host
                text = str(record.msg)
            self.first.append(f"{record.name}: {text.splitlines()[0] if text else ''}")

    def report(self) -> dict:
        return {"records": self.count, "first": list(self.first)}


@contextlib.contextmanager
def captured_bus_log():
    """Route python-can's log (logger ``can``) into a ``BusLog`` for the block."""
    log, handler = logging.getLogger("can"), BusLog()
    propagate = log.propagate
    log.addHandler(handler)
    log.propagate = False
    try:
        yield handler
    finally:
        log.removeHandler(handler)
        log.propagate = propagate


def run_host(cfg: HostConfig, on_ready: Callable[[], None] | None = None) -> dict:
    """Run the host stack (see the module docstring) and return its report."""
    with captured_bus_log() as bus_log:
        report = _run_host(cfg, on_ready)
    report["bus_log"] = bus_log.report()
    return report


def _run_host(cfg: HostConfig, on_ready: Callable[[], None] | None) -> dict:
    arms = [Arm.parse(a) for a in cfg.arms]
    clock = MonotonicClock()
    period = 1.0 / cfg.rate_hz
    owner_cfg = twin_owner_config(period)
    from dataclasses import replace

    owner_cfg = replace(
        owner_cfg,
        feedback_timeout_s=cfg.feedback_timeout_s,
        late_tick_periods=cfg.late_tick_periods,
    )
    if cfg.max_velocity_rad_s is not None:
        owner_cfg = replace(
            owner_cfg, max_velocity=(cfg.max_velocity_rad_s,) * len(owner_cfg.max_velocity)
        )
    robot = robot_of(cfg.robot)
    robot.require(CAN_DRIVES, "rob-twin host (its owners drive Amber and Damiao drives)")
    damiao = robot.family == "damiao"
    owners = {
        arm: (
            owner_cfg.with_bounds(*zip(*robot.joint_ranges(arm), strict=True))
            if damiao
            else bounded_owner(owner_cfg, robot.joint_ranges(arm))
        )
        for arm in arms
    }
    buses: dict[Arm, PongTap] = {}
    drivers: dict[Arm, ArmDriver] = {}
    extras: dict[Arm, dict] = {arm: {} for arm in arms}
    reported: dict[Arm, np.ndarray] = {}  # each arm as its drives reported it at start [rad]
    first_command: dict[Arm, np.ndarray] = {}  # each arm's first published sample [rad]
    ended, end_reason, loss = "seconds", None, None
    try:
        for arm in arms:
            where = f"{cfg.channels[arm.value]} at {cfg.host}:{cfg.port}"
            buses[arm] = PongTap(open_bus(cfg, cfg.channels[arm.value]), where)
        lo = {a: np.array(owners[a].position_lower) + BOUND_MARGIN_RAD for a in arms}
        hi = {a: np.array(owners[a].position_upper) - BOUND_MARGIN_RAD for a in arms}
        # a joint resting on its bound (ROB's home has J7 at -pi/2, its limit) reports a
        # hair beyond it: the owners start from the measured pose clipped inside the bounds
        sources: dict[Arm, Callable[[float], np.ndarray]] = {}
        wave_scale: float | None = None  # the wave streamed (WAVE_SCALES)

        def plan(start: dict[Arm, np.ndarray]) -> None:  # before any drive is enabled
            nonlocal wave_scale

            def of(scale: float = 1.0) -> dict[Arm, Callable[[float], np.ndarray]]:
                return {
                    arm: _source(
                        cfg.stream, start[arm], k, lo[arm], hi[arm], robot.home(arm), scale
                    )
                    for k, arm in enumerate(arms)
                }

            if cfg.stream == "wave":
                wave_scale, chosen = clear_wave(robot, of, cfg.seconds)
                sources.update(chosen)
            else:
                sources.update(of())

        if damiao:
            start = _start_damiao(
                cfg, robot, arms, owners, clock, buses, drivers, extras, lo, hi, reported, plan
            )
        else:
            for arm in arms:  # the drives' own report, not an assumed pose (home)
                reported[arm] = wait_for_feedback(
                    buses[arm],
                    cfg.startup_feedback_timeout_s,
                    cfg.channels[arm.value],
                    bounded_codec(owners[arm]),
                )
            start = {arm: np.clip(reported[arm], lo[arm], hi[arm]) for arm in arms}
            plan(start)
            for arm in arms:
                tcfg = TransportConfig(
                    arm=arm,
                    interface=cfg.interface,
                    channel=cfg.channels[arm.value],
                    publish_deadline_s=cfg.publish_deadline_s,
                    codec=bounded_codec(owners[arm]),
                )
                drivers[arm] = ArmDriver.create(
                    arm, clock, start[arm], owners[arm], tcfg, bus=buses[arm]
                )
        fed_at = clock.now()  # the drives' start-up feedback is this fresh
        leases = {arm: drivers[arm].owner.grant_lease("rob-twin host", 1.0) for arm in arms}
        seq = dict.fromkeys(arms, 0)
        goals = {arm: start[arm] for arm in arms}
        pings: dict[int, float] = {}
        rtt: list[float] = []
        intervals: list[float] = []
        stopped_at = None
        if any(d.owner.fault for d in drivers.values()):  # a failed bring-up: nothing streams
            ended = "bring_up_failed"
            end_reason = "; ".join(
                f"{a.value}: {d.owner.fault_reason}" for a, d in drivers.items() if d.owner.fault
            )
        elif on_ready is not None:
            on_ready()
        t0 = time.monotonic()
        next_tick, last_tick, next_ping, k_ping = t0, None, t0, 0
        while ended == "seconds":
            now = time.monotonic()
            if now - t0 >= cfg.seconds:
                break
            loss = why_stopped(drivers, clock.now(), cfg.publish_deadline_s, fed_at)
            if loss is not None:
                ended, end_reason = loss.ended, loss.reason
                break
            while (
                now < next_tick
            ):  # wait; with pings on, keep reading so a pong is timed on arrival
                if cfg.ping_hz > 0:
                    for drv in drivers.values():
                        drv.transport.poll_feedback()
                    time.sleep(min(PING_POLL_S, max(0.0, next_tick - now)))
                else:
                    time.sleep(next_tick - now)
                now = time.monotonic()
            if last_tick is not None:
                intervals.append(now - last_tick)
            last_tick = now
            next_tick += period
            t = now - t0
            if cfg.stop_after_s is not None and t >= cfg.stop_after_s and stopped_at is None:
                for arm in arms:
                    drivers[arm].owner.stop()
                stopped_at = t
            for arm in arms:
                drv = drivers[arm]
                if stopped_at is None:
                    renewed = drv.owner.authority.renew(leases[arm], 1.0)
                    leases[arm] = renewed or drv.owner.grant_lease("rob-twin host", 1.0)
                    seq[arm] += 1
                    goals[arm] = sources[arm](t)
                    drv.owner.submit(
                        ArmTarget(
                            arm=arm,
                            positions_rad=goals[arm],
                            sequence=seq[arm],
                            generation=drv.owner.generation,
                            lease=leases[arm],
                            joints=len(goals[arm]),  # the arm's own count (5-7 on Damiao)
                        )
                    )
                drv.tick()
                if arm not in first_command and drv.owner.stats.published:
                    first_command[arm] = drv.owner.commanded_state()[0].copy()
            if cfg.ping_hz > 0 and now >= next_ping:
                next_ping += 1.0 / cfg.ping_hz
                k_ping += 1
                pings[k_ping & 0xFFFF] = time.monotonic()
                bus = buses[arms[0]]
                bus.send(
                    can.Message(
                        arbitration_id=PING_ID,
                        is_extended_id=False,
                        data=(k_ping & 0xFFFF).to_bytes(2, "big"),
                    )
                )
        ended_at = time.monotonic() - t0
        rtt = [t - pings[k] for tap in buses.values() for k, t in tap.pongs.items() if k in pings]
        arms_report = {}
        for arm in arms:
            drv = drivers[arm]
            o, tc = drv.owner, drv.transport.counters
            pos = drv.measured_positions()
            goal = goals[arm] if stopped_at is None else o.commanded_state()[0]
            arms_report[arm.value] = {
                "mode": o.mode.value,
                "fault": o.fault.value if o.fault else None,
                "fault_reason": o.fault_reason,
                "samples_published": o.stats.published,
                "frames_sent": tc.frames_sent,
                "feedback_frames": tc.feedback_frames,
                "foreign_command_frames": tc.foreign_command_frames,
                "start_rad": np.round(start[arm], 5).tolist(),
                "start_feedback_rad": _rounded(reported.get(arm)),
                "first_command_rad": _rounded(first_command.get(arm)),
                "measured_rad": None if pos is None else np.round(pos, 5).tolist(),
                "max_travel_rad": None
                if pos is None
                else round(float(np.abs(pos - start[arm]).max()), 5),
                "goal_rad": np.round(goal, 5).tolist(),
                "goal_error_rad": None
                if pos is None
                else round(float(np.abs(pos - goal).max()), 5),
                **extras[arm],
            }
        jitter = [abs(x - period) for x in intervals]
        report = {
            "hardware_io": False,
            "evidence_class": "simulated drives, real processes",
            "robot": robot.identity(),
            "family": robot.family,
            "interface": cfg.interface,
            "endpoint": f"{cfg.host}:{cfg.port}",
            "rate_hz": cfg.rate_hz,
            "seconds": cfg.seconds,
            "stream": cfg.stream,
            # the wave's size and sign (WAVE_SCALES): 1 unless the full wave runs into something
            "wave_scale": wave_scale,
            "stopped_at_s": stopped_at,
            "ended": ended,
            "end_reason": end_reason,
            "loss": None if loss is None else loss.report(),
            "ended_at_s": round(ended_at, 4),
            "ticks": len(intervals) + 1,
            "tick_jitter": percentiles_us(jitter),
            "ping_round_trip": percentiles_us(rtt),
            "pings_sent": len(pings),
            "arms": arms_report,
        }
        report["verdict"] = host_verdict(report)
        return report
    finally:
        if damiao and cfg.disable_at_end and ended != "bank_lost":
            from rob_twin.twin.bus.damiao_host import disable

            disable(drivers)
        for drv in drivers.values():
            drv.close()
        for bus in buses.values():
            # a lost bank reads nothing more: no frames to save by draining
            close_bus(bus, drain_timeout_s=0.0 if ended == "bank_lost" else 2.0)


def _source(
    stream: str,
    start: np.ndarray,
    k: int,
    lo: np.ndarray,
    hi: np.ndarray,
    home: np.ndarray,
    scale: float = 1.0,
) -> Callable[[float], np.ndarray]:
    """The targets of ``stream`` [rad] as a function of time since streaming began [s]
    (``scale``: the wave's, ``wave_around``)."""
    if stream == "wave":
        return wave_around(start, k, lo, hi, scale)
    goal = start if stream == "hold" else np.clip(home, lo, hi)
    return lambda t, q=goal: q


def _start_damiao(
    cfg, robot, arms, owners, clock, buses, drivers, extras, lo, hi, reported, plan
) -> dict:
    """Damiao drives: read each arm's drives as they are (into ``reported`` [rad]), build the
    owners there, ``plan(start)`` (it may refuse the stream: nothing is enabled yet), bring
    the drives up holding that pose (``rob_twin.twin.bus.damiao_host``); the start poses [rad].
    A bring-up that fails latches DRIVE_ERROR on that arm's owner (the caller ends)."""
    from rob_twin.controllers.damiao_errors import DamiaoTransportError
    from rob_twin.twin.bus.damiao_host import (
        DamiaoHostError,
        bring_up,
        bring_up_record,
        damiao_driver,
        read_drive_states,
        status_names,
        transport_config,
    )

    model = robot.model()
    start = {}
    try:
        for arm in arms:
            channel = cfg.channels[arm.value]
            tcfg = transport_config(
                robot,
                arm,
                channel,
                cfg.interface,
                cfg.publish_deadline_s,
                cfg.drive_timeout_s,
            )
            states = read_drive_states(
                buses[arm], tcfg, cfg.startup_feedback_timeout_s, channel, cfg.rest_timeout_s
            )
            reported[arm] = states.positions_rad
            start[arm] = np.clip(states.positions_rad, lo[arm], hi[arm])
            extras[arm]["start_status"] = status_names(states.statuses)
            extras[arm]["cleared_errors"] = list(states.cleared)
            extras[arm]["waited_for_rest_s"] = states.waited_s
            drivers[arm] = damiao_driver(
                robot, arm, tcfg, owners[arm], clock, start[arm], buses[arm], model
            )
    except (DamiaoHostError, DamiaoTransportError) as err:
        raise HostError(str(err)) from None
    plan(start)
    # a settle returns as soon as a reply is there to read (at most settle_s): the
    # transport looks five times per round of requests
    reports = bring_up(drivers, lambda arm: lambda: buses[arm].wait_for_frame(cfg.settle_s))
    for arm, rep in reports.items():
        extras[arm]["bring_up"] = bring_up_record(rep)
    return start


def _rounded(q: np.ndarray | None) -> list[float] | None:
    """Joint positions [rad] for the report (5 decimals: 10 urad, under a codec count)."""
    return None if q is None else np.round(q, 5).tolist()


def host_verdict(report: dict) -> str:
    """One line: did the host drive every arm to its goal without a fault."""
    arms = report["arms"]
    faults = [f"{a} {r['fault']}" for a, r in arms.items() if r["fault"]]
    errors = [r["goal_error_rad"] for r in arms.values() if r["goal_error_rad"] is not None]
    worst = f"{max(errors):.4f} rad" if errors else "unknown (no feedback)"
    what = (
        f"{report['robot']['name']} ({report['family']} drives), {len(arms)} arm(s), "
        f"stream {report['stream']}"
    )
    if report["ended"] != "seconds" or faults:
        why = report["end_reason"] if report["ended"] != "seconds" else ", ".join(faults)
        return f"FAIL: {what}: ended {report['ended']}: {why}"
    return f"PASS: {what}: no owner fault, {worst} from the last goal at the end"


def close_bus(bus: can.BusABC, drain_timeout_s: float = 2.0) -> None:
    """Shut ``bus`` down without losing the frames it sent.

    A TCP socket closed while frames from its peer sit unread in it is reset (RST), not
    closed, and the reset makes the peer's kernel drop what it has received but not yet
    handed to its application: on a loaded machine the last frames a host or a replay
    sent to the bank vanished. For a socketcand bus the sending side is half-closed
    first; the server reads everything, then closes its side, and meanwhile what it
    still sends is read and dropped (at most ``drain_timeout_s`` [s])."""
    inner = bus._inner if isinstance(bus, PongTap) else bus
    sock = getattr(inner, "_SocketCanDaemonBus__socket", None)  # python-can keeps it private
    if isinstance(sock, socket.socket):
        try:
            sock.shutdown(socket.SHUT_WR)
            deadline = time.monotonic() + drain_timeout_s
            while (left := deadline - time.monotonic()) > 0:
                sock.settimeout(min(left, 0.2))
                try:
                    if not sock.recv(65536):
                        break  # the server read everything and closed its side
                except TimeoutError:
                    continue
        except OSError:
            pass  # already closed or reset: nothing more to save
    bus.shutdown()


class PongTap(can.BusABC):
    """The host's bus, noting when each pong arrives (the transport still sees every frame).
    ``wait_for_frame(timeout)`` waits until a frame is there to read, without taking it
    (the next ``recv`` returns it): a bring-up waits for its replies as long as they take."""

    def __init__(self, inner: can.BusABC, where: str = ""):
        self._inner = inner
        self.where = where or str(inner.channel_info)  # the bus, for error messages
        self.pongs: dict[int, float] = {}
        self._held: can.Message | None = None
        super().__init__(channel=inner.channel_info)
        self.channel_info = inner.channel_info

    def _take(self, timeout: float | None) -> can.Message | None:
        msg = self._inner.recv(timeout=timeout)
        if msg is not None and msg.arbitration_id == PONG_ID and len(msg.data) >= 2:
            self.pongs.setdefault(int.from_bytes(bytes(msg.data[:2]), "big"), time.monotonic())
        return msg

    def wait_for_frame(self, timeout: float) -> bool:
        """True once a frame is waiting (at most ``timeout`` [s]); the frame stays unread."""
        if self._held is None:
            self._held = self._take(timeout)
        return self._held is not None

    def _recv_internal(self, timeout: float | None):
        if self._held is not None:
            msg, self._held = self._held, None
            return msg, False
        return self._take(timeout), False

    def send(self, msg: can.Message, timeout: float | None = None) -> None:
        """Send on the inner bus; a connection closed under it is a ``BankConnectionError``
        (one line), a timeout stays a timeout."""
        try:
            self._inner.send(msg, timeout=timeout)
        except TimeoutError:
            raise
        except OSError as err:  # python-can's socketcand bus lets BrokenPipeError through
            raise BankConnectionError(
                f"the connection to bus {self.where} closed while sending id "
                f"0x{msg.arbitration_id:03X}: {_reason(err)}"
            ) from None

    def shutdown(self) -> None:
        self._inner.shutdown()
        super().shutdown()


def _reason(err: OSError) -> str:
    """An OSError as one short line ("Broken pipe (BrokenPipeError)")."""
    text = err.strerror or str(err) or "closed"
    return f"{' '.join(text.split())} ({type(err).__name__})"
