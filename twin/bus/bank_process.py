"""``rob-twin bank``: the simulated drives and MuJoCo in their own process, paced in real time.

The motor bank sits on named in-process buses (``CAN10``, ``CAN11``) exposed by a
socketcand-compatible server (``rob_twin.twin.bus.socketcand``), so a host process the twin did not
start drives it over TCP with python-can's ``socketcand`` interface (or any socketcand
client). With ``interface="socketcan"`` the bank opens real SocketCAN interfaces
(``vcan0`` ...) instead, where Linux has them.

A control channel (JSON lines over TCP, 127.0.0.1) takes commands while it runs::

    {"cmd": "status"}                     -> sim time, drive counters, bus stats, joints
    {"cmd": "fault", "fault": {...}}      -> add a fault (``rob_twin.twin.sim.faults`` JSON; "at" is
                                             relative to now, default 0)
    {"cmd": "clear_faults"}
    {"cmd": "shutdown"}

Pacing: physics runs in chunks of ``steps_per_wake`` steps and sleeps until the wall
clock catches up; a bank more than ``max_lag_s`` behind stops with an error (an
overloaded simulation must not pretend to be real time). The MjData belongs to the
pacing thread; the control thread only queues commands and reads a snapshot.
"""

from __future__ import annotations

import json
import queue
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import can
import numpy as np
from rob_twin.models.errors import RobTwinError
from rob_twin.models.names import BUS_MAPPING, Arm
from rob_twin.twin.bus.socketcand import LOCALHOST, SocketcandServer
from rob_twin.twin.drives.amber_bank import MotorBank
from rob_twin.twin.scenario.schema import parse_fault
from rob_twin.twin.sim.faults import FaultSchedule, FaultSpecError
from rob_twin.twin.sim.twin import Twin, TwinConfig

PING_ID = 0x7E0  # twin-only diagnostic: answered at once on PONG_ID with the same data
PONG_ID = 0x7E8


class BankError(RobTwinError):
    """The bank cannot start or fell too far behind real time."""


