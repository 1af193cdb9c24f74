"""The mirror's twin: a lockstep twin fed the real host's commands, compared with the real arm.

``MirrorTwin(start, start_stamp_s)`` builds a twin whose arms stand where the real arms'
feedback says (``start``: joint positions [rad] per arm), lets its drives settle there
(``settle_s`` simulated, so their integral action holds the arm against gravity as the real
drives already do), and maps bus time onto simulated time: a frame stamped ``t`` [s, the
bus clock: Unix time on SocketCAN and on a rob-twin bank] belongs to the physics step of
``t - start_stamp_s`` after the settle.

``command(arm, msg)`` steps the twin to the frame's step and hands the frame to the
twin's drive of that arm, exactly as ``rob_twin.twin.bus.replay`` hands recorded host frames
to the drives. ``feedback(arm, msg)`` steps the twin to the frame's step, decodes the real
drive's position and compares it with the twin's joint at that same instant: the real
position goes through the twin's drive configuration (``joint = sign * drive +
zero_offset``), so a calibration's signs and zeros apply to both. A difference beyond
``tolerance_rad`` raises an ``Alarm``, once per joint (it latches; further frames over the
tolerance are counted). A frame stamped before the twin's present step (the other bus's
frames can arrive a little late) is handed over at the present step and counted ``late``.

``TwinParameters`` is where a calibration plugs in: a replacement MjModel and the drives'
configurations (``rob_twin.twin.drives.amber_drive.DriveConfig``, one per joint, both arms);
``None`` of either keeps the twin's default (ASSUMED) parameters. Everything here is
simulated (``hardware_io: false``); the real arm is only observed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import can
import mujoco
import numpy as np
from rob_twin.controllers.codec import decode_feedback
from rob_twin.controllers.errors import CodecError
from rob_twin.models.errors import InvalidValueError
from rob_twin.models.names import COMMAND_IDS, FEEDBACK_IDS, JOINTS_PER_ARM, Arm
from rob_twin.twin.bus.wire import open_virtual
from rob_twin.twin.drives.amber_bank import MotorBank
from rob_twin.twin.drives.amber_drive import DRIVE_FRAME, DriveConfig
from rob_twin.twin.sim.twin import Twin, TwinConfig


class MirrorInputError(InvalidValueError):
    """A mirror setting or start state out of its valid range (names value and range)."""

    subject = "mirror"


@dataclass(frozen=True)
class TwinParameters:
    """What a calibration changes in the mirror's twin.

    name: recorded in the summary ("uncalibrated" for the defaults); model: a MuJoCo model
    of ROB's scene with fitted values (None: ``load_scene()``); drive_configs: seven
    ``DriveConfig`` (joints 1..7, used for both arms), or seven per arm (``{Arm: configs}``, a
    calibration's); None: ``default_drive_configs()``."""

    name: str = "uncalibrated"
    model: mujoco.MjModel | None = None
    drive_configs: tuple[DriveConfig, ...] | dict | None = None  # or {Arm: seven configs}


def default_parameters() -> TwinParameters:
    """The twin's assumed parameters (no calibration)."""
    return TwinParameters()


@dataclass(frozen=True)
class Alarm:
    """A joint whose real position left the twin's prediction by more than the tolerance.

    stamp_s: the feedback frame's bus time [s]; twin_s: simulated time [s]; real_rad,
    twin_rad, diff_rad (real - twin) [rad]; arrival_s: wall time [s, Unix] the frame
    reached the mirror (None offline)."""

    arm: str
    joint: int
    stamp_s: float
    twin_s: float
    real_rad: float
    twin_rad: float
    diff_rad: float
    tolerance_rad: float
    arrival_s: float | None = None

    def text(self) -> str:
        return (
            f"ALARM {self.arm} J{self.joint}: real {self.real_rad:+.4f} rad, twin "
            f"{self.twin_rad:+.4f} rad, difference {self.diff_rad:+.4f} rad beyond "
            f"{self.tolerance_rad:g} rad (bus time {self.stamp_s:.6f} s)"
        )

    def record(self) -> dict:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        for k in ("real_rad", "twin_rad", "diff_rad"):
            out[k] = round(out[k], 6)
        return out


@dataclass
class ArmComparison:
    """Per joint of one arm: latest real and twin positions [rad], worst and RMS difference."""

    real_rad: np.ndarray = field(default_factory=lambda: np.full(JOINTS_PER_ARM, np.nan))
    twin_rad: np.ndarray = field(default_factory=lambda: np.full(JOINTS_PER_ARM, np.nan))
    max_abs_diff_rad: np.ndarray = field(default_factory=lambda: np.zeros(JOINTS_PER_ARM))
    sum_sq: np.ndarray = field(default_factory=lambda: np.zeros(JOINTS_PER_ARM))
    frames: np.ndarray = field(default_factory=lambda: np.zeros(JOINTS_PER_ARM, dtype=int))
    over_tolerance: np.ndarray = field(default_factory=lambda: np.zeros(JOINTS_PER_ARM, dtype=int))

    def summary(self) -> dict:
        rms = np.sqrt(self.sum_sq / np.maximum(self.frames, 1))
        return {
            "feedback_frames": self.frames.tolist(),
            "max_abs_diff_rad": np.round(self.max_abs_diff_rad, 6).tolist(),
            "rms_diff_rad": np.round(rms, 6).tolist(),
            "frames_over_tolerance": self.over_tolerance.tolist(),
        }


def _check_start(start: dict) -> dict[Arm, np.ndarray]:
    if not start:
        raise MirrorInputError("start", start, "joint positions of at least one arm")
    out = {}
    for arm, q in start.items():
        q = np.asarray(q, dtype=float)
        if q.shape != (JOINTS_PER_ARM,) or not np.all(np.isfinite(q)):
            raise MirrorInputError(f"start[{arm}]", q.tolist(), "7 finite joint positions [rad]")
        out[Arm.parse(arm)] = q
    return out


class MirrorTwin:
    """The lockstep twin of the mirror (see the module docstring); owned by one thread.

    start: {arm: real joint positions [rad, joint frame]}; start_stamp_s: bus time [s] of
    that state; tolerance_rad: alarm threshold per joint [rad]; settle_s: simulated time
    [s] the drives hold the start pose before bus time begins."""

    def __init__(
        self,
        start: dict,
        start_stamp_s: float,
        tolerance_rad: float,
        parameters: TwinParameters | None = None,
        seed: int = 0,
        settle_s: float = 1.0,
    ):
        if not (isinstance(tolerance_rad, (int, float)) and 0 < tolerance_rad < math.pi):
            raise MirrorInputError("tolerance_rad", tolerance_rad, "0 < tolerance < pi [rad]")
        if not (math.isfinite(start_stamp_s)):
            raise MirrorInputError("start_stamp_s", start_stamp_s, "a finite bus time [s]")
        if not (isinstance(settle_s, (int, float)) and 0 <= settle_s <= 10):
            raise MirrorInputError("settle_s", settle_s, "0 to 10 s")
        start = _check_start(start)
        self.parameters = parameters or default_parameters()
        self.tolerance_rad = float(tolerance_rad)
        self.twin = Twin(TwinConfig(seed=seed), model=self.parameters.model)
        m, d = self.twin.model, self.twin.data
        self.dt = self.twin.scheduler.dt
        self.arms = tuple(start)
        self._qpos = {arm: self.twin.arm_qpos[arm] for arm in self.arms}
        configs = self.parameters.drive_configs
        for arm, q in start.items():  # the real joints, through the drives' installation
            d.qpos[self._qpos[arm]] = q
        d.qvel[:] = 0.0
        mujoco.mj_forward(m, d)
        tag = f"mirror{id(self)}"
        self._channels = {arm: f"{arm.value}@{tag}" for arm in self.arms}
        self.bank = MotorBank(
            m, d, {self._channels[a]: a for a in self.arms}, configs=configs, now=self.twin.time
        )
        self._to_drives = {arm: open_virtual(ch) for arm, ch in self._channels.items()}
        self._drives = {arm: self.bank.drives_of(arm).drives for arm in self.arms}
        self.twin.scheduler.add("bus", 1.0 / self.dt, lambda now: self.bank.service(now, self.dt))
        self.twin.run_for(settle_s)
        self._offset_s = self.twin.time - start_stamp_s  # simulated = bus time + offset
        self.compare = {arm: ArmComparison() for arm in self.arms}
        self.alarms: list[Alarm] = []
        self._alarmed: set[tuple[Arm, int]] = set()
        self.commands = 0
        self.late_frames = 0
        self.other_frames = 0
        self.malformed_feedback = 0

    # ------------------------------------------------------------------ time
    def twin_time_of(self, stamp_s: float) -> float:
        """Simulated time [s] of bus time ``stamp_s`` [s]."""
        return stamp_s + self._offset_s

    def advance_to(self, stamp_s: float) -> int:
        """Step the twin to the physics step of bus time ``stamp_s`` [s]; the steps taken
        (0 and a late count when that step is already past)."""
        target = int(round(self.twin_time_of(stamp_s) / self.dt))
        n = target - self.twin.scheduler.step_count
        if n < 0:
            self.late_frames += 1
            return 0
        if n:
            self.twin.step(n)
        return n

    # ------------------------------------------------------------------ frames
    def handle(self, arm: Arm, msg: can.Message, arrival_s: float | None = None) -> Alarm | None:
        """One frame seen on ``arm``'s bus: a host command, drive feedback or other."""
        if msg.is_extended_id or arm not in self._channels:
            self.other_frames += 1
            return None
        if msg.arbitration_id in COMMAND_IDS:
            self.command(arm, msg)
            return None
        if msg.arbitration_id in FEEDBACK_IDS:
            return self.feedback(arm, msg, arrival_s)
        self.other_frames += 1
        return None

    def command(self, arm: Arm, msg: can.Message) -> None:
        """The real host's command frame: to the twin's drive at the frame's step."""
        self.advance_to(float(msg.timestamp))
        self._to_drives[arm].send(
            can.Message(
                timestamp=self.twin.time,
                arbitration_id=msg.arbitration_id,
                data=bytes(msg.data),
                is_extended_id=False,
            )
        )
        self.commands += 1

    def feedback(self, arm: Arm, msg: can.Message, arrival_s: float | None = None) -> Alarm | None:
        """The real drive's feedback: compared with the twin's joint at the frame's step;
        the new alarm, if this frame is the first of its joint beyond the tolerance."""
        try:
            fb = decode_feedback(msg.arbitration_id, bytes(msg.data), DRIVE_FRAME)
        except CodecError:
            self.malformed_feedback += 1
            return None
        stamp = float(msg.timestamp)
        self.advance_to(stamp)
        k = fb.joint - 1
        drive = self._drives[arm][k]
        cfg = drive.config
        real = cfg.sign * fb.position_rad + cfg.zero_offset_rad
        twin = float(self.twin.data.qpos[self._qpos[arm][k]])
        diff = real - twin
        c = self.compare[arm]
        c.real_rad[k], c.twin_rad[k] = real, twin
        c.frames[k] += 1
        c.sum_sq[k] += diff * diff
        c.max_abs_diff_rad[k] = max(c.max_abs_diff_rad[k], abs(diff))
        if abs(diff) <= self.tolerance_rad:
            return None
        c.over_tolerance[k] += 1
        if (arm, fb.joint) in self._alarmed:
            return None
        self._alarmed.add((arm, fb.joint))
        alarm = Alarm(
            arm=arm.value,
            joint=fb.joint,
            stamp_s=stamp,
            twin_s=self.twin.time,
            real_rad=real,
            twin_rad=twin,
            diff_rad=diff,
            tolerance_rad=self.tolerance_rad,
            arrival_s=arrival_s,
        )
        self.alarms.append(alarm)
        return alarm

    # ------------------------------------------------------------------ reports
    def sample(self) -> dict:
        """The latest real and twin positions and differences per arm [rad] (JSON-ready)."""
        out = {}
        for arm, c in self.compare.items():
            out[arm.value] = {
                "real_rad": _rounded(c.real_rad),
                "twin_rad": _rounded(c.twin_rad),
                "diff_rad": _rounded(c.real_rad - c.twin_rad),
            }
        return out

    def summary(self) -> dict:
        return {
            "parameters": self.parameters.name,
            "tolerance_rad": self.tolerance_rad,
            "twin_time_s": round(self.twin.time, 6),
            "commands_fed": self.commands,
            "late_frames": self.late_frames,
            "other_frames": self.other_frames,
            "malformed_feedback": self.malformed_feedback,
            "arms": {arm.value: c.summary() for arm, c in self.compare.items()},
            "alarms": [a.record() for a in self.alarms],
        }

    def close(self) -> None:
        self.bank.close()
        for bus in self._to_drives.values():
            bus.shutdown()


def _rounded(values: np.ndarray) -> list:
    return [None if not math.isfinite(v) else round(float(v), 6) for v in values]
