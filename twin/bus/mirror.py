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
zero_offset``), so a calibration's signs and zeros apply to both. A frame stamped before the
twin's present step (the other bus's frames can arrive a little late) is handed over at the
present step and counted ``late``; a late reply is still compared with the twin at its own
bus time, from the twin's joint history of the last ``HISTORY_S`` (``late_compared``), so a
reader thread that a loaded machine held back does not show as a difference.

Alarms (``AlarmConfig``), once per joint (they latch; further frames over the tolerance are
counted):

- ``max`` (the library's default): a frame whose difference is beyond ``tolerance_rad``.
  Under load one late frame of a moving joint already shows 10-15 mrad with identical
  parameters, so a tolerance low enough to see a moderate misfit (an RMS of 5-7 mrad) also
  alarms on jitter.
- ``rms`` (``rob-twin mirror``'s default): per joint, the RMS of the difference over the last
  ``window_s`` of bus time (a sliding window, every feedback frame) beyond the joint's
  threshold ``max(factor * floor, min_rad)``, where ``floor`` is the RMS of that joint's
  difference over the first ``floor_s`` of bus time after the twin's start: the jitter
  floor, measured at start-up, where the parameters are trusted (the arms at rest or in
  their usual motion; a misfit already showing then raises the floor and hides itself, which
  ``min_rad`` and the summary's floors make visible). A single late frame moves a one-second
  RMS little; a misfit that persists moves it by its own size. ``tolerance_rad`` stays a
  gross limit: one frame beyond it alarms at once. No ``rms`` alarm before the floor is
  measured (``floor_s``: the alarm's earliest time).

``TwinParameters`` is where a calibration plugs in: a replacement MjModel and the drives'
configurations (``rob_twin.twin.drives.amber_drive.DriveConfig``, one per joint, both arms);
``None`` of either keeps the twin's default (ASSUMED) parameters. Everything here is
simulated (``hardware_io: false``); the real arm is only observed.

The bus a mirror reads is its robot's (``BusProtocol``, from the robot file, passed down:
``bus_protocol(robot)``): which ids are the host's commands, which are the drives' replies,
how a reply decodes and how many joints each arm has.

- Amber drives (ROB, the default): commands 0x11..0x17, feedback 0x91..0x97 sent
  periodically, seven joints; the twin runs Amber drives (``MotorBank``), settled 1 s.
- Damiao drives (OpenArm, any robot file with ``drives.family = "damiao"``): MIT, special
  and mode frames on the ESC ids (0x01.., + 0x100/0x200/0x300) and register frames on 0x7FF
  are the host's; state frames on the MST ids (0x11..) are the drives' replies, decoded with
  each joint's motor scaling (PMAX/VMAX/TMAX, ``models.damiao_motors``); as many joints as the
  robot's arm. A register reply on an MST id (same id, the shape of a register frame) and the
  gripper drive's replies (0x18) are counted, not compared. The twin runs the bank's
  Damiao drives (``LiveDamiaoBank``: the host's frames go to them at their bus time, and
  their impedance torques drive the robot's model), without a settle: an MIT drive holds
  what it was last told, so the twin starts where the real arm is, moving as the replies
  say. A reply from a drive that is not enabled (limp: disabled, or an error latched) is
  followed, not compared: the twin's joint is put where the drive reports it (nothing
  drives a limp joint, and a swinging arm's prediction hangs on the bus clock's offset to
  the drives' physics); ``limp_replies`` counts them, ``status_mismatches`` the replies whose
  status differs from the twin drive's. A mirror that
  starts while the host is already streaming missed the enables: ``prime`` enables each
  twin drive whose real drive reported ENABLED and hands it the last MIT frame the host
  sent it, so the twin's drives hold what the real ones hold.
"""

from __future__ import annotations

import heapq
import itertools
import math
from dataclasses import dataclass, field

import can
import mujoco
import numpy as np
from rob_twin.controllers.codec import decode_feedback
from rob_twin.controllers.damiao_codec import (
    FRAME_LEN,
    Scaling,
    SpecialCommand,
    Status,
    decode_state,
    looks_like_register_reply,
    special_frame,
)
from rob_twin.controllers.errors import CodecError
from rob_twin.models import damiao_motors as DM
from rob_twin.models.names import COMMAND_IDS, FEEDBACK_IDS, JOINTS_PER_ARM, Arm
from rob_twin.twin.bus.bank_lag_watch import LAGGED, LagGate
from rob_twin.twin.bus.mirror_alarm import (  # MirrorInputError: imported from here too
    AlarmConfig,
    JointWatch,
    MirrorInputError,
    default_alarm,
)
from rob_twin.twin.bus.wire import open_virtual
from rob_twin.twin.drives.amber_bank import MotorBank
from rob_twin.twin.drives.amber_drive import DRIVE_FRAME, DriveConfig
from rob_twin.twin.sim.twin import Twin, TwinConfig

HISTORY_S = 0.5  # how far back a late reply is compared at its own time [s]

# what a frame on a mirrored bus is (``BusProtocol.classify``)
COMMAND, REPLY, REGISTER_REPLY, GRIPPER_REPLY, MALFORMED, OTHER = (
    "command",
    "reply",
    "register_reply",
    "gripper_reply",
    "malformed",
    "other",
)


@dataclass(frozen=True)
class TwinParameters:
    """What a calibration changes in the mirror's twin.

    name: recorded in the summary ("uncalibrated" for the defaults); model: a MuJoCo model
    of ROB's scene with fitted values (None: ``load_scene()``); drive_configs: seven
    ``DriveConfig`` (joints 1..7, used for both arms), or seven per arm (``{Arm: configs}``, a
    calibration's); None: ``default_drive_configs()``; delays: {Arm: (command delay, feedback
    delay) [s]} a calibration's transport delays (None: none): the host's frames reach the
    twin's drives the command delay after their stamp, and each drive reply is compared with
    the twin the feedback delay before its stamp (the bus is seen from the host's side, as a
    recording is)."""

    name: str = "uncalibrated"
    model: mujoco.MjModel | None = None
    drive_configs: tuple[DriveConfig, ...] | dict | None = None  # or {Arm: seven configs}
    delays: dict | None = None  # {Arm: (command_delay_s, feedback_delay_s)}
    # the calibration's values: Damiao drives take their drive side from them (friction,
    # gain factors, zeros; ``LiveDamiaoBank``); None: the robot file's
    values: dict | None = None


def default_parameters() -> TwinParameters:
    """The twin's assumed parameters (no calibration)."""
    return TwinParameters()


@dataclass(frozen=True)
class Alarm:
    """A joint whose real position left the twin's prediction.

    stamp_s: the feedback frame's bus time [s]; twin_s: simulated time [s]; real_rad,
    twin_rad, diff_rad (real - twin) [rad] of that frame; tolerance_rad: the threshold
    crossed [rad]; arrival_s: wall time [s, Unix] the frame reached the mirror (None
    offline); statistic: ``"max"`` (this frame's difference beyond the tolerance) or
    ``"rms"`` (the RMS over the last ``window_s`` of bus time, ``rms_rad``, beyond
    ``factor`` times the start-up floor ``floor_rad`` or the least threshold)."""

    arm: str
    joint: int
    stamp_s: float
    twin_s: float
    real_rad: float
    twin_rad: float
    diff_rad: float
    tolerance_rad: float
    arrival_s: float | None = None
    statistic: str = "max"
    rms_rad: float | None = None
    window_s: float | None = None
    floor_rad: float | None = None

    def text(self) -> str:
        if self.statistic == "rms":
            return (
                f"ALARM {self.arm} J{self.joint}: RMS of real - twin over the last "
                f"{self.window_s:g} s {self.rms_rad:.4f} rad beyond {self.tolerance_rad:.4f} rad "
                f"(start-up floor {self.floor_rad:.4f} rad; this frame {self.diff_rad:+.4f} "
                f"rad; bus time {self.stamp_s:.6f} s)"
            )
        return (
            f"ALARM {self.arm} J{self.joint}: real {self.real_rad:+.4f} rad, twin "
            f"{self.twin_rad:+.4f} rad, difference {self.diff_rad:+.4f} rad beyond "
            f"{self.tolerance_rad:g} rad (bus time {self.stamp_s:.6f} s)"
        )

    def record(self) -> dict:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        for k in ("real_rad", "twin_rad", "diff_rad", "rms_rad", "floor_rad", "tolerance_rad"):
            if out[k] is not None:
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
    # frames left out of the alarm statistic: a rob-twin bank lagged then (``LagGate``)
    excluded_for_bank_lag: np.ndarray = field(
        default_factory=lambda: np.zeros(JOINTS_PER_ARM, dtype=int)
    )

    @classmethod
    def of(cls, joints: int) -> ArmComparison:
        """Empty comparison of an arm of ``joints`` joints."""
        return cls(
            real_rad=np.full(joints, np.nan),
            twin_rad=np.full(joints, np.nan),
            max_abs_diff_rad=np.zeros(joints),
            sum_sq=np.zeros(joints),
            frames=np.zeros(joints, dtype=int),
            over_tolerance=np.zeros(joints, dtype=int),
            excluded_for_bank_lag=np.zeros(joints, dtype=int),
        )

    def summary(self) -> dict:
        rms = np.sqrt(self.sum_sq / np.maximum(self.frames, 1))
        return {
            "feedback_frames": self.frames.tolist(),
            "max_abs_diff_rad": np.round(self.max_abs_diff_rad, 6).tolist(),
            "rms_diff_rad": np.round(rms, 6).tolist(),
            "frames_over_tolerance": self.over_tolerance.tolist(),
            "frames_excluded_for_bank_lag": self.excluded_for_bank_lag.tolist(),
        }


def _check_start(start: dict, protocol: BusProtocol) -> dict[Arm, np.ndarray]:
    if not start:
        raise MirrorInputError("start", start, "joint positions of at least one arm")
    out = {}
    for arm, q in start.items():
        arm = Arm.parse(arm)
        n = protocol.joints[arm]
        q = np.asarray(q, dtype=float)
        if q.shape != (n,) or not np.all(np.isfinite(q)):
            raise MirrorInputError(
                f"start[{arm.value}]", q.tolist(), f"{n} finite joint positions [rad]"
            )
        out[arm] = q
    return out


def _dofs(model: mujoco.MjModel, qpos: np.ndarray) -> np.ndarray:
    """The dof indices of the hinge joints at qpos addresses ``qpos``."""
    joints = [int(np.flatnonzero(model.jnt_qposadr == a)[0]) for a in qpos]
    return model.jnt_dofadr[joints]


def _finite(values, n: int, what: str) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    if v.shape != (n,) or not np.all(np.isfinite(v)):
        raise MirrorInputError(what, v.tolist(), f"{n} finite values")
    return v


@dataclass(frozen=True, slots=True)
class _Sample:
    """One compared reply, as the alarm statistic takes it: bus stamp [s], real and twin
    joint positions and their difference [rad], arrival [s, Unix; None offline]."""

    arm: Arm
    joint: int
    stamp_s: float
    real_rad: float
    twin_rad: float
    diff_rad: float
    arrival_s: float | None


@dataclass(frozen=True)
class Reply:
    """A drive's reply decoded: ``joint`` (1..n), its position [rad, as the drive reports it],
    its status nibble and velocity [rad/s] (None where the family's feedback carries none the
    mirror reads)."""

    joint: int
    position_rad: float
    status: int | None = None
    velocity_rad_s: float | None = None


class BusProtocol:
    """What a mirror reads on one robot's bus (module doc). ``family``; ``joints``: {arm:
    joint count}; ``command_ids`` (host to drive) and ``reply_ids`` (drive to host: the
    arm joints' replies); ``settle_s``: how long the twin's drives hold the start pose before
    bus time begins [s]; ``robot``: the Robot (None: ROB's default twin)."""

    family = "amber"
    settle_s = 1.0

    def __init__(self, robot=None):
        self.robot = robot
        self.joints = {arm: JOINTS_PER_ARM for arm in Arm}
        self.command_ids = frozenset(COMMAND_IDS)
        self.reply_ids = frozenset(FEEDBACK_IDS)

    def classify(self, arm: Arm, msg: can.Message) -> tuple[str, Reply | None]:
        """(kind, the decoded reply for ``REPLY``) of a standard data frame on ``arm``'s bus."""
        if msg.arbitration_id in self.command_ids:
            return COMMAND, None
        if msg.arbitration_id not in self.reply_ids:
            return OTHER, None
        try:
            fb = decode_feedback(msg.arbitration_id, bytes(msg.data), DRIVE_FRAME)
        except CodecError:
            return MALFORMED, None
        return REPLY, Reply(fb.joint, fb.position_rad)

    def drives(self, twin: Twin, arms: tuple[Arm, ...], parameters: TwinParameters):
        return _AmberDrives(twin, arms, parameters.drive_configs)

    def default_model(self) -> mujoco.MjModel | None:
        """The twin's model when the parameters name none (None: ROB's scene, as always)."""
        return None


class DamiaoProtocol(BusProtocol):
    """A robot on Damiao drives (module doc): ids and scalings from its file's motors."""

    family = "damiao"
    settle_s = 0.0

    def __init__(self, robot):
        self.robot = robot
        self.joints = {arm: robot.joint_count(arm) for arm in Arm}
        motors = [DM.MOTORS[m] for m in robot.motors]
        n = max(self.joints.values())
        if len(motors) < n or n > len(DM.ESC_IDS):
            raise MirrorInputError(
                "robot",
                robot.name,
                f"drives.motors naming a Damiao motor for each of up to {len(DM.ESC_IDS)} joints",
            )
        self.esc_ids = DM.ESC_IDS[:n]
        self.scalings = tuple(Scaling.of(m) for m in motors[:n])
        self._joint_of = {mst: j for j, mst in enumerate(DM.MST_IDS[:n], start=1)}
        self.reply_ids = frozenset(self._joint_of)
        self.gripper_reply_id = DM.GRIPPER_MST_ID
        escs = (*self.esc_ids, DM.GRIPPER_ESC_ID)
        self.command_ids = frozenset(
            {e + off for e in escs for off in (0x000, 0x100, 0x200, 0x300)} | {DM.REGISTER_ID}
        )

    def classify(self, arm: Arm, msg: can.Message) -> tuple[str, Reply | None]:
        ident, data = msg.arbitration_id, bytes(msg.data)
        if ident in self.command_ids:
            return COMMAND, None
        if ident == self.gripper_reply_id:
            return GRIPPER_REPLY, None
        j = self._joint_of.get(ident)
        if j is None or j > self.joints[arm]:
            return OTHER, None
        esc = self.esc_ids[j - 1]
        if looks_like_register_reply(data, esc):
            return REGISTER_REPLY, None
        if len(data) != FRAME_LEN:
            return MALFORMED, None
        st = decode_state(data, self.scalings[j - 1])
        if st.id_nibble != esc & 0xF:
            return MALFORMED, None
        return REPLY, Reply(j, st.q_rad, st.status, st.dq_rad_s)

    def drives(self, twin: Twin, arms: tuple[Arm, ...], parameters: TwinParameters):
        return _DamiaoDrives(self.robot, twin, arms, parameters.values)

    def default_model(self) -> mujoco.MjModel:
        return self.robot.model()


def bus_protocol(robot=None) -> BusProtocol:
    """The mirror's view of ``robot``'s bus (None: ROB's Amber bus, the default twin);
    MissingCapabilityError (exit 2) for a robot without CAN drives."""
    if robot is None:
        return BusProtocol()
    from rob_twin.models.robot import CAN_DRIVES

    robot.require(CAN_DRIVES, "rob-twin mirror (it reads Amber and Damiao buses)")
    return DamiaoProtocol(robot) if robot.family == "damiao" else BusProtocol(robot)


class _AmberDrives:
    """The twin's Amber drives: host frames go in over in-process virtual buses."""

    def __init__(self, twin: Twin, arms: tuple[Arm, ...], configs):
        tag = f"mirror{id(self)}"
        self._channels = {arm: f"{arm.value}@{tag}" for arm in arms}
        self.bank = MotorBank(
            twin.model,
            twin.data,
            {self._channels[a]: a for a in arms},
            configs=configs,
            now=twin.time,
        )
        self._to_drives = {arm: open_virtual(ch) for arm, ch in self._channels.items()}
        self._drives = {arm: self.bank.drives_of(arm).drives for arm in arms}

    def service(self, now: float, dt: float) -> None:
        self.bank.service(now, dt)

    def feed(self, arm: Arm, msg: can.Message, now: float) -> None:
        self._to_drives[arm].send(
            can.Message(
                timestamp=now,
                arbitration_id=msg.arbitration_id,
                data=bytes(msg.data),
                is_extended_id=False,
            )
        )

    def joint_position(self, arm: Arm, reply: Reply) -> float:
        """A real reply's position in the joint frame, through the twin drive's installation."""
        cfg = self._drives[arm][reply.joint - 1].config
        return cfg.sign * reply.position_rad + cfg.zero_offset_rad

    def prime(self, arm: Arm, statuses: dict, last_frames: dict) -> int:
        return 0  # Amber drives hold by themselves (the settle)

    def status(self, arm: Arm, joint: int) -> int | None:
        return None  # the mirror reads no status from Amber feedback

    def close(self) -> None:
        self.bank.close()
        for bus in self._to_drives.values():
            bus.shutdown()


class _DamiaoDrives:
    """The twin's Damiao drives (the live bank's), handed each host frame directly."""

    def __init__(self, robot, twin: Twin, arms: tuple[Arm, ...], values: dict | None = None):
        from rob_twin.twin.drives.damiao_live import LiveDamiaoBank

        tag = f"mirror{id(self)}"
        self._channels = {arm: f"{arm.value}@{tag}" for arm in arms}
        self.bank = LiveDamiaoBank(
            robot,
            twin.model,
            twin.data,
            {self._channels[a]: a for a in arms},
            now=twin.time,
            values=values,
        )
        self._bus = {arm: self.bank.buses[ch] for arm, ch in self._channels.items()}

    def service(self, now: float, dt: float) -> None:
        self.bank.service(now, dt)

    def feed(self, arm: Arm, msg: can.Message, now: float) -> None:
        self.bank.respond(  # the twin drive's answer is not compared: the real one is
            self._channels[arm],
            can.Message(
                timestamp=now,
                arbitration_id=msg.arbitration_id,
                data=bytes(msg.data),
                is_extended_id=False,
            ),
        )

    def joint_position(self, arm: Arm, reply: Reply) -> float:
        """A real reply's position in the joint frame: plus the twin drive's zero (a host's
        set-zero frame moves both)."""
        return reply.position_rad + self._bus[arm].drives[reply.joint - 1].zero_rad

    def status(self, arm: Arm, joint: int) -> int:
        """The twin drive's status nibble (0 disabled, 1 enabled, an error)."""
        return int(self._bus[arm].drives[joint - 1].status)

    def prime(self, arm: Arm, statuses: dict, last_frames: dict) -> int:
        """Enable each twin drive whose real drive reported ENABLED and hand it the host's
        last frame on its ESC id (module doc); the drives primed."""
        primed = 0
        drives = self._bus[arm].drives
        for j, status in sorted(statuses.items()):
            drv = drives[j - 1]
            if status != Status.ENABLED or drv.enabled:
                continue
            enable = can.Message(
                arbitration_id=drv.esc_id,
                data=special_frame(SpecialCommand.ENABLE),
                is_extended_id=False,
            )
            self.feed(arm, enable, 0.0)
            last = last_frames.get(drv.esc_id)
            if last is not None:
                self.feed(arm, last, 0.0)
            primed += 1
        return primed

    def close(self) -> None:
        self.bank.close()


class MirrorTwin:
    """The lockstep twin of the mirror (see the module docstring); owned by one thread.

    start: {arm: real joint positions [rad, joint frame]}; start_stamp_s: bus time [s] of
    that state; tolerance_rad: alarm threshold per joint [rad]; settle_s: simulated time
    [s] the drives hold the start pose before bus time begins (None: the family's,
    ``BusProtocol.settle_s``); protocol: the robot's bus (None: ROB's Amber bus);
    start_velocity: {arm: joint velocities [rad/s]} the real drives reported with ``start``
    (None: at rest; a limp arm still swinging when the mirror starts swings on in the
    twin); alarm: how a joint alarms (``AlarmConfig``; None: ``max`` at ``tolerance_rad``);
    lag_gate: beside a rob-twin bank, the ``bank_lag_watch.LagGate`` that holds each compared
    reply until the bank's lag at its bus time is known and leaves the lagged ones out of
    the alarm statistic (counted per joint, ``frames_excluded_for_bank_lag``); None (the
    default, a real bus): every reply is judged at once."""

    def __init__(
        self,
        start: dict,
        start_stamp_s: float,
        tolerance_rad: float,
        parameters: TwinParameters | None = None,
        seed: int = 0,
        settle_s: float | None = None,
        protocol: BusProtocol | None = None,
        start_velocity: dict | None = None,
        alarm: AlarmConfig | None = None,
        lag_gate: LagGate | None = None,
    ):
        protocol = protocol or BusProtocol()
        if lag_gate is not None and not isinstance(lag_gate, LagGate):
            raise MirrorInputError("lag_gate", lag_gate, "a bank_lag_watch.LagGate or None")
        settle_s = protocol.settle_s if settle_s is None else settle_s
        if not (isinstance(tolerance_rad, (int, float)) and 0 < tolerance_rad < math.pi):
            raise MirrorInputError("tolerance_rad", tolerance_rad, "0 < tolerance < pi [rad]")
        if not (math.isfinite(start_stamp_s)):
            raise MirrorInputError("start_stamp_s", start_stamp_s, "a finite bus time [s]")
        if not (isinstance(settle_s, (int, float)) and 0 <= settle_s <= 10):
            raise MirrorInputError("settle_s", settle_s, "0 to 10 s")
        start = _check_start(start, protocol)
        self.protocol = protocol
        self.parameters = parameters or default_parameters()
        self.tolerance_rad = float(tolerance_rad)
        model = self.parameters.model
        if model is None:
            model = protocol.default_model()
        self.twin = Twin(TwinConfig(seed=seed), model=model)
        m, d = self.twin.model, self.twin.data
        self.dt = self.twin.scheduler.dt
        self.arms = tuple(start)
        self._qpos = {arm: self.twin.arm_qpos[arm] for arm in self.arms}
        for arm, q in start.items():  # the real joints, through the drives' installation
            d.qpos[self._qpos[arm]] = q
        d.qvel[:] = 0.0
        for arm, v in (start_velocity or {}).items():
            arm = Arm.parse(arm)
            if arm in start:
                d.qvel[_dofs(m, self._qpos[arm])] = _finite(v, len(start[arm]), "start_velocity")
        mujoco.mj_forward(m, d)
        self.drives = protocol.drives(self.twin, self.arms, self.parameters)
        self.bank = self.drives.bank
        self.twin.scheduler.add("bus", 1.0 / self.dt, lambda now: self.drives.service(now, self.dt))
        if settle_s:
            self.twin.run_for(settle_s)
        self._offset_s = self.twin.time - start_stamp_s  # simulated = bus time + offset
        self.start_stamp_s = float(start_stamp_s)
        self.compare = {arm: ArmComparison.of(protocol.joints[arm]) for arm in self.arms}
        self.alarm_config = alarm or default_alarm()
        floor_end = start_stamp_s + self.alarm_config.floor_s
        self.watch = {
            arm: [JointWatch(self.alarm_config, floor_end) for _ in range(protocol.joints[arm])]
            for arm in self.arms
        }
        self.delays = self._check_delays(self.parameters.delays)
        self._max_feedback_delay = max((fb for _, fb in self.delays.values()), default=0.0)
        self._pending: list[tuple[int, int, Arm, can.Message]] = []  # (step, order, arm, frame)
        self._order = itertools.count()
        self.alarms: list[Alarm] = []
        self._new_alarms: list[Alarm] = []  # since the last pop_alarms
        self._alarmed: set[tuple[Arm, int]] = set()
        self.lag_gate = lag_gate
        self._newest_s = -math.inf  # the newest reply stamp held [s, bus time]
        self.commands = 0
        self.first_command_stamp_s: float | None = None  # bus time of the first command fed
        self.late_frames = 0
        self.other_frames = 0
        self.malformed_feedback = 0
        self.register_replies = 0
        self.gripper_replies = 0
        self.primed_drives = 0
        self.limp_replies = 0  # replies of drives not enabled: followed, not compared
        self.status_mismatches = 0  # replies whose status differs from the twin drive's
        self._dof = {arm: _dofs(m, self._qpos[arm]) for arm in self.arms}
        # the twin's joints at each of the last HISTORY_S of steps (late replies' comparison)
        self._hist_len = max(1, int(round(HISTORY_S / self.dt)))
        self._hist = {arm: np.full((self._hist_len, len(q)), np.nan) for arm, q in start.items()}
        self._hist_qpos = np.concatenate([np.asarray(self._qpos[a]) for a in self.arms])
        self._hist_cols = np.cumsum([0] + [len(start[a]) for a in self.arms])
        self.late_compared = 0
        self.twin.scheduler.add("history", 1.0 / self.dt, self._remember)

    def _remember(self, now: float) -> None:
        """Keep the twin's joints of this step (before it is integrated: the state at ``now``)."""
        k = self.twin.scheduler.step_count % self._hist_len
        q = self.twin.data.qpos[self._hist_qpos]
        for i, arm in enumerate(self.arms):
            self._hist[arm][k] = q[self._hist_cols[i] : self._hist_cols[i + 1]]

    def _twin_at(self, arm: Arm, k: int, step: int) -> float:
        """Joint ``k`` of ``arm`` at physics step ``step`` [rad]: now, or from the history
        when the twin is already past it (and it is still held)."""
        now = self.twin.scheduler.step_count
        if step < now and now - step < self._hist_len:
            q = self._hist[arm][step % self._hist_len, k]
            if math.isfinite(q):
                self.late_compared += 1
                return float(q)
        return float(self.twin.data.qpos[self._qpos[arm][k]])

    def _check_delays(self, delays: dict | None) -> dict[Arm, tuple[float, float]]:
        """{mirrored arm: (command, feedback) delay [s]}: only arms with a delay."""
        out = {}
        for arm, pair in (delays or {}).items():
            arm = Arm.parse(arm)
            cmd, fb = (float(x) for x in pair)
            if not (0 <= cmd <= 0.5 and 0 <= fb <= 0.5):
                raise MirrorInputError(f"delays[{arm.value}]", pair, "0 to 0.5 s each")
            if arm in self.arms and (cmd or fb):
                out[arm] = (cmd, fb)
        return out

    def prime(self, arm: Arm, statuses: dict, last_frames: dict) -> int:
        """Bring the twin's drives of ``arm`` to the state the real ones reported before the
        twin existed: {joint: status nibble} and the host's last frame per command id
        (``BusProtocol`` family; nothing for Amber drives). The drives primed."""
        n = self.drives.prime(Arm.parse(arm), statuses, last_frames)
        self.primed_drives += n
        return n

    # ------------------------------------------------------------------ time
    def twin_time_of(self, stamp_s: float) -> float:
        """Simulated time [s] of bus time ``stamp_s`` [s]."""
        return stamp_s + self._offset_s

    def _step_of(self, stamp_s: float) -> int:
        return int(round(self.twin_time_of(stamp_s) / self.dt))

    def advance_to(self, stamp_s: float, count_late: bool = True) -> int:
        """Step the twin to the physics step of bus time ``stamp_s`` [s], handing the
        delayed host frames due on the way to the drives at their steps; the steps taken
        (0, and a late count with ``count_late``, when that step is already past)."""
        target = self._step_of(stamp_s)
        sched = self.twin.scheduler
        start = sched.step_count
        while self._pending and self._pending[0][0] <= target:
            due, _, arm, msg = heapq.heappop(self._pending)
            if due > sched.step_count:
                self.twin.step(due - sched.step_count)
            self.drives.feed(arm, msg, self.twin.time)
        n = target - sched.step_count
        if n < 0:
            if count_late:
                self.late_frames += 1
            return sched.step_count - start
        if n:
            self.twin.step(n)
        return sched.step_count - start

    # ------------------------------------------------------------------ frames
    def handle(self, arm: Arm, msg: can.Message, arrival_s: float | None = None) -> Alarm | None:
        """One frame seen on ``arm``'s bus: a host command, drive feedback or other."""
        if msg.is_extended_id or msg.is_remote_frame or arm not in self.arms:
            self.other_frames += 1
            return None
        kind, reply = self.protocol.classify(arm, msg)
        if kind == COMMAND:
            self.command(arm, msg)
            return None
        if kind == REPLY:
            return self.feedback(arm, msg, arrival_s, reply)
        if kind == MALFORMED:
            self.malformed_feedback += 1
        elif kind == REGISTER_REPLY:
            self.register_replies += 1
        elif kind == GRIPPER_REPLY:
            self.gripper_replies += 1
        else:
            self.other_frames += 1
        return None

    def command(self, arm: Arm, msg: can.Message) -> None:
        """The real host's command frame: to the twin's drive at the frame's step (plus the
        arm's command delay: held until the twin reaches it)."""
        stamp = float(msg.timestamp)
        self.commands += 1
        if self.first_command_stamp_s is None:
            self.first_command_stamp_s = stamp
        if not self.delays:
            self.advance_to(stamp)
            self.drives.feed(arm, msg, self.twin.time)
            return
        # replies stamped from now on are compared no earlier than this
        self.advance_to(stamp - self._max_feedback_delay, count_late=False)
        due = self._step_of(stamp + self.delays.get(arm, (0.0, 0.0))[0])
        if due <= self.twin.scheduler.step_count:  # already past: at the present step
            if due < self.twin.scheduler.step_count:
                self.late_frames += 1
            self.drives.feed(arm, msg, self.twin.time)
            return
        heapq.heappush(self._pending, (due, next(self._order), arm, msg))

    def feedback(
        self,
        arm: Arm,
        msg: can.Message,
        arrival_s: float | None = None,
        reply: Reply | None = None,
    ) -> Alarm | None:
        """The real drive's feedback (``reply``: decoded already): compared with the twin's
        joint at the frame's step; the new alarm, if this frame is the first of its joint
        beyond the tolerance. With a ``lag_gate`` the frame is held until the bank's lag at
        its stamp is known: the first alarm of the held frames judged now (every one:
        ``pop_alarms``)."""
        if reply is None:
            kind, reply = self.protocol.classify(arm, msg)
            if kind != REPLY or reply is None:
                self.malformed_feedback += 1
                return None
        fb = reply
        stamp = float(msg.timestamp)
        at = stamp - self.delays.get(arm, (0.0, 0.0))[1]
        self.advance_to(at)
        k = fb.joint - 1
        real = self.drives.joint_position(arm, fb)
        c = self.compare[arm]
        if fb.status is not None:
            twin_status = self.drives.status(arm, fb.joint)
            if twin_status is not None and twin_status != fb.status:
                self.status_mismatches += 1
            if fb.status != Status.ENABLED:  # limp or faulted: nothing drives it
                self._resync(arm, k, real, fb.velocity_rad_s)
                c.real_rad[k] = c.twin_rad[k] = real
                self.limp_replies += 1
                return None
        twin = self._twin_at(arm, k, self._step_of(at))
        diff = real - twin
        c.real_rad[k], c.twin_rad[k] = real, twin
        c.frames[k] += 1
        c.sum_sq[k] += diff * diff
        c.max_abs_diff_rad[k] = max(c.max_abs_diff_rad[k], abs(diff))
        over = abs(diff) > self.tolerance_rad
        if over:
            c.over_tolerance[k] += 1
        sample = _Sample(arm, fb.joint, stamp, real, twin, diff, arrival_s)
        if self.lag_gate is None:
            return self._judge(sample)
        self.lag_gate.push(stamp, sample)
        released = self.judge_pending(stamp)
        return released[0] if released else None

    def judge_pending(self, newest_s: float | None = None, final: bool = False) -> list[Alarm]:
        """Judge the samples held for the bank's lag (``bank_lag_watch.LagGate``) that the
        watch knows by now, or that waited past its ``max_wait_s`` before bus time
        ``newest_s`` [s] (default: the newest stamp seen), or all with ``final``: the new
        alarms (also in ``pop_alarms``). Nothing without a lag watch."""
        if self.lag_gate is None:
            return []
        if newest_s is not None:
            self._newest_s = max(self._newest_s, newest_s)
        out = []
        for sample, state in self.lag_gate.release(self._newest_s, final):
            if state == LAGGED:
                self.compare[sample.arm].excluded_for_bank_lag[sample.joint - 1] += 1
                continue
            alarm = self._judge(sample)
            if alarm is not None:
                out.append(alarm)
        return out

    def pop_alarms(self) -> list[Alarm]:
        """The alarms raised since the last call (a held sample's alarm comes later than
        its frame: ``judge_pending``)."""
        out, self._new_alarms = self._new_alarms, []
        return out

    def _judge(self, s: _Sample) -> Alarm | None:
        """One compared sample into its joint's alarm statistic: the new alarm, if this is
        the first of its joint beyond the tolerance or the windowed RMS threshold."""
        arm, stamp, diff = s.arm, s.stamp_s, s.diff_rad
        watch = self.watch[arm][s.joint - 1]
        rms_over = watch.add(stamp, diff) and self.alarm_config.kind == "rms"
        over = abs(diff) > self.tolerance_rad
        if not (over or rms_over) or (arm, s.joint) in self._alarmed:
            return None
        self._alarmed.add((arm, s.joint))
        by_rms = rms_over and not over  # a gross frame is reported as such
        alarm = Alarm(
            arm=arm.value,
            joint=s.joint,
            stamp_s=stamp,
            twin_s=self.twin.time,
            real_rad=s.real_rad,
            twin_rad=s.twin_rad,
            diff_rad=diff,
            tolerance_rad=watch.threshold if by_rms else self.tolerance_rad,
            arrival_s=s.arrival_s,
            statistic="rms" if by_rms else "max",
            rms_rad=watch.rms,
            window_s=self.alarm_config.window_s,
            floor_rad=watch.floor,
        )
        self.alarms.append(alarm)
        self._new_alarms.append(alarm)
        return alarm

    def _resync(self, arm: Arm, k: int, position_rad: float, velocity_rad_s) -> None:
        """Put the twin's joint ``k`` of ``arm`` where the real one reported itself."""
        d = self.twin.data
        d.qpos[self._qpos[arm][k]] = position_rad
        if velocity_rad_s is not None and math.isfinite(velocity_rad_s):
            d.qvel[self._dof[arm][k]] = velocity_rad_s

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
            "family": self.protocol.family,
            "tolerance_rad": self.tolerance_rad,
            "alarm": self.alarm_config.record(),
            "transport_delays_s": {a.value: list(d) for a, d in self.delays.items()},
            "twin_time_s": round(self.twin.time, 6),
            "commands_fed": self.commands,
            "first_command_stamp_s": self.first_command_stamp_s,
            "late_frames": self.late_frames,
            "late_replies_compared_at_their_time": self.late_compared,
            "other_frames": self.other_frames,
            "malformed_feedback": self.malformed_feedback,
            "register_replies": self.register_replies,
            "gripper_replies": self.gripper_replies,
            "primed_drives": self.primed_drives,
            "limp_replies": self.limp_replies,
            "status_mismatches": self.status_mismatches,
            "arms": {
                arm.value: {**c.summary(), **_watch_summary(self.watch[arm])}
                for arm, c in self.compare.items()
            },
            "alarms": [a.record() for a in self.alarms],
        }

    def close(self) -> None:
        self.drives.close()


def _watch_summary(watches: list[JointWatch]) -> dict:
    """Per joint: the start-up floor, the RMS threshold and the largest windowed RMS [rad]
    (None where the floor was not measured yet)."""

    def r(v):
        return None if v is None else round(float(v), 6)

    return {
        "floor_rms_rad": [r(w.floor) for w in watches],
        "rms_threshold_rad": [r(w.threshold) for w in watches],
        "max_window_rms_rad": [r(w.max_rms if w.floor is not None else None) for w in watches],
    }


def _rounded(values: np.ndarray) -> list:
    return [None if not math.isfinite(v) else round(float(v), 6) for v in values]
