"""Read a bus recording completely and strictly, then feed it to a fresh lockstep twin.

``read_recording(path)`` reads all frames of a ``.log``, ``.asc``, ``.blf`` or ``.mf4``
file (python-can's readers) before anything is driven. A malformed recording is a
``RecordingError`` naming the file and the line (text formats) or frame (binary):
an empty recording, a line that does not parse, a truncated last line (no line end:
the writer was cut off), an ``.asc`` without its ``End TriggerBlock``, time going
backwards, more frames than ``ReplayConfig.max_frames``, fewer frames than the sidecar
says were written, an unknown format. The sidecar is read and checked field by field
(``rob_twin.twin.bus.sidecar``). A damaged ``.mf4`` ends in that one error: asammdf's
failing teardown of the half-opened file is kept quiet.

``replay(recording)`` rebuilds the recorded twin from the sidecar (seed, wiring, drive
faults, the exact initial MuJoCo state; ROB's defaults when there is none), puts
no owners on the buses and instead hands every recorded frame that is not drive
feedback to the drives at the physics step of its timestamp, exactly as the host's
frames reached them in the run. A lockstep recording therefore reproduces the run's
joint trajectory bit for bit; the replayed drives' feedback frames are compared
with the recorded ones (``feedback_mismatches``).

Time is bounded: timestamps are normalised (the sidecar's ``first_frame_sim_s``, or else
the first frame placed at the start, so epoch-stamped or offset recordings replay from
the twin's clock), every frame is put on a whole physics step, and the stepping loop
counts whole steps from the start step to the end step, each pass at least one, so it
ends after at most ``end - start`` passes. A recording that would span more than
``ReplayConfig.max_span_s`` of simulated time is refused before the twin is built, as is
one that carries CAN ids that are not ROB's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import math
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import can
import mujoco
import numpy as np
from rob_twin.models.errors import InvalidValueError, RobTwinError, hex_id
from rob_twin.models.names import BUS_MAPPING, COMMAND_IDS, FEEDBACK_IDS, Arm
from rob_twin.twin.bus.recording import STATE_SPEC, RecordingError, check_format, sidecar_path
from rob_twin.twin.bus.sidecar import Sidecar, SidecarError, read_sidecar, validate_sidecar
from rob_twin.twin.bus.wire import open_virtual
from rob_twin.twin.drives.amber_bank import MotorBank
from rob_twin.twin.sim.faults import FaultSchedule
from rob_twin.twin.sim.twin import Twin, TwinConfig

_READERS = {
    ".log": can.CanutilsLogReader,
    ".asc": can.ASCReader,
    ".blf": can.BLFReader,
    ".mf4": can.MF4Reader,
}
# added to a recording's seed for the replay's own drive noise (``replay(drive_noise_rad=)``):
# another realisation than the run's (a 32-bit prime, far from any seed the project uses)
REPLAY_NOISE_SEED_OFFSET = 2_147_483_629
ASC_FOOTER = "end triggerblock"  # the last line of every .asc (python-can, CANoe), any case


@dataclass(frozen=True)
class ReplayConfig:
    """Bounds on one read and one replay.

    ``max_frames``: frames read from one recording (memory: about 200 bytes each);
    ``max_span_s``: simulated time [s] one replay may cover (wall time: the twin replays
    about 20 to 50 times faster than real time); ``max_samples``: trajectory samples kept
    (memory: one ``qpos`` each).
    """

    max_frames: int = 5_000_000
    max_span_s: float = 600.0
    max_samples: int = 200_000


def default_config() -> ReplayConfig:
    """5 million frames, 600 s simulated, 200,000 samples."""
    return ReplayConfig()


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
    meta: dict = field(default_factory=dict)  # the sidecar as read ({} when there is none)
    sidecar: Sidecar | None = None  # the checked sidecar; from ``meta`` when not given

    def __post_init__(self) -> None:
        if self.sidecar is None:
            self.sidecar = validate_sidecar(self.meta, self.path) if self.meta else Sidecar()


class _CountingLines:
    """A text file that knows which line its reader is on, whether it ended cleanly and
    what its last non-blank line was."""

    def __init__(self, f):
        self._f = f
        self.line = 0
        self.complete = True
        self.last_text = ""

    def _seen(self, text: str) -> str:
        self.line += 1
        self.complete = text.endswith("\n")
        if text.strip():
            self.last_text = text.strip()
        return text

    def __iter__(self):
        for text in self._f:
            yield self._seen(text)

    def __next__(self):
        return self._seen(next(self._f))

    def readline(self):
        text = self._f.readline()
        return self._seen(text) if text else text

    def close(self) -> None:
        self._f.close()


def _is_asammdf(unraisable) -> bool:
    return str(getattr(unraisable.object, "__module__", "")).startswith("asammdf")


@contextlib.contextmanager
def _quiet_asammdf_teardown() -> Iterator[None]:
    """asammdf's ``MDF4.__del__`` raises on an object whose ``__init__`` failed (a damaged
    file) and Python prints that as "Exception ignored in ... Traceback" after our own
    message. Inside this block those teardown errors, and only those, are dropped; the
    half-built objects are collected before it ends."""
    previous = sys.unraisablehook

    def hook(unraisable) -> None:
        if not _is_asammdf(unraisable):
            previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        gc.collect()
        sys.unraisablehook = previous


def _channel_number(channel, path: Path, where: int, unit: str) -> int:
    if isinstance(channel, int):
        return channel
    digits = "".join(ch for ch in str(channel) if ch.isdigit())
    if not digits:
        raise RecordingError(path, f"channel {channel!r} carries no bus number", where, unit)
    return int(digits)


def read_recording(path: Path | str, config: ReplayConfig | None = None) -> Recording:
    """All frames of ``path``, checked; RecordingError at the first defect (nothing partial)."""
    config = config or default_config()
    path = Path(path)
    suffix = check_format(path)
    if not path.is_file():
        raise RecordingError(path, "no such recording file")
    meta, sidecar = read_sidecar(path)
    text = suffix in (".log", ".asc")
    unit = "line" if text else "frame"
    quiet = _quiet_asammdf_teardown() if suffix == ".mf4" else contextlib.nullcontext()
    with quiet:
        frames, failure = _read_frames(path, suffix, config)
    if failure is not None:  # raised here, after the reader's objects are gone (see quiet)
        raise RecordingError(path, failure[0], failure[1], unit)
    if not frames:
        raise RecordingError(path, "no frames (an empty recording)")
    if sidecar.frames is not None and sidecar.frames != len(frames):
        raise RecordingError(
            path,
            f"truncated: {len(frames)} frames read, the sidecar says {sidecar.frames} were written",
            len(frames) + 1,
            unit,
        )
    return Recording(path, frames, meta, sidecar)


def _read_frames(
    path: Path, suffix: str, config: ReplayConfig
) -> tuple[list[RecordedFrame], tuple[str, int] | None]:
    """The frames, and (reason, line or frame) of the first defect or None."""
    text = suffix in (".log", ".asc")
    unit = "line" if text else "frame"
    frames: list[RecordedFrame] = []
    counter = _CountingLines(path.open("r", encoding="utf-8", errors="strict")) if text else None
    last = -math.inf
    reader = None
    try:
        reader = _READERS[suffix](counter if text else str(path))
        for k, msg in enumerate(reader, 1):
            where = counter.line if text else k
            if text and not counter.complete:
                return frames, ("truncated line (the file ends without a line end)", where)
            if msg.is_error_frame:
                continue
            if len(frames) >= config.max_frames:
                return frames, (f"more than {config.max_frames} frames (ReplayConfig)", where)
            t = float(msg.timestamp)
            if not math.isfinite(t):
                return frames, (f"timestamp {t!r} is not finite", where)
            if t < last:
                return frames, (f"time goes backwards: {t:.6f} s after {last:.6f} s", where)
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
        if text and counter.line and not counter.complete:
            return frames, ("truncated line (the file ends without a line end)", counter.line)
        if suffix == ".asc" and counter.line and counter.last_text.lower() != ASC_FOOTER:
            return frames, (
                "truncated: the file ends without its 'End TriggerBlock' line",
                counter.line,
            )
    except RecordingError:
        raise
    except Exception as err:  # a reader's parse error: say where it stopped
        where = counter.line if text else len(frames) + 1
        if text and not counter.complete:  # the reader choked on a cut-off last line
            return frames, ("truncated line (the file ends without a line end)", where)
        return frames, (f"malformed record ({type(err).__name__}: {err})", where)
    finally:
        if counter is not None:
            counter.close()
        elif reader is not None:
            with contextlib.suppress(Exception):
                reader.stop()
    return frames, None


def check_robot_ids(rec: Recording) -> None:
    """RecordingError naming the bus and the ids when ``rec`` carries frames whose ids are not
    ROB's (commands 0x11..0x17, feedback 0x91..0x97, standard 11-bit ids): another robot's
    recording, or a bus that is not ROB's."""
    ours = set(COMMAND_IDS) | set(FEEDBACK_IDS)
    foreign: dict[int, Counter] = {}
    for f in rec.frames:
        if f.is_extended_id or f.arbitration_id not in ours:
            foreign.setdefault(f.bus, Counter())[(f.arbitration_id, f.is_extended_id)] += 1
    if not foreign:
        return
    bus = min(foreign)
    ids = sorted(foreign[bus])
    shown = ", ".join(hex_id(i) + (" (extended)" if ext else "") for i, ext in ids[:8])
    more = f" and {len(ids) - 8} more" if len(ids) > 8 else ""
    raise RecordingError(
        rec.path,
        f"bus {bus} carries {sum(foreign[bus].values())} frames with ids that are not ROB's: "
        f"{shown}{more}; ROB's ids: commands {hex_id(COMMAND_IDS[0])}..{hex_id(COMMAND_IDS[-1])},"
        f" feedback {hex_id(FEEDBACK_IDS[0])}..{hex_id(FEEDBACK_IDS[-1])}, standard 11-bit "
        "(another robot's recording, or a bus that is not ROB's?)",
    )


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
    actuator_force: np.ndarray | None = None  # [N m] every actuator, at ``times``
    shift_s: float = 0.0  # added to the recording's stamps to put them on ``times``' clock
    model: mujoco.MjModel | None = field(default=None, repr=False)  # the model replayed

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


