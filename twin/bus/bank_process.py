"""``rob-twin bank``: the simulated drives and MuJoCo in their own process, paced in real time.

The motor bank sits on named in-process buses (the robot file's channels: ``CAN10``/``CAN11``
on ROB, ``can0``/``can1`` on OpenArm) exposed by a socketcand-compatible server
(``rob_twin.twin.bus.socketcand``), so a host process the twin did not start drives it over
TCP with python-can's ``socketcand`` interface (or any socketcand client). With
``interface="socketcan"`` the bank opens real SocketCAN interfaces (``vcan0`` ...) instead,
where Linux has them.

The bank follows the robot's drive family: Amber position drives (ROB) send feedback
periodically and read their commands every physics step (``UnixStampedBank``); Damiao MIT
drives (OpenArm) answer every frame on receipt, in the I/O thread that received it, from the
latest physics snapshot (``rob_twin.twin.drives.damiao_live``: socketcand's responder, or one
receive thread per SocketCAN interface, opened with ``fd=True`` when the robot file's
``drives.bus`` is CAN FD). Each family's reply ids go down to the socketcand server, which
counts a client's frame on them as a foreign reply.

A control channel (JSON lines over TCP, 127.0.0.1) takes commands while it runs::

    {"cmd": "status"}                     -> sim time, drive counters, bus stats, joints
    {"cmd": "fault", "fault": {...}}      -> add a fault (the scenario fault format; "at" is
                                             relative to now [s], default 0)
    {"cmd": "clear_faults"}
    {"cmd": "shutdown"}

Every line is checked completely before anything acts (``rob_twin.twin.bus.bank_control``;
the protocol, its limits and its errors: ``docs/BANK_PROTOCOL.md``); a bad line is answered
``{"ok": false, "error", "field", "valid"}`` on the same connection, which stays open (a
line over the size limit is answered, then its connection closed). Faults that ended are
removed; at most ``MAX_PENDING_FAULTS`` are queued or in force at once.

One clock on the bus: every frame on the bank's buses (drive feedback, a second writer's
frames, pongs, the host's frames) carries Unix time [s] (``time.time()``), as a SocketCAN
kernel stamps frames, so ``python -m can.logger`` and the bank's recordings show host and
drives on one time base; the simulated time is in ``status`` (``sim_time_s``).

Pacing: physics runs in chunks of ``steps_per_wake`` steps and sleeps until the wall
clock catches up; a bank more than ``max_lag_s`` behind stops with an error (an
overloaded simulation must not pretend to be real time). The MjData belongs to the
pacing thread; the control thread only queues commands and reads a snapshot.
"""

from __future__ import annotations

import json
import math
import queue
import socket
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

import can
import numpy as np
from rob_twin.models.errors import RobTwinError
from rob_twin.models.names import DEFAULT_ROBOT, FEEDBACK_IDS, Arm
from rob_twin.models.robot import CAN_DRIVES, robot_of
from rob_twin.twin.bus.bank_control import (
    IDLE_TIMEOUT_S,
    LINE_TIMEOUT_S,
    MAX_CLIENTS,
    MAX_CLIENTS_PER_ADDRESS,
    MAX_LINE_BYTES,
    MAX_PENDING_FAULTS,
    ControlError,
    ControlPlace,
    check_connection_limits,
    connections_full_error,
    control,
    encode_reply,
    evicted_error,
    idle_error,
    parse_control,
    partial_line_error,
    pending_faults_error,
)
from rob_twin.twin.bus.socketcand import LOCALHOST, SocketcandServer
from rob_twin.twin.bus.timing import parse_bus_spec
from rob_twin.twin.drives.amber_bank import MotorBank
from rob_twin.twin.drives.amber_robot import amber_drive_configs, robot_channels
from rob_twin.twin.drives.damiao_live import BusResponder, LiveBankError, LiveDamiaoBank
from rob_twin.twin.sim.faults import FaultSchedule
from rob_twin.twin.sim.twin import Twin, TwinConfig

PING_ID = 0x7E0  # twin-only diagnostic: answered at once on PONG_ID with the same data
PONG_ID = 0x7E8