@dataclass(frozen=True)
class BankConfig:
    """interface: 'socketcand' (serve over TCP) or 'socketcan' (open Linux interfaces);
    channels: {channel name: arm whose drives are on it}; host/port: socketcand server
    (port 0: any free port); control_port: JSON control channel (0: any free port);
    feedback_rate_hz: drive feedback rate; seconds: stop after this much (None: until
    shutdown); ready_file: where the bound ports are written once serving."""

    interface: str = "socketcand"
    channels: dict = field(default_factory=lambda: {BUS_MAPPING[a].channel: a.value for a in Arm})
    host: str = LOCALHOST
    port: int = 29536
    control_port: int = 0
    feedback_rate_hz: float = 100.0
    seed: int = 0
    seconds: float | None = None
    steps_per_wake: int = 2
    max_lag_s: float = 1.0
    ready_file: str | None = None
    record_path: str | None = None  # record all traffic (wall timestamps) via python-can writers


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
        self.twin = Twin(TwinConfig(seed=cfg.seed))
        self.faults = FaultSchedule()
        wiring = {ch: Arm.parse(a) for ch, a in cfg.channels.items()}
        self.bank = MotorBank(
            self.twin.model, self.twin.data, wiring, self.faults, now=self.twin.time
        )
        self.server: SocketcandServer | None = None
        if cfg.interface == "socketcand":
            self.server = SocketcandServer(list(wiring), cfg.host, cfg.port)
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
        self._commands: queue.Queue = queue.Queue()
        self._snapshot: dict = {}
        self._snap_lock = threading.Lock()
        self._stop = threading.Event()
        self._control: socket.socket | None = None
        self.control_port = cfg.control_port
        self.max_lag_s = 0.0

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
                            timestamp=now,
                        )
                    )
        self.bank.service(now, self.twin.scheduler.dt)

    # ------------------------------------------------------------------ control
    def _open_control(self) -> None:
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind((self.config.host, self.config.control_port))
        srv.listen(4)
        srv.settimeout(0.2)
        self._control = srv
        self.control_port = srv.getsockname()[1]
        threading.Thread(target=self._control_loop, name="bank-control", daemon=True).start()

    def _control_loop(self) -> None:
        assert self._control is not None
        while not self._stop.is_set():
            try:
                conn, _ = self._control.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._control_client, args=(conn,), daemon=True).start()

    def _control_client(self, conn: socket.socket) -> None:
        conn.settimeout(0.5)
        buf = b""
        with conn:
            while not self._stop.is_set():
                try:
                    chunk = conn.recv(4096)
                except TimeoutError:
                    continue
                except OSError:
                    return
                if not chunk:
                    return
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    reply = self._command(line)
                    try:
                        conn.sendall((json.dumps(reply, default=str) + "\n").encode())
                    except OSError:
                        return

    def _command(self, line: bytes) -> dict:
        try:
            cmd = json.loads(line)
            name = cmd["cmd"]
        except (json.JSONDecodeError, KeyError, TypeError):
            return {
                "ok": False,
                "error": f"not a JSON command object with 'cmd': {line[:80]!r}; "
                "valid cmds: status, fault, clear_faults, shutdown",
            }
        if name == "status":
            with self._snap_lock:
                return {"ok": True, **self._snapshot}
        if name == "fault":
            try:
                raw = dict(cmd["fault"])
                at = float(raw.pop("at", 0.0))
                spec = parse_fault({**raw, "at": 0.0})
            except (KeyError, TypeError, ValueError, FaultSpecError) as err:
                return {"ok": False, "error": f"bad fault: {err}"}
            self._commands.put(("fault", spec, at))
            return {"ok": True, "queued": spec.kind.value, "arm": spec.arm.value}
        if name == "clear_faults":
            self._commands.put(("clear", None, 0.0))
            return {"ok": True}
        if name == "shutdown":
            self._stop.set()
            return {"ok": True}
        return {
            "ok": False,
            "error": f"unknown cmd {name!r}; valid: status, fault, clear_faults, shutdown",
        }

    def _apply_commands(self) -> None:
        while True:
            try:
                kind, spec, at = self._commands.get_nowait()
            except queue.Empty:
                return
            if kind == "clear":
                self.faults.clear()
            else:
                from dataclasses import replace

                self.faults.add(replace(spec, at=self.twin.time + max(0.0, at)))

    def _update_snapshot(self, lag_s: float) -> None:
        snap = {
            "sim_time_s": round(self.twin.time, 4),
            "lag_s": round(lag_s, 4),
            "max_lag_s": round(self.max_lag_s, 4),
            "hardware_io": False,
            "faults": [
                {"kind": f.kind.value, "arm": f.arm.value, "at": f.at} for f in self.faults.specs
            ],
            "buses": {
                ch: {
                    "arm": ad.arm.value,
                    **ad.counters.__dict__,
                    "joint_positions_rad": np.round(self.twin.data.qpos[ad.qpos], 5).tolist(),
                }
                for ch, ad in self.bank.buses.items()
            },
        }
        if self.server is not None:
            snap["socketcand"] = self.server.report()
        with self._snap_lock:
            self._snapshot = snap

    @property
    def time(self) -> float:
        """Simulated time [s] (paced to the wall clock)."""
        return self.twin.time

    # ------------------------------------------------------------------ running
    def run(self) -> dict:
        cfg = self.config
        recorder = None
        if cfg.record_path:
            from rob_twin.twin.bus.recording import TrafficRecorder

            recorder = TrafficRecorder(self, cfg.record_path, timestamps="wall")
        if self.server is not None:
            self.server.start()
        self._open_control()
        self._update_snapshot(0.0)
        ready = {
            "socketcand_port": self.server.port if self.server else None,
            "control_port": self.control_port,
            "host": cfg.host,
            "channels": list(cfg.channels),
            "interface": cfg.interface,
        }
        if cfg.ready_file:
            tmp = Path(cfg.ready_file + ".tmp")
            tmp.write_text(json.dumps(ready))
            tmp.replace(cfg.ready_file)
        print(
            f"bank: serving {', '.join(cfg.channels)} on {cfg.interface}"
            + (f" {cfg.host}:{self.server.port}" if self.server else "")
            + f"; control on {cfg.host}:{self.control_port} (simulated; hardware_io: false)",
            file=sys.stderr,
            flush=True,
        )
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
            if recorder is not None:
                recorder.close()
            if self.server is not None:
                self.server.close()
            if self._control is not None:
                self._control.close()
            self.bank.close()
            for bus in self._ping_buses.values():
                bus.shutdown()
        if error:
            raise BankError(error)
        return self._snapshot


def control(port: int, command: dict, host: str = LOCALHOST, timeout_s: float = 5.0) -> dict:
    """Send one command to a running bank's control channel and return its reply."""
    with socket.create_connection((host, port), timeout=timeout_s) as s:
        s.sendall((json.dumps(command) + "\n").encode())
        buf = b""
        deadline = time.monotonic() + timeout_s
        while b"\n" not in buf:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"bank control on {host}:{port} did not answer within {timeout_s} s"
                )
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError(f"bank control on {host}:{port} closed without an answer")
            buf += chunk
    return json.loads(buf.split(b"\n", 1)[0])
