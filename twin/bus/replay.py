"""Read a bus recording completely and strictly, then feed it to a fresh lockstep twin.

``read_recording(path)`` reads all frames of a ``.log``, ``.asc``, ``.blf`` or ``.mf4``
file (python-can's readers) before anything is driven. A malformed recording is a
``RecordingError`` naming the file and the line (text formats) or frame (binary):
a line that does not parse, a truncated last line (no line end: the writer was cut
off), time going backwards, fewer frames than the sidecar says were written, an
unknown format.

``replay(recording)`` rebuilds the recorded twin from the sidecar (seed, wiring, drive
faults, the exact initial MuJoCo state; ROB's defaults when there is none), puts
no owners on the buses and instead hands every recorded frame that is not drive
feedback to the drives at the physics step of its timestamp, exactly as the host's
frames reached them in the run. A lockstep recording therefore reproduces the run's
joint trajectory bit for bit; the replayed drives' feedback frames are compared
with the recorded ones (``feedback_mismatches``).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import can
import mujoco
import numpy as np
from rob_twin.models.names import BUS_MAPPING, FEEDBACK_IDS, Arm
from rob_twin.twin.bus.recording import STATE_SPEC, RecordingError, check_format, sidecar_path
from rob_twin.twin.bus.wire import open_virtual
from rob_twin.twin.drives.amber_bank import MotorBank
from rob_twin.twin.scenario.schema import parse_fault
from rob_twin.twin.sim.faults import FaultSchedule
from rob_twin.twin.sim.twin import Twin, TwinConfig

_READERS = {
    ".log": can.CanutilsLogReader,
    ".asc": can.ASCReader,
    ".blf": can.BLFReader,
    ".mf4": can.MF4Reader,
}


@dataclass(frozen=True)
class RecordedFrame:
    timestamp_s: float
    bus: int  # 10 for CAN10
    arbitration_id: int
    data: bytes
    is_extended_id: bool = False


@dataclass
class Recording:
    path: Path
    frames: list[RecordedFrame]
    meta: dict = field(default_factory=dict)  # the sidecar ({} when there is none)


class _CountingLines:
    """A text file that knows which line its reader is on and whether it ended cleanly."""

    def __init__(self, f):
        self._f = f
        self.line = 0
        self.complete = True

    def __iter__(self):
        for text in self._f:
            self.line += 1
            self.complete = text.endswith("\n")
            yield text

    def __next__(self):
        text = next(self._f)
        self.line += 1
        self.complete = text.endswith("\n")
        return text

    def readline(self):
        text = self._f.readline()
        if text:
            self.line += 1
            self.complete = text.endswith("\n")
        return text

    def close(self) -> None:
        self._f.close()


def _channel_number(channel, path: Path, where: int, unit: str) -> int:
    if isinstance(channel, int):
        return channel
    digits = "".join(ch for ch in str(channel) if ch.isdigit())
    if not digits:
        raise RecordingError(path, f"channel {channel!r} carries no bus number", where, unit)
    return int(digits)


def read_recording(path: Path | str) -> Recording:
    """All frames of ``path``, checked; RecordingError at the first defect (nothing partial)."""
    path = Path(path)
    suffix = check_format(path)
    if not path.is_file():
        raise RecordingError(path, "no such recording file")
    side = sidecar_path(path)
    try:
        meta = json.loads(side.read_text()) if side.is_file() else {}
    except json.JSONDecodeError as err:
        raise RecordingError(side, f"sidecar is not JSON: {err.msg}", err.lineno) from None
    text = suffix in (".log", ".asc")
    unit = "line" if text else "frame"
    frames: list[RecordedFrame] = []
    counter = _CountingLines(path.open("r", encoding="utf-8", errors="strict")) if text else None
    last = -math.inf
    try:
        reader = _READERS[suffix](counter if text else str(path))
        for k, msg in enumerate(reader, 1):
            where = counter.line if text else k
            if text and not counter.complete:
                raise RecordingError(
                    path, "truncated line (the file ends without a line end)", where, unit
                )
            if msg.is_error_frame:
                continue
            t = float(msg.timestamp)
            if not math.isfinite(t):
                raise RecordingError(path, f"timestamp {t!r} is not finite", where, unit)
            if t < last:
                raise RecordingError(
                    path, f"time goes backwards: {t:.6f} s after {last:.6f} s", where, unit
                )
            last = t
            frames.append(
                RecordedFrame(
                    t,
                    _channel_number(msg.channel, path, where, unit),
                    msg.arbitration_id,
                    bytes(msg.data),
                    msg.is_extended_id,
                )
            )
    except RecordingError:
        raise
    except Exception as err:  # a reader's parse error: say where it stopped
        where = counter.line if text else len(frames) + 1
        raise RecordingError(
            path, f"malformed record ({type(err).__name__}: {err})", where, unit
        ) from None
    finally:
        if counter is not None:
            counter.close()
    expected = meta.get("frames")
    if expected is not None and expected != len(frames):
        raise RecordingError(
            path,
            f"truncated: {len(frames)} frames read, the sidecar says {expected} were written",
            len(frames) + 1,
            unit,
        )
    return Recording(path, frames, meta)


@dataclass(kw_only=True)
class ReplayResult:
    frames_fed: int
    feedback_frames: int
    feedback_mismatches: int
    simulated_s: float
    wall_s: float
    times: np.ndarray  # [s] simulated, at every ``sample_every_s``
    qpos: np.ndarray  # joint positions of the whole model at those instants
    read_s: float = 0.0
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        return {
            "frames_fed": self.frames_fed,
            "feedback_frames": self.feedback_frames,
            "feedback_mismatches": self.feedback_mismatches,
            "simulated_s": round(self.simulated_s, 6),
            "wall_s": round(self.wall_s, 3),
            "read_s": round(self.read_s, 3),
            "frames_per_s": round(self.frames_fed / max(self.wall_s + self.read_s, 1e-9), 1),
            "notes": self.notes,
        }


def replay(
    recording: Recording | Path | str,
    seconds: float | None = None,
    sample_every_s: float = 0.01,
    on_progress: Callable[[float], None] | None = None,
) -> ReplayResult:
    """Feed ``recording`` into a fresh lockstep twin (see the module docstring)."""
    t_read = time.perf_counter()
    rec = recording if isinstance(recording, Recording) else read_recording(recording)
    read_s = time.perf_counter() - t_read if not isinstance(recording, Recording) else 0.0
    meta, notes = rec.meta, []
    if not meta:
        notes.append(
            "no sidecar: ROB's default twin (seed 0, home pose, CAN10 right / CAN11 left, "
            "20 Hz feedback); a run that started elsewhere will not be reproduced"
        )
    if meta.get("timestamps") == "wall":
        notes.append(
            "wall-clock recording (a real-time run): frames reach the drives at the "
            "nearest physics step, so the replay is close to the run, not bit-exact, and "
            "feedback frames may differ"
        )
    twin = Twin(TwinConfig(seed=int(meta.get("seed", 0))))
    if "initial_state" in meta:
        state = np.array(meta["initial_state"], dtype=float)
        if state.size != mujoco.mj_stateSize(twin.model, STATE_SPEC):
            raise RecordingError(
                sidecar_path(rec.path),
                f"initial_state does not fit this model ({state.size} values)",
            )
        mujoco.mj_setState(twin.model, twin.data, state, STATE_SPEC)
        mujoco.mj_forward(twin.model, twin.data)
    dt = twin.scheduler.dt
    if abs(float(meta.get("physics_dt_s", dt)) - dt) > 1e-15:
        raise RecordingError(
            sidecar_path(rec.path),
            f"physics_dt_s {meta['physics_dt_s']!r} differs from this model's {dt!r} s",
        )
    wiring_meta = meta.get("wiring") or {str(bus_no(BUS_MAPPING[a].channel)): a.value for a in Arm}
    run = f"replay{id(rec)}"
    channels = {int(n): f"CAN{n}@{run}" for n in wiring_meta}
    faults = FaultSchedule(
        [
            parse_fault({k: v for k, v in f.items() if v is not None})
            for f in meta.get("drive_faults", [])
        ]
    )
    start_s = float(meta.get("start_time_s", 0.0))
    twin.scheduler.step_count = int(round(start_s / dt))
    bank = MotorBank(
        twin.model,
        twin.data,
        {channels[n]: Arm.parse(a) for n, a in ((int(k), v) for k, v in wiring_meta.items())},
        faults,
        now=twin.time,
    )
    host = {n: open_virtual(ch) for n, ch in channels.items()}
    shift = 0.0
    if meta.get("first_frame_sim_s") is not None and rec.frames:  # wall or relative stamps
        shift = float(meta["first_frame_sim_s"]) - rec.frames[0].timestamp_s
    feed = [f for f in rec.frames if f.arbitration_id not in FEEDBACK_IDS]
    expected_fb = {
        n: [
            (f.arbitration_id, f.data)
            for f in rec.frames
            if f.arbitration_id in FEEDBACK_IDS and f.bus == n
        ]
        for n in channels
    }
    unknown = {f.bus for f in rec.frames} - set(channels)
    if unknown:
        raise RecordingError(
            rec.path,
            f"frames on bus(es) {sorted(unknown)} that the wiring {sorted(channels)} does not have",
        )
    steps = [int(round((f.timestamp_s + shift) / dt)) for f in feed]
    state = {"i": 0, "fed": 0}

    def bus_task(now: float) -> None:
        k = twin.scheduler.step_count
        i = state["i"]
        while i < len(feed) and steps[i] <= k:
            f = feed[i]
            host[f.bus].send(
                can.Message(
                    timestamp=now,
                    arbitration_id=f.arbitration_id,
                    data=f.data,
                    is_extended_id=f.is_extended_id,
                )
            )
            i += 1
        state["fed"] += i - state["i"]
        state["i"] = i
        bank.service(now, dt)

    twin.scheduler.add("bus", 1.0 / dt, bus_task)
    twin.scheduler.add("feedback", float(meta.get("feedback_rate_hz", 20.0)), bank.emit_feedback)
    got_fb: dict[int, list] = {n: [] for n in channels}
    end_s = float(meta.get("end_time_s", (feed[-1].timestamp_s + shift + dt) if feed else start_s))
    if seconds is not None:
        end_s = min(end_s, start_s + seconds)
    every = max(1, int(round(sample_every_s / dt)))
    times, qs = [twin.time], [twin.data.qpos.copy()]
    t0 = time.perf_counter()
    try:
        while twin.time < end_s - 1e-9:
            twin.step(min(every, int(round((end_s - twin.time) / dt))))
            times.append(twin.time)
            qs.append(twin.data.qpos.copy())
            for n, bus in host.items():
                while (m := bus.recv(timeout=0)) is not None:
                    got_fb[n].append((m.arbitration_id, bytes(m.data)))
            if on_progress is not None:
                on_progress(twin.time)
    finally:
        wall = time.perf_counter() - t0
        bank.close()
        for bus in host.values():
            bus.shutdown()
    mismatches = 0
    n_fb = 0
    for n in channels:
        a, b = expected_fb[n], got_fb[n]
        m = min(len(a), len(b))
        n_fb += len(b)
        mismatches += sum(1 for x, y in zip(a[:m], b[:m], strict=True) if x != y)
        if seconds is None:
            mismatches += abs(len(a) - len(b))
    return ReplayResult(
        frames_fed=state["fed"],
        feedback_frames=n_fb,
        feedback_mismatches=mismatches,
        simulated_s=twin.time - start_s,
        wall_s=wall,
        times=np.array(times),
        qpos=np.array(qs),
        read_s=read_s,
        notes=notes,
    )


def bus_no(channel: str) -> int:
    from rob_twin.twin.bus.recording import bus_number

    return bus_number(channel)


def play_onto(
    recording: Recording,
    buses: dict[int, can.BusABC],
    speed: float = 1.0,
    include_feedback: bool = False,
    deadline_s: float | None = None,
) -> int:
    """Send ``recording``'s host frames onto live ``buses`` ({bus number: python-can bus}),
    paced by their timestamps (``speed`` x real time); returns the frames sent.

    Feedback frames are drive output and are left out unless ``include_feedback``.
    RecordingError before anything is sent if the recording has frames on a bus
    number that ``buses`` lacks."""
    if not speed > 0:
        raise RecordingError(recording.path, f"replay speed {speed!r} must be > 0")
    frames = [
        f for f in recording.frames if include_feedback or f.arbitration_id not in FEEDBACK_IDS
    ]
    missing = {f.bus for f in frames} - set(buses)
    if missing:
        raise RecordingError(
            recording.path,
            f"frames on bus(es) {sorted(missing)} but only {sorted(buses)} were given to play onto",
        )
    if not frames:
        return 0
    t_rec0, t_wall0 = frames[0].timestamp_s, time.monotonic()
    sent = 0
    for f in frames:
        due = t_wall0 + (f.timestamp_s - t_rec0) / speed
        if deadline_s is not None and due - t_wall0 > deadline_s:
            break
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        buses[f.bus].send(
            can.Message(
                arbitration_id=f.arbitration_id, data=f.data, is_extended_id=f.is_extended_id
            )
        )
        sent += 1
    return sent