__all__ = ["BankConfig", "BankError", "BankProcess", "control", "default_config"]


class UnixStampedBank(MotorBank):
    """The motor bank with every frame it sends stamped in Unix time [s] (``time.time()``)
    instead of simulated time: a live bus has one clock, the one SocketCAN and the host
    use. The lockstep twin keeps simulated stamps (deterministic logs)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for ad in self.buses.values():
            ad.bus.preserve_timestamps = False

    def _second_writer_due(self, ad, now: float):
        """As ``MotorBank``'s; the writer's bus (opened on first use) stamps Unix time."""
        spec = super()._second_writer_due(ad, now)
        if spec is not None:
            self._writers[ad.channel].preserve_timestamps = False
        return spec


class BankError(RobTwinError):
    """The bank cannot start or fell too far behind real time."""


@dataclass(frozen=True)
class BankConfig:
    """interface: 'socketcand' (serve over TCP) or 'socketcan' (open Linux interfaces);
    channels: {channel name: arm whose drives are on it} (None: the robot file's channels);
    host/port: socketcand server (port 0: any free port); control_port: JSON control
    channel (0: any free port); feedback_rate_hz: Amber drive feedback rate (Damiao drives
    answer each frame instead); seconds: stop after this much (None: until shutdown);
    ready_file: where the bound ports are written once serving."""

    interface: str = "socketcand"
    channels: dict | None = None
    host: str = LOCALHOST
    port: int = 29536
    control_port: int = 0
    feedback_rate_hz: float = 100.0
    seed: int = 0
    seconds: float | None = None
    steps_per_wake: int = 2
    max_lag_s: float = 1.0
    ready_file: str | None = None
    record_path: str | None = None  # record all traffic (Unix-time stamps) via python-can writers
    robot: str = DEFAULT_ROBOT  # a shipped robot or a robot file with Amber or Damiao drives
    # a rob_twin.twin.calibration Calibration: model and drives take its fitted parameters
    # (its transport delays are not applied: a live bus has its own)
    calibration: object | None = None
    # control connections: closed after this long without a complete line, or with a
    # line unfinished this long after its first byte [s]
    control_idle_timeout_s: float = IDLE_TIMEOUT_S
    control_line_timeout_s: float = LINE_TIMEOUT_S
    # control connections at once, in all and from one source address (more are answered
    # why and closed); ``bank_control.check_connection_limits`` says what is valid
    control_max_clients: int = MAX_CLIENTS
    control_max_clients_per_address: int = MAX_CLIENTS_PER_ADDRESS

    def __post_init__(self) -> None:
        check_connection_limits(
            self.control_max_clients,
            self.control_max_clients_per_address,
            self.control_idle_timeout_s,
            self.control_line_timeout_s,
        )


def default_config() -> BankConfig:
    return BankConfig()


class BankProcess:
    """The real-time bank; ``run()`` blocks until shutdown, ``seconds`` or an error."""

    def __init__(self, config: BankConfig | None = None):
        self.config = cfg = config or default_config()
        if cfg.interface not in ("socketcand", "socketcan"):
            raise BankError(
                f"bank interface {cfg.interface!r} is not one of 'socketcand', 'socketcan'"
            )
        self.robot = robot_of(cfg.robot)
        self.robot.require(CAN_DRIVES, "rob-twin bank (its process serves Amber and Damiao drives)")
        channels = cfg.channels
        if channels is None:
            channels = {ch: arm for arm, ch in robot_channels(self.robot).items()}
        self.wiring = {ch: Arm.parse(a) for ch, a in channels.items()}
        self.server: SocketcandServer | None = None
        self._responders: dict[str, BusResponder] = {}
        self._commands: queue.Queue = queue.Queue()
        self._fault_lock = threading.Lock()
        self._faults_pending = 0  # queued + in the schedule, under _fault_lock
        self._next_fault_end = math.inf  # earliest end [s, simulated] of a fault in force
        self._fault_list: list[dict] = []  # the status view of the schedule
        self._places: dict[int, ControlPlace] = {}  # open control connections, under _fault_lock
        self._snapshot: dict = {}
        self._snap_lock = threading.Lock()
        self._stop = threading.Event()
        self._control: socket.socket | None = None
        self.control_port = cfg.control_port
        self.max_lag_s = 0.0
        self.faults = FaultSchedule()
        if self.robot.family == "damiao":
            self._init_damiao()
        else:
            self._init_amber()

    def _init_amber(self) -> None:
        """Amber drives: periodic feedback, commands read every physics step (as before)."""
        cfg = self.config
        self.fd = False
        model, drives = self.robot.model(), amber_drive_configs(self.robot)
        if cfg.calibration is not None:
            from rob_twin.twin.calibration.apply import calibrated_drives, calibrated_model

            model = calibrated_model(cfg.calibration, model)
            drives = calibrated_drives(cfg.calibration, self.robot)
        self.twin = Twin(TwinConfig(seed=cfg.seed), model=model)
        self._calibration_label = (
            cfg.calibration.label() if cfg.calibration is not None else "uncalibrated"
        )
        wiring = self.wiring
        self.bank = UnixStampedBank(
            self.twin.model, self.twin.data, wiring, self.faults, drives, now=self.twin.time
        )
        if cfg.interface == "socketcand":
            self.server = SocketcandServer(
                list(wiring), cfg.host, cfg.port, reply_ids=FEEDBACK_IDS, bus=self._bus_timing()
            )
        else:
            for ch, ad in self.bank.buses.items():  # the bank's drives on the real interface
                ad.bus.shutdown()
                try:
                    ad.bus = can.Bus(interface="socketcan", channel=ch, receive_own_messages=False)
                except (OSError, can.CanError, ImportError) as err:
                    raise BankError(f"cannot open SocketCAN interface {ch!r}: {err}") from None
        sched = self.twin.scheduler
        self._ping_buses = (
            {
                ch: can.Bus(interface="virtual", channel=ch, receive_own_messages=False)
                for ch in self.bank.buses
            }
            if cfg.interface == "socketcand"
            else {}
        )
        sched.add("bus", 1.0 / sched.dt, self._service)
        sched.add("feedback", cfg.feedback_rate_hz, self.bank.emit_feedback)

    def _init_damiao(self) -> None:
        """Damiao drives: every frame answered on receipt in the I/O thread (module doc)."""
        cfg = self.config
        timing = parse_bus_spec(self.robot.bus_spec) if self.robot.bus_spec else None
        self.fd = timing is not None and timing.frame_format == "fd"
        model = self.robot.model()
        if cfg.calibration is not None:  # its model side here, its drive side in the bank
            from rob_twin.twin.calibration.apply import calibrated_model

            model = calibrated_model(cfg.calibration, model)
        self.twin = Twin(TwinConfig(seed=cfg.seed), model=model)
        self._calibration_label = (
            cfg.calibration.label() if cfg.calibration is not None else "uncalibrated"
        )
        try:
            self.bank = LiveDamiaoBank(
                self.robot,
                self.twin.model,
                self.twin.data,
                self.wiring,
                self.faults,
                fd=self.fd,
                now=self.twin.time,
                values=cfg.calibration.values if cfg.calibration is not None else None,
            )
        except LiveBankError as err:
            raise BankError(str(err)) from None
        self._ping_buses = {}  # the responder answers pings at once
        if cfg.interface == "socketcand":
            self.server = server = SocketcandServer(
                list(self.wiring),
                cfg.host,
                cfg.port,
                reply_ids=self.bank.reply_ids,
                responder=self._respond,
                bus=timing,  # each client's frames at most at this bus's line rate
            )
            for ch in self.wiring:
                self.bank.attach(ch, lambda frames, ch=ch: server.inject(ch, frames))
        else:
            for ch in self.wiring:
                try:
                    bus = can.Bus(
                        interface="socketcan", channel=ch, fd=self.fd, receive_own_messages=False
                    )
                except (OSError, can.CanError, ImportError) as err:
                    for r in self._responders.values():
                        r.close()
                    raise BankError(f"cannot open SocketCAN interface {ch!r}: {err}") from None
                self._responders[ch] = BusResponder(bus, ch, self._respond)
                self.bank.attach(ch, self._responders[ch].send)
        sched = self.twin.scheduler
        sched.add("bus", 1.0 / sched.dt, lambda now: self.bank.service(now, sched.dt))

    def _bus_timing(self):
        """The robot file's bus (None: classic CAN at 1 Mbit/s): the line rate the socketcand
        server holds each client to."""
        return parse_bus_spec(self.robot.bus_spec) if self.robot.bus_spec else None

    def _respond(self, channel: str, msg: can.Message) -> list[can.Message]:
        """A Damiao bank's answer to one received frame (I/O thread): a pong at once, or the
        drives' replies."""
        if msg.arbitration_id == PING_ID and not msg.is_extended_id:
            return [
                can.Message(
                    arbitration_id=PONG_ID,
                    data=bytes(msg.data),
                    is_extended_id=False,
                    timestamp=time.time(),
                )
            ]
        return self.bank.respond(channel, msg)

    def _service(self, now: float) -> None:
        """Answer pings (a twin-only diagnostic) and service the drives, every physics step."""
        for bus in self._ping_buses.values():
            while (msg := bus.recv(timeout=0)) is not None:
                if msg.arbitration_id == PING_ID and not msg.is_extended_id:
                    bus.send(
                        can.Message(
                            arbitration_id=PONG_ID,
                            data=bytes(msg.data),
                            is_extended_id=False,
                            timestamp=time.time(),
                        )
                    )
        self.bank.service(now, self.twin.scheduler.dt)

    # ------------------------------------------------------------------ control
    def _open_control(self) -> None:
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind((self.config.host, self.config.control_port))
        srv.listen(64)  # a burst of connections is answered, not left to the kernel's SYN retries
        srv.settimeout(0.2)
        self._control = srv
        self.control_port = srv.getsockname()[1]
        threading.Thread(target=self._control_loop, name="bank-control", daemon=True).start()

    def _control_loop(self) -> None:
        assert self._control is not None
        while not self._stop.is_set():
            try:
                conn, peer = self._control.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            place = ControlPlace(conn, str(peer[0]), time.monotonic())
            err = self._take_place(place)
            if err is not None:
                self._refuse_and_close(conn, err)
                continue
            threading.Thread(target=self._control_client, args=(place,), daemon=True).start()

    def _take_place(self, place: ControlPlace) -> ControlError | None:
        """Count a new control connection. Where all ``control_max_clients`` places, or its
        address's ``control_max_clients_per_address``, are taken, the connection that sent
        no command for the longest (of all, or of that address) is closed to make room,
        answered why (``evicted_error``): no set of connections, idle or talking, keeps a
        new client out. Refused (the limit named) only while every place is already being
        freed for another."""
        total, per = self.config.control_max_clients, self.config.control_max_clients_per_address
        with self._fault_lock:
            open_now = [p for p in self._places.values() if p.evicted is None]
            mine = [p for p in open_now if p.address == place.address]
            if len(mine) >= per:
                pool, limit = mine, f"at most {per} at once from one address ({total} in all)"
            elif len(open_now) >= total:
                pool, limit = open_now, f"at most {total} at once"
            else:
                pool, limit = [], ""
            if pool:
                victim = min(pool, key=lambda p: p.last_command_s)
                victim.evicted = evicted_error(
                    len(open_now), limit, place.last_command_s - victim.last_command_s
                )
                victim.wake()
            elif len(self._places) >= total + per:  # every place is being freed already
                return connections_full_error(len(self._places), total)
            self._places[id(place)] = place
        return None

    def _leave_place(self, place: ControlPlace) -> None:
        with self._fault_lock:
            self._places.pop(id(place), None)

    @staticmethod
    def _refuse_and_close(conn: socket.socket, err: ControlError) -> None:
        try:
            conn.settimeout(0.5)
            conn.sendall(encode_reply(err.reply()))
            conn.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        conn.close()

    def _control_client(self, place: ControlPlace) -> None:
        """Serve one connection: one reply line per command line; a line over
        ``MAX_LINE_BYTES`` is answered and the connection closed (framing is lost), and so
        is a connection idle for ``control_idle_timeout_s``, with a line unfinished
        ``control_line_timeout_s`` after its first byte, or closed to make room
        (``_take_place``)."""
        try:
            self._serve_lines(place)
        finally:
            self._leave_place(place)

    def _serve_lines(self, place: ControlPlace) -> None:
        conn = place.conn
        idle_s = self.config.control_idle_timeout_s
        line_s = self.config.control_line_timeout_s
        buf = b""
        last_line = time.monotonic()  # connected, or the last complete line
        partial_since: float | None = None  # first byte of the unfinished line
        with conn:
            while not self._stop.is_set():
                now = time.monotonic()
                if place.evicted is not None:
                    self._refuse_and_close(conn, place.evicted)
                    return
                if partial_since is not None and now - partial_since >= line_s:
                    self._refuse_and_close(
                        conn, partial_line_error(len(buf), now - partial_since, line_s)
                    )
                    return
                if now - last_line >= idle_s:
                    self._refuse_and_close(conn, idle_error(now - last_line, idle_s))
                    return
                due = last_line + idle_s
                if partial_since is not None:
                    due = min(due, partial_since + line_s)
                conn.settimeout(max(0.01, min(0.5, due - now)))
                try:
                    chunk = conn.recv(4096)
                except TimeoutError:
                    continue
                except OSError:
                    return
                if not chunk:
                    if place.evicted is not None:  # woken to make room: say why
                        self._refuse_and_close(conn, place.evicted)
                    return
                if not buf:
                    partial_since = time.monotonic()
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    last_line = place.last_command_s = time.monotonic()
                    partial_since = last_line if buf else None
                    try:
                        conn.sendall(encode_reply(self._command(line)))
                    except OSError:
                        return
                if len(buf) > MAX_LINE_BYTES:
                    err = ControlError(
                        "line",
                        f"{len(buf)} bytes without a newline",
                        f"<= {MAX_LINE_BYTES} bytes per line, ending in \\n",
                    )
                    self._refuse_and_close(conn, err)
                    return

    def _command(self, line: bytes) -> dict:
        """Check one line completely, then act; a ControlError is the reply, never raised."""
        try:
            cmd = parse_control(line)
        except ControlError as err:
            return err.reply()
        if cmd.cmd == "status":
            with self._snap_lock:
                return {"ok": True, **self._snapshot}
        if cmd.cmd == "fault":
            spec = cmd.fault
            with self._fault_lock:
                if self._faults_pending >= MAX_PENDING_FAULTS:
                    return pending_faults_error(self._faults_pending).reply()
                self._faults_pending += 1
                self._commands.put(("fault", spec))
            return {"ok": True, "queued": spec.kind.value, "arm": spec.arm.value}
        if cmd.cmd == "clear_faults":
            with self._fault_lock:
                self._faults_pending = 0  # what is queued before the clear goes with it
                self._commands.put(("clear", None))
            return {"ok": True}
        self._stop.set()  # shutdown
        return {"ok": True}

    def _apply_commands(self) -> None:
        """Apply queued commands, drop faults that ended, recount the pending ones."""
        now = self.twin.time
        changed = False
        with self._fault_lock:
            while True:
                try:
                    kind, spec = self._commands.get_nowait()
                except queue.Empty:
                    break
                changed = True
                if kind == "clear":
                    self.faults.clear()
                else:  # checked in full by parse_control; "at" is relative to now
                    self.faults.add(replace(spec, at=now + spec.at))
            if now >= self._next_fault_end:
                live = [f for f in self.faults.specs if f.end > now]
                self.faults.clear()
                for f in live:
                    self.faults.add(f)
                changed = True
            if changed:
                specs = self.faults.specs
                self._faults_pending = len(specs)
                self._next_fault_end = min((f.end for f in specs), default=math.inf)
                self._fault_list = [
                    {
                        "kind": f.kind.value,
                        "arm": f.arm.value,
                        "at": round(f.at, 4),
                        "end": None if math.isinf(f.end) else round(f.end, 4),
                    }
                    for f in specs
                ]

    def _update_snapshot(self, lag_s: float) -> None:
        snap = {
            "sim_time_s": round(self.twin.time, 4),
            "lag_s": round(lag_s, 4),
            "max_lag_s": round(self.max_lag_s, 4),
            "hardware_io": False,
            "calibration": self._calibration_label,
            "robot": self.robot.identity(),
            "faults": self._fault_list,
            "buses": {
                ch: {
                    "arm": ad.arm.value,
                    **ad.counters.__dict__,
                    "joint_positions_rad": np.round(self.twin.data.qpos[ad.qpos], 5).tolist(),
                    **self._bus_extras(ad),
                }
                for ch, ad in self.bank.buses.items()
            },
        }
        if self.server is not None:
            snap["socketcand"] = self.server.report()
        if self._responders:
            snap["socketcan"] = {ch: r.report() for ch, r in self._responders.items()}
        with self._snap_lock:
            self._snapshot = snap

    def _bus_extras(self, ad) -> dict:
        """A Damiao bus's per-drive view (ids, status, mode, torque, position) and its FD
        flag; nothing for Amber (its status is as it always was)."""
        if not isinstance(self.bank, LiveDamiaoBank):
            return {}
        return {"fd": self.fd, **self.bank.bus_status(ad)}

    @property
    def time(self) -> float:
        """Simulated time [s] (paced to the wall clock)."""
        return self.twin.time

    def banner(self) -> str:
        """The one stderr line ``run`` prints once serving: robot, drive family, channels
        and arms, the interface and ports."""
        cfg = self.config
        wire = "CAN FD" if self.fd else "classic CAN"
        if self.fd and cfg.interface == "socketcand":
            wire += " served as classic frames: socketcand has no FD"
        return (
            f"bank: ready: robot {self.robot.name} ({self.robot.family} drives, {wire}) on "
            + ", ".join(f"{ch} ({arm.value})" for ch, arm in self.wiring.items())
            + f" via {cfg.interface}"
            + (f" {cfg.host}:{self.server.port}" if self.server else "")
            + f"; control on {cfg.host}:{self.control_port} (simulated; hardware_io: false)"
        )

    # ------------------------------------------------------------------ running
    def run(self) -> dict:
        cfg = self.config
        recorder = None
        if cfg.record_path:
            from rob_twin.twin.bus.recording import TrafficRecorder

            recorder = TrafficRecorder(self, cfg.record_path, timestamps="wall")
        if self.server is not None:
            self.server.start()
        for responder in self._responders.values():
            responder.start()
        self._open_control()
        self._update_snapshot(0.0)
        ready = {
            "socketcand_port": self.server.port if self.server else None,
            "control_port": self.control_port,
            "host": cfg.host,
            "channels": list(self.wiring),
            "interface": cfg.interface,
            "robot": self.robot.name,
            "family": self.robot.family,
            "fd": self.fd,
        }
        if cfg.ready_file:
            tmp = Path(cfg.ready_file + ".tmp")
            tmp.write_text(json.dumps(ready))
            tmp.replace(cfg.ready_file)
        print(self.banner(), file=sys.stderr, flush=True)
        wall0, sim0 = time.perf_counter(), self.twin.time
        error = None
        try:
            while not self._stop.is_set():
                if cfg.seconds is not None and self.twin.time - sim0 >= cfg.seconds:
                    break
                self._apply_commands()
                self.twin.step(cfg.steps_per_wake)
                lag = (time.perf_counter() - wall0) - (self.twin.time - sim0)
                self.max_lag_s = max(self.max_lag_s, lag)
                if lag > cfg.max_lag_s:
                    error = (
                        f"the bank fell {lag:.2f} s behind real time (limit {cfg.max_lag_s} s): "
                        "the machine is too loaded to pace the simulation"
                    )
                    break
                self._update_snapshot(lag)
                if lag < 0:
                    time.sleep(-lag)
        finally:
            self._stop.set()
            if self.server is not None:  # no frame reaches the bank (or its recorder) after
                self.server.close()
            for responder in self._responders.values():
                responder.close()
            if recorder is not None:
                recorder.close()
            if self._control is not None:
                self._control.close()
            self.bank.close()
            for bus in self._ping_buses.values():
                bus.shutdown()
        if error:
            raise BankError(error)
        return self._snapshot
