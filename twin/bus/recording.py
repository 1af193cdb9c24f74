"""Record all bus traffic of a run in standard formats, with a sidecar for replay.

``TrafficRecorder(loop, path)`` writes every frame the drives of a ``ClosedLoop``
take from their buses (the host's commands, a second writer's frames) and every
feedback frame they send, through python-can's writers chosen by suffix:
candump ``.log``, Vector ``.asc``, ``.blf`` and ASAM ``.mf4`` (needs ``asammdf``).
Each frame carries its bus number as channel (10 for CAN10, 11 for CAN11). Direction is
the drives' point of view: a frame on one of the drives' reply ids (``reply_ids``: Amber
feedback 0x91..0x97; Damiao state and register replies on the drives' MST ids, 0x11.. and the
gripper's 0x18, as the bank's drives say) was sent by them (``is_rx`` False, ``Tx`` in
candump/ASC), every other frame received (the host's commands, a second writer's frames).

Timestamps ``simulated`` (lockstep): the physics step at which the drives read the
frame (or sent it); with bus timing on that is the first step at or after the end
of the frame (the exact end-of-frame times are in the bus report). ``wall``: Unix
time (``time.time()``) when the frame was seen (real-time runs: the bank's
``--record-can``), the same clock the frames carry on the bank's live bus, so a recording
and ``python -m can.logger`` output share one time base.

A loop with transport delays (a calibration's, ``ClosedLoop.delayed``:
``rob_twin.twin.bus.transport_delay``) is recorded as the host sees its bus, as a recording
of the real robot is: a host frame stamped when the host sent it (``command_delay_s`` before
the drives read it), a reply when the host received it (``feedback_delay_s`` after the drives
sent it); the frames are written in stamp order.

Next to the recording, ``<name>.<suffix>.json`` holds what a replay needs to rebuild
the same twin: seed, physics step, feedback rate, wiring, the drive faults, the
complete initial MuJoCo state (``mj_getState``, integration state, exact floats),
the registers a host wrote to Damiao drives before the recording started
(``drive_registers``: the bring-up's CAN watchdog; only when there are any)
and the frame count (a truncated binary file is detected by it).
"""

from __future__ import annotations

import heapq
import itertools
import json
import time
from pathlib import Path

import can
import mujoco
import numpy as np
from rob_twin.models.errors import RobTwinError
from rob_twin.models.names import FEEDBACK_IDS
from rob_twin.twin.sim.faults import WIRE_FAULTS

EVIDENCE = {
    "hardware_io": False,
    "evidence_class": "simulated",
    "note": "Bus traffic of the rob-twin digital twin; not a recording of a physical arm.",
}

RECORDING_FORMATS = (".log", ".asc", ".blf", ".mf4")
TIMESTAMPS = ("simulated", "wall")
STATE_SPEC = mujoco.mjtState.mjSTATE_INTEGRATION


class RecordingError(RobTwinError, ValueError):
    """A recording that cannot be written or read; names the file and, when known, the line
    (text formats) or frame (binary formats)."""

    def __init__(self, path: Path | str, reason: str, line: int | None = None, unit: str = "line"):
        self.path, self.line = str(path), line
        where = f"{path}" + (f", {unit} {line}" if line is not None else "")
        super().__init__(f"{where}: {reason}")


def check_format(path: Path | str) -> str:
    suffix = Path(path).suffix.lower()
    if suffix not in RECORDING_FORMATS:
        raise RecordingError(
            path,
            f"unknown recording format {suffix or '(none)'!r}; "
            f"valid: {', '.join(RECORDING_FORMATS)}",
        )
    return suffix


def sidecar_path(path: Path | str) -> Path:
    p = Path(path)
    return p.with_name(p.name + ".json")


def bus_number(channel: str) -> int:
    """'CAN10@123.4' -> 10."""
    head = channel.split("@")[0]
    digits = "".join(ch for ch in head if ch.isdigit())
    if not digits:
        raise RecordingError(channel, f"channel {channel!r} carries no bus number (like CAN10)")
    return int(digits)


def reply_ids(bank) -> frozenset[int]:
    """The ids ``bank``'s drives send on: the bank's own ``reply_ids`` (the live Damiao bank),
    else its drives' MST ids (a lockstep Damiao bank), else Amber's feedback ids."""
    ids = getattr(bank, "reply_ids", None)
    if ids is not None:
        return frozenset(ids)
    mst = {
        int(d.mst_id)
        for ad in bank.buses.values()
        for d in getattr(ad, "drives", ())
        if hasattr(d, "mst_id")
    }
    return frozenset(mst) if mst else frozenset(FEEDBACK_IDS)


def drive_registers(bank) -> dict[str, dict[str, dict[str, int | float]]]:
    """{bus number: {joint: {register name: value}}} of the drives of ``bank`` whose
    registers differ from their power-up values now (``DamiaoDrive.written_registers``:
    the CAN watchdog TIMEOUT the host's bring-up wrote, in 50 us counts); empty for drives
    without registers (Amber). A replay's drives start at power-up and the bring-up is
    not in the recording: without these values a replay's drives would, for one, never
    trip their watchdog when the host stops sending."""
    out: dict[str, dict[str, dict[str, int | float]]] = {}
    for ch, ad in bank.buses.items():
        joints = {
            str(d.joint): {r.name: v for r, v in sorted(written.items())}
            for d in getattr(ad, "drives", ())
            if callable(getattr(d, "written_registers", None))
            and (written := d.written_registers())
        }
        if joints:
            out[str(bus_number(ch))] = joints
    return out