@dataclass(frozen=True)
class Timeline:
    """Where a recording lands on the twin's clock, in whole physics steps.

    ``shift_s`` is added to every timestamp [s]; ``feed_steps[i]`` is the step at which the
    i-th host frame reaches the drives; the replay runs steps ``start_step`` to ``end_step``.
    """

    start_step: int
    end_step: int
    shift_s: float
    feed_steps: list[int]
    notes: tuple[str, ...] = ()


def _non_negative(name: str, value: object) -> None:
    """InvalidValueError unless ``value`` is a finite number >= 0."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not (number and math.isfinite(value) and value >= 0):
        raise InvalidValueError(name, value, "a finite number >= 0 (0: none)")


def _positive(name: str, value: object, none_ok: bool) -> None:
    """InvalidValueError unless ``value`` is a finite number > 0 [s] (or None when ``none_ok``)."""
    if value is None and none_ok:
        return
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not (number and math.isfinite(value) and value > 0):
        valid = "a finite number of seconds > 0" + (" or None (all of it)" if none_ok else "")
        raise InvalidValueError(name, value, valid)


def timeline(
    rec: Recording,
    feed: list[RecordedFrame],
    dt: float,
    seconds: float | None = None,
    config: ReplayConfig | None = None,
) -> Timeline:
    """Put ``rec`` on the twin's clock of step ``dt`` [s]; RecordingError when it would span
    more than ``config.max_span_s`` (after cutting it to ``seconds``)."""
    config = config or default_config()
    if not rec.frames:
        raise RecordingError(rec.path, "no frames (an empty recording)")
    side = rec.sidecar
    start_s = side.start_time_s
    first = rec.frames[0].timestamp_s
    notes = []
    if side.first_frame_sim_s is not None:  # the recorder said where its first frame was
        shift = side.first_frame_sim_s - first
    else:
        shift = start_s - first
        if shift != 0.0:
            notes.append(
                f"timestamps normalised: the first frame's stamp {first:.6f} s is placed at "
                f"{start_s:g} s of simulated time (every stamp moved by {shift:+.6f} s)"
            )
    start_step = int(round(start_s / dt))
    last_step = int(round((rec.frames[-1].timestamp_s + shift) / dt))
    if side.end_time_s is not None:
        end_step = max(start_step, int(round(side.end_time_s / dt)))
    else:
        end_step = max(start_step, last_step + 1)
    if seconds is not None:
        end_step = min(end_step, start_step + int(round(seconds / dt)))
    span_s = (end_step - start_step) * dt
    if span_s > config.max_span_s:
        raise RecordingError(
            rec.path,
            f"spans {span_s:.6f} s of simulated time (stamps {first:.6f} s to "
            f"{rec.frames[-1].timestamp_s:.6f} s); limit {config.max_span_s:g} s "
            "(replay a part with seconds / --seconds, or raise ReplayConfig.max_span_s / "
            "--max-span)",
        )
    steps = [int(round((f.timestamp_s + shift) / dt)) for f in feed]
    return Timeline(start_step, end_step, shift, steps, tuple(notes))


def reply_ids_of(robot) -> frozenset[int]:
    """The ids the drives of ``robot`` answer on (None: ROB's Amber feedback 0x91..0x97;
    Damiao: the MST ids of its arm joints, 0x11.. on OpenArm): what a replay does not feed."""
    if robot is None or robot.family != "damiao":
        return frozenset(FEEDBACK_IDS)
    from rob_twin.controllers.damiao_transport import mst_ids

    return frozenset(mst_ids(max(robot.joint_count(a) for a in Arm)))


def _enable_as_recorded(bank, rec: Recording, bus_of: dict[str, int], bank_now: float) -> None:
    """Enable each Damiao drive of ``bank`` whose first recorded reply reports it enabled
    (status nibble 1): a recording that starts after the bring-up (``--record-can``, a
    dataset) holds no enable frame, and its drives' own replies say they were enabled.
    ``bus_of``: {bank channel: recorded bus number}."""
    from rob_twin.controllers.damiao_codec import Status, looks_like_register_reply
    from rob_twin.models.damiao_motors import MIT_REPLY_OFFSET

    first: dict[tuple[int, int], int] = {}
    for f in rec.frames:
        key = (f.bus, f.arbitration_id)
        if key in first or len(f.data) != 8:
            continue
        esc_id = f.arbitration_id - MIT_REPLY_OFFSET  # a reply's id is its ESC id + 0x10
        if looks_like_register_reply(f.data, esc_id):  # not a state frame
            continue
        first[key] = f.data[0] >> 4
    first_command: dict[tuple[int, int], bytes] = {}
    for f in rec.frames:
        first_command.setdefault((f.bus, f.arbitration_id), bytes(f.data))
    for channel, ad in bank.buses.items():
        for k, drv in enumerate(ad.drives):
            bus = bus_of[channel]
            if first.get((bus, drv.mst_id)) != Status.ENABLED:
                continue
            drv.enabled = True
            # the drive held a command before the recording started: its first recorded one
            # (the owner's next sample), so the first step is not one of zero torque
            data = first_command.get((bus, drv.esc_id))
            if data is not None:
                q = float(bank.data.qpos[ad.qpos[k]])
                dq = float(bank.data.qvel[ad.dof[k]])
                drv.on_frame(drv.esc_id, data, bank_now, q, dq)


def _set_recorded_registers(bank, rec: Recording, bus_of: dict[str, int]) -> None:
    """Give each Damiao drive of ``bank`` the registers its host wrote before the recording
    started (the sidecar's ``drive_registers``: the bring-up's CAN watchdog, which trips a
    drive whose host stops sending). ``bus_of``: {bank channel: recorded bus number};
    RecordingError for a drive the bank does not have."""
    from rob_twin.controllers.damiao_codec import Register

    written = rec.sidecar.drive_registers or {}
    drives = {
        (bus_of[ch], d.joint): d for ch, ad in bank.buses.items() for d in getattr(ad, "drives", ())
    }
    for bus, joints in written.items():
        for joint, regs in joints.items():
            drv = drives.get((bus, joint))
            if drv is None or not hasattr(drv, "set_register"):
                raise RecordingError(
                    rec.path,
                    f"sidecar drive_registers names bus {bus} joint {joint}, a Damiao drive "
                    f"the replaying twin does not have (it has {sorted(drives)})",
                )
            for name, value in regs.items():
                drv.set_register(Register[name], value)


def _check_recorded_robot(rec: Recording, robot) -> None:
    """RecordingError when the sidecar names a robot whose model is not the one replaying it
    (``robot``; None: the default robot): one robot never stands in for another."""
    recorded = rec.sidecar.robot
    if recorded is None:
        return
    from rob_twin.models.robot import robot_of

    replaying = robot_of(robot)
    if recorded["model_hash"] != replaying.model_hash:
        raise RecordingError(
            rec.path,
            f"recorded on robot {recorded['name']!r} ({recorded['file']}, model "
            f"{recorded['model_hash']}), not on {replaying.name!r} (model "
            f"{replaying.model_hash}); replay it with --robot {recorded['file']}",
        )


def replay(
    recording: Recording | Path | str,
    seconds: float | None = None,
    sample_every_s: float = 0.01,
    on_progress: Callable[[float], None] | None = None,
    config: ReplayConfig | None = None,
    parameters: dict[str, float] | None = None,
    robot=None,
    drive_noise_rad: float = 0.0,
    noise_realisation: int = 0,
) -> ReplayResult:
    """Feed ``recording`` into a fresh lockstep twin (see the module docstring).

    seconds: replay only this much simulated time [s] (None: all of it); sample_every_s:
    trajectory sample period [s]; on_progress: called with the simulated time [s] after
    every sample; parameters: the twin's parameters to replay with
    (``rob_twin.twin.calibration.parameters`` names: model, drives and each arm's command
    delay, which moves the host frames later by that much; None: the twin as it is);
    robot: the robot recorded (a ``rob_twin.models.robot.Robot`` with Amber drives: its
    model, its drives with its joint ranges, its channels as the wiring of a recording
    without one; None: ROB's scene and drives, as always); drive_noise_rad: white noise of
    this std [rad] (N m on a torque actuator) on every servo target at every physics step,
    as ``TwinConfig.control_noise`` (0: none, the replay is deterministic). Its realisation
    is seeded by the recording's seed plus ``REPLAY_NOISE_SEED_OFFSET`` plus
    ``noise_realisation`` (an integer >= 0): the same for every replay of one recording and
    realisation (so a fit's rollouts differ only by their parameters), never the recorded
    run's own (a real drive's noise cannot be replayed, only its level)."""
    config = config or default_config()
    _non_negative("drive_noise_rad", drive_noise_rad)
    if isinstance(noise_realisation, bool) or not isinstance(noise_realisation, int):
        raise InvalidValueError("noise_realisation", noise_realisation, "an integer >= 0")
    _non_negative("noise_realisation", noise_realisation)
    _positive("seconds", seconds, none_ok=True)
    _positive("sample_every_s", sample_every_s, none_ok=False)
    t_read = time.perf_counter()
    rec = recording if isinstance(recording, Recording) else read_recording(recording, config)
    read_s = time.perf_counter() - t_read if not isinstance(recording, Recording) else 0.0
    side, notes = rec.sidecar, []
    side_path = sidecar_path(rec.path)
    if not side.present:
        notes.append(
            "no sidecar: ROB's default twin (seed 0, home pose, CAN10 right / CAN11 left, "
            "20 Hz feedback); a run that started elsewhere will not be reproduced"
            + (
                "; and a .log cut at a line end cannot be told from a whole one (candump "
                "logs have no footer; the sidecar's frame count catches it)"
                if rec.path.suffix.lower() == ".log"
                else ""
            )
        )
    if side.timestamps == "wall":
        notes.append(
            "wall-clock recording (a real-time run): frames reach the drives at the "
            "nearest physics step, so the replay is close to the run, not bit-exact, and "
            "feedback frames may differ"
        )
    _check_recorded_robot(rec, robot)
    damiao = robot is not None and robot.family == "damiao"
    if robot is not None:
        from rob_twin.models.robot import CAN_DRIVES
        from rob_twin.twin.drives.amber_robot import robot_channels

        robot.require(CAN_DRIVES, "a replay of drive traffic")
        default_wiring = {bus_no(ch): Arm(a) for a, ch in robot_channels(robot).items()}
    else:
        default_wiring = {bus_no(BUS_MAPPING[a].channel): a for a in Arm}
    reply_ids = reply_ids_of(robot)
    wiring = side.wiring or default_wiring
    unknown = {f.bus for f in rec.frames} - set(wiring)
    if unknown:
        raise RecordingError(
            rec.path,
            f"frames on bus(es) {sorted(unknown)} that the wiring {sorted(wiring)} does not have",
        )
    if not damiao:
        check_robot_ids(rec)
    model, configs, command_delay, friction = None, None, {}, None
    if damiao:
        from rob_twin.twin.calibration.apply import damiao_drives

        model = robot.model()
        configs, friction = damiao_drives(dict(parameters or {}), robot)
    elif robot is not None:
        from rob_twin.twin.drives.amber_robot import amber_drive_configs

        model, configs = robot.model(), amber_drive_configs(robot)
    if parameters:
        from rob_twin.models.loading import load_scene
        from rob_twin.twin.calibration.parameters import apply_to_model, delays, drive_configs

        model = apply_to_model(model if model is not None else load_scene(), parameters)
        if not damiao:
            configs = drive_configs(parameters, robot)
        command_delay = {arm: d[0] for arm, d in delays(parameters).items()}
    twin = Twin(
        TwinConfig(
            seed=side.seed + REPLAY_NOISE_SEED_OFFSET + noise_realisation
            if drive_noise_rad > 0
            else side.seed,
            control_noise=float(drive_noise_rad),
        ),
        model=model,
    )
    dt = twin.scheduler.dt
    _check_against_model(side, twin, side_path)
    feed = [f for f in rec.frames if f.arbitration_id not in reply_ids]
    line = timeline(rec, feed, dt, seconds, config)
    notes.extend(line.notes)
    if any(command_delay.values()):  # each host frame reaches its drives that much later
        late = [
            step + int(round(command_delay.get(Arm(wiring[f.bus]), 0.0) / dt))
            for f, step in zip(feed, line.feed_steps, strict=True)
        ]
        order = sorted(range(len(feed)), key=late.__getitem__)
        feed = [feed[i] for i in order]
        line = dataclasses.replace(line, feed_steps=[late[i] for i in order])
    every = max(1, int(round(sample_every_s / dt)))
    n_samples = (line.end_step - line.start_step) // every + 2
    if n_samples > config.max_samples:
        raise InvalidValueError(
            "sample_every_s",
            sample_every_s,
            f">= {(line.end_step - line.start_step) * dt / config.max_samples:g} s for this "
            f"recording (at most {config.max_samples} samples, ReplayConfig.max_samples)",
        )
    if side.initial_state is not None:
        mujoco.mj_setState(twin.model, twin.data, np.array(side.initial_state), STATE_SPEC)
        mujoco.mj_forward(twin.model, twin.data)
    run = f"replay{id(rec)}"
    channels = {n: f"CAN{n}@{run}" for n in wiring}
    twin.scheduler.step_count = line.start_step
    if damiao:
        from rob_twin.twin.drives.damiao_bank import DamiaoBank

        bank = DamiaoBank(
            twin.model,
            twin.data,
            {channels[n]: arm for n, arm in wiring.items()},
            FaultSchedule(list(side.drive_faults)),
            configs,
            now=twin.time,
            friction=friction,
        )
    else:
        bank = MotorBank(
            twin.model,
            twin.data,
            {channels[n]: arm for n, arm in wiring.items()},
            FaultSchedule(list(side.drive_faults)),
            configs=configs,
            now=twin.time,
        )
    if rec.sidecar.drive_registers:
        _set_recorded_registers(bank, rec, {channels[n]: n for n in wiring})
    if damiao:
        _enable_as_recorded(bank, rec, {channels[n]: n for n in wiring}, twin.time)
    host = {n: open_virtual(ch) for n, ch in channels.items()}
    expected_fb = {
        n: [
            (f.arbitration_id, f.data)
            for f in rec.frames
            if f.arbitration_id in reply_ids and f.bus == n
        ]
        for n in channels
    }
    steps = line.feed_steps
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
    twin.scheduler.add("feedback", side.feedback_rate_hz, bank.emit_feedback)
    got_fb: dict[int, list] = {n: [] for n in channels}
    times, qs = [twin.time], [twin.data.qpos.copy()]
    forces = [twin.data.actuator_force.copy()]
    t0 = time.perf_counter()
    try:
        k = twin.scheduler.step_count
        while k < line.end_step:  # each pass advances n >= 1 whole steps: it ends
            n = min(every, line.end_step - k)
            twin.step(n)
            if twin.scheduler.step_count != k + n:
                raise RobTwinError(
                    f"replay: the twin advanced {twin.scheduler.step_count - k} steps, "
                    f"not {n} (a task changed the step count)"
                )
            k += n
            times.append(twin.time)
            qs.append(twin.data.qpos.copy())
            forces.append(twin.data.actuator_force.copy())
            for n_bus, bus in host.items():
                while (m := bus.recv(timeout=0)) is not None:
                    got_fb[n_bus].append((m.arbitration_id, bytes(m.data)))
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
        simulated_s=(twin.scheduler.step_count - line.start_step) * dt,
        wall_s=wall,
        times=np.array(times),
        qpos=np.array(qs),
        read_s=read_s,
        notes=notes,
        actuator_force=np.array(forces),
        shift_s=line.shift_s,
        model=twin.model,
    )


def _check_against_model(side: Sidecar, twin: Twin, path: Path) -> None:
    """The sidecar fields that need the model: physics step, state size, feedback rate."""
    dt = twin.scheduler.dt
    if side.physics_dt_s is not None and abs(side.physics_dt_s - dt) > 1e-15:
        raise SidecarError(path, "physics_dt_s", side.physics_dt_s, f"{dt!r} s, this model's step")
    size = mujoco.mj_stateSize(twin.model, STATE_SPEC)
    if side.initial_state is not None and len(side.initial_state) != size:
        raise SidecarError(
            path,
            "initial_state",
            f"{len(side.initial_state)} values",
            f"{size} values (this model's mj_getState integration state)",
        )
    every = 1.0 / (side.feedback_rate_hz * dt)
    if abs(every - round(every)) > 1e-9 or round(every) < 1:
        raise SidecarError(
            path,
            "feedback_rate_hz",
            side.feedback_rate_hz,
            f"{1.0 / dt:g}/k Hz for a whole k >= 1 (a divisor of the physics rate)",
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