class _Tap(can.Listener):
    """What one bus's drives see, copied to the shared writer with the bus number."""

    def __init__(self, recorder: TrafficRecorder, number: int, chained: can.Listener | None):
        self._rec, self._number, self._chained = recorder, number, chained

    def on_message_received(self, msg: can.Message) -> None:
        if self._chained is not None:
            self._chained.on_message_received(msg)
        self._rec.write(msg, self._number)

    def stop(self) -> None:
        if self._chained is not None:
            self._chained.stop()


class TrafficRecorder:
    """Records ``loop``'s traffic to ``path`` (suffix picks the format); ``close()``
    finishes the file and writes the sidecar. Create it before the first step.

    loop: a ``ClosedLoop``, or anything with ``twin``, ``bank``, ``faults``, ``time`` and a
    ``config`` with ``seed`` and ``feedback_rate_hz`` (the real-time bank process)."""

    def __init__(self, loop, path: Path | str, timestamps: str = "simulated"):
        self.path = Path(path)
        self.suffix = check_format(self.path)
        if timestamps not in TIMESTAMPS:
            raise RecordingError(self.path, f"timestamps {timestamps!r} is not one of {TIMESTAMPS}")
        self.timestamps = timestamps
        self.loop = loop
        self.frames = 0
        self.first_timestamp_s: float | None = None
        self.first_frame_sim_s: float | None = None  # simulated time of the first frame
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._writer = can.Logger(str(self.path))
        except ImportError as err:
            raise RecordingError(self.path, f"this format needs a missing package: {err}") from err
        twin = loop.twin
        state = np.zeros(mujoco.mj_stateSize(twin.model, STATE_SPEC))
        mujoco.mj_getState(twin.model, twin.data, state, STATE_SPEC)
        self._meta = {
            **EVIDENCE,
            "format": self.suffix,
            "timestamps": timestamps,
            "seed": loop.config.seed,
            "physics_dt_s": twin.scheduler.dt,
            "start_time_s": twin.time,
            "feedback_rate_hz": loop.config.feedback_rate_hz,
            "bus_timing": bt.label() if (bt := getattr(loop.config, "bus_timing", None)) else None,
            "wiring": {str(bus_number(ch)): ad.arm.value for ch, ad in loop.bank.buses.items()},
            **({"robot": loop.robot.identity()} if getattr(loop, "robot", None) else {}),
            "initial_state": state.tolist(),
        }
        written = drive_registers(loop.bank)
        if written:  # Damiao drives whose registers a host wrote before the recording starts
            self._meta["drive_registers"] = written
        self.reply_ids = reply_ids(loop.bank)
        # {bus number: (command, feedback) delay [s]} of a loop with transport delays
        self._delays = {
            bus_number(loop.channels[arm]): (bus.command_delay_s, bus.feedback_delay_s)
            for arm, bus in (getattr(loop, "delayed", None) or {}).items()
        }
        self._held: list[tuple[float, int, can.Message]] = []  # (stamp, order, frame)
        self._order = itertools.count()
        for ch, ad in loop.bank.buses.items():
            ad.logger = _Tap(self, bus_number(ch), ad.logger)
        self._closed = False

    def write(self, msg: can.Message, number: int) -> None:
        stamp = self.loop.time if self.timestamps == "simulated" else time.time()
        is_rx = msg.arbitration_id not in self.reply_ids
        out = can.Message(
            timestamp=stamp,
            arbitration_id=msg.arbitration_id,
            is_extended_id=msg.is_extended_id,
            is_remote_frame=msg.is_remote_frame,
            is_error_frame=msg.is_error_frame,
            is_fd=msg.is_fd,
            bitrate_switch=msg.bitrate_switch,
            dlc=msg.dlc,
            data=bytes(msg.data),
            channel=number,
            is_rx=is_rx,
        )
        self.frames += 1
        if not self._delays:
            self._emit(stamp, out)
            return
        cmd, fb = self._delays.get(number, (0.0, 0.0))
        heapq.heappush(self._held, (stamp - cmd if is_rx else stamp + fb, next(self._order), out))
        # a later host frame is stamped at least the largest command delay before now
        self._flush(self.loop.time - max(c for c, _ in self._delays.values()))

    def _flush(self, before_s: float) -> None:
        """Write the held frames stamped before ``before_s`` [s], in stamp order."""
        while self._held and self._held[0][0] < before_s:
            stamp, _, out = heapq.heappop(self._held)
            self._emit(stamp, out)

    def _emit(self, stamp: float, out: can.Message) -> None:
        if self.first_timestamp_s is None:
            self.first_timestamp_s = stamp
            self.first_frame_sim_s = stamp if self._delays else self.loop.time
        out.timestamp = stamp
        self._writer.on_message_received(out)

    def close(self) -> Path:
        """Finish the file and write the sidecar; returns the recording's path."""
        if self._closed:
            return self.path
        self._closed = True
        for ad in self.loop.bank.buses.values():
            if isinstance(ad.logger, _Tap):
                ad.logger = ad.logger._chained
        self._flush(float("inf"))
        self._writer.stop()
        meta = {
            **self._meta,
            "frames": self.frames,
            "first_timestamp_s": self.first_timestamp_s,
            "first_frame_sim_s": self.first_frame_sim_s,
            "end_time_s": self.loop.time,
            "drive_faults": [
                _fault_dict(f) for f in self.loop.faults.specs if f.kind not in WIRE_FAULTS
            ],
        }
        sidecar_path(self.path).write_text(json.dumps(meta) + "\n")
        return self.path


def _fault_dict(f) -> dict:
    return {
        "kind": f.kind.value,
        "arm": f.arm.value,
        "at": f.at,
        "duration": f.duration if f.duration != float("inf") else None,
        "joints": list(f.joints),
        **f.params,
    }
