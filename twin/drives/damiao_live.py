"""The Damiao bank of ``rob-twin bank``: every command frame answered on receipt.

A real Damiao drive answers each frame addressed to it within a few hundred microseconds,
and hosts count on it (LeRobot waits 1 ms for the replies to its MIT frames; openarm_can
500 us). The lockstep ``DamiaoBank`` answers at its next physics step, which on a
real-time bank would add up to a step and a pacing sleep; this bank answers in the thread
that received the frame instead:

- the I/O side (the socketcand server's I/O thread, or ``BusResponder``'s thread for a
  SocketCAN interface) hands every frame to ``respond(channel, msg)``; under the bank's
  lock the addressed ``DamiaoDrive`` takes the command (enable, MIT set point, register
  write ...) and computes its reply from the *latest state snapshot*, and the reply goes out
  at once, stamped in Unix time;
- the physics thread, in ``service(now, dt)`` before every step, under the same lock,
  publishes the snapshot (each drive's joint position and velocity after the previous
  step), applies the faults in force, runs a second writer's frames through the drives,
  and writes each drive's impedance torque (from the command it holds now) to its motor.

So a reply carries the joint state at most one physics step old, plus whatever the
pacing sleep adds (the bank runs ``steps_per_wake`` steps per wake), and the torque of the
last step. Drives send nothing unsolicited.

Drives per bus: one per arm joint (ESC 0x01.., MST 0x11.., the motors of the robot file's
``drives.motors``), and, when the arm has a ``gripper_actuator``, a gripper drive (OpenArm:
ESC 0x08 / MST 0x18, a DM4310). The gripper actuator is turned into a torque motor of the
drive's peak torque (the file's MuJoCo position servo would fight the drive); the gripper
drive reports and is commanded in the model's finger joint angle [rad]: the model's finger
joint stands for the motor shaft, 1:1 (no linkage ratio is modelled).

Routing (``DamiaoDrive.accepts``): ESC id (MIT and special frames), ESC id + 0x100 / 0x200
/ 0x300 (POS_VEL, VEL, POS_FORCE), 0x7FF register frames by the ESC id in their first two
bytes. Frames for no drive of the bus, extended, remote and error frames are counted
(``not_for_us``) and not answered; what the drive does with a frame (and whether it
answers) is ``rob_twin.twin.drives.damiao_drive``'s.

CAN FD: on a bus the robot file declares FD (``drives.bus = "fd:..."``) a reply takes the
format of the frame it answers (FD with the same bit-rate switch, or classic: the drive's
``DriveReply``), as a drive configured for FD does for openarm_can (FD + BRS) and LeRobot
(FD without BRS); on a classic bus every reply is classic.

Faults (``rob_twin.twin.sim.faults``): ``feedback_freeze`` (the listed drives take commands
but do not answer), ``encoder_offset`` (reported position shifted), ``power_loss`` (no
answer, no torque), ``stall`` (the joint jammed), ``second_writer`` (another node writes MIT
hold frames on every ESC id; the drives obey and answer them, and every client sees both).
Per-joint faults name joints 1..7; the gripper drive is hit only by faults on all joints.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import can
import mujoco
import numpy as np
from rob_twin.controllers.damiao_codec import (
    MitCommand,
    Register,
    Scaling,
    encode_mit,
)
from rob_twin.models import damiao_motors as DM
from rob_twin.models import names as N
from rob_twin.models.errors import RobTwinError
from rob_twin.models.names import Arm, UnknownNameError
from rob_twin.twin.drives.damiao_bank import apply_drive_faults
from rob_twin.twin.drives.damiao_drive import DamiaoDrive, DamiaoDriveConfig
from rob_twin.twin.drives.joint_friction import FrictionOnJoints
from rob_twin.twin.drives.joint_jam import JointJams
from rob_twin.twin.sim.faults import FaultKind, FaultSchedule

__all__ = [
    "BusResponder",
    "LiveBankError",
    "LiveDamiaoBank",
    "LiveDamiaoBus",
    "gripper_drive_ids",
]

# The gripper drive (models/damiao_motors.py): the 8th drive on each arm's bus, ESC 0x08,
# MST 0x18, a DM4310 on OpenArm.
GRIPPER_ESC_ID = DM.GRIPPER_ESC_ID
GRIPPER_MST_ID = DM.GRIPPER_MST_ID
GRIPPER_MOTOR: DM.MotorLimits = DM.OPENARM_GRIPPER_MOTOR
GRIPPER_NAME = "gripper"
# the MIT hold a second writer sends: kp [Nm/rad], kd [Nm s/rad]
SECOND_WRITER_KP, SECOND_WRITER_KD = 20.0, 1.0

Outlet = Callable[[list[can.Message]], None]


class LiveBankError(RobTwinError):
    """The robot cannot be served by the live Damiao bank."""


def gripper_drive_ids() -> tuple[int, int]:
    """(ESC, MST) ids of the gripper drive."""
    return GRIPPER_ESC_ID, GRIPPER_MST_ID


@dataclass
class LiveBusCounters:
    frames_in: int = 0  # every frame the bank saw on the bus (host's and a second writer's)
    command_frames: int = 0  # frames addressed to a drive of this bus
    replies: int = 0
    unanswered: int = 0  # addressed, but the drive did not answer (malformed, wrong mode ...)
    silenced: int = 0  # answers a feedback_freeze fault withheld
    unpowered: int = 0  # frames that met a bus without power (power_loss)
    not_for_us: int = 0  # ids no drive of this bus answers to; extended/remote/error frames
    second_writer_frames: int = 0


@dataclass(kw_only=True)
class LiveDamiaoBus:
    """The Damiao drives on one bus. ``qpos``: the arm joints' qpos indices (status);
    ``drive_qpos``/``drive_dof``/``drive_actuators``: per drive (arm joints, then the
    gripper); ``q``/``dq``: the state snapshot per drive (under the bank's lock)."""

    channel: str
    arm: Arm
    drives: list[DamiaoDrive]
    names: tuple[str, ...]
    qpos: np.ndarray
    drive_qpos: np.ndarray
    drive_dof: np.ndarray
    drive_actuators: np.ndarray
    fd: bool
    counters: LiveBusCounters = field(default_factory=LiveBusCounters)
    logger: can.Listener | None = None
    powered: bool = True
    silent: tuple[bool, ...] = ()
    stalled: tuple[bool, ...] = ()
    encoder_offset_rad: tuple[float, ...] = ()
    q: list[float] = field(default_factory=list)
    dq: list[float] = field(default_factory=list)
    outlet: Outlet | None = None
    writer_next_s: float | None = None

    def __post_init__(self) -> None:
        n = len(self.drives)
        self.silent = self.silent or (False,) * n
        self.stalled = self.stalled or (False,) * n
        self.encoder_offset_rad = self.encoder_offset_rad or (0.0,) * n
        self.q = self.q or [0.0] * n
        self.dq = self.dq or [0.0] * n

    @property
    def reply_ids(self) -> frozenset[int]:
        return frozenset(d.mst_id for d in self.drives)

    def drive_for(self, ident: int, data: bytes) -> int | None:
        """Index of the drive a frame on ``ident`` is addressed to (None: no drive here):
        its ESC id, a mode's id (ESC + 0x100 / 0x200 / 0x300) or 0x7FF naming its ESC id
        (``DamiaoDrive.accepts``)."""
        return next((k for k, d in enumerate(self.drives) if d.accepts(ident, data)), None)


def _joint_index(model: mujoco.MjModel, name: str) -> tuple[int, int]:
    j = model.joint(name).id
    return int(model.jnt_qposadr[j]), int(model.jnt_dofadr[j])


def _check_arm(robot, arm: Arm) -> None:
    """LiveBankError when ``robot``'s file names another count of motors than ``arm`` has
    joints, or more joints than the bus has ids."""
    n = robot.joint_count(arm)
    if len(robot.motors) != n:
        raise LiveBankError(
            f"robot {robot.name!r}: drives.motors names {len(robot.motors)} motors for the "
            f"{arm.value} arm's {n} joints"
        )
    if n > len(DM.ESC_IDS):
        raise LiveBankError(f"robot {robot.name!r}: {n} joints, ids for {len(DM.ESC_IDS)}")


class LiveDamiaoBank:
    """All Damiao drives of the bank process. ``model``/``data`` belong to the physics thread
    (``service``); ``respond`` runs in any I/O thread; the two meet under one lock.

    robot: a ``Robot`` with Damiao drives; wiring: {channel: arm whose drives sit on it};
    fd: the buses carry CAN FD (the robot file's ``drives.bus``); values: a calibration's
    parameter values (its drive side: friction, gain factors, zeros; the model side is the
    caller's ``model``)."""

    def __init__(
        self,
        robot,
        model: mujoco.MjModel,
        data: mujoco.MjData,
        wiring: dict[str, Arm],
        faults: FaultSchedule | None = None,
        fd: bool = False,
        now: float = 0.0,
        values: dict[str, float] | None = None,
    ):
        if robot.family != "damiao":
            raise LiveBankError(
                f"robot {robot.name!r} has drives.family {robot.family!r}; the Damiao bank "
                "serves drives.family 'damiao'"
            )
        self.model, self.data = model, data
        self.faults = faults if faults is not None else FaultSchedule()
        self.fd = fd
        self._lock = threading.Lock()
        self._now = now
        self._jams = JointJams(model, data)
        self._faulted = False  # the schedule had faults at the previous step
        self._gripper_saved: dict[int, tuple] = {}
        self.buses: dict[str, LiveDamiaoBus] = {}
        for arm in {Arm.parse(a) for a in wiring.values()}:
            _check_arm(robot, arm)
        # the robot's drives with a calibration's drive values (gain factors, encoder zeros,
        # joint friction) over the robot file's
        from rob_twin.twin.calibration.apply import damiao_drives

        configs, friction = damiao_drives(dict(values or {}), robot)
        for channel, arm in wiring.items():
            arm = Arm.parse(arm)
            self.buses[channel] = self._build_bus(channel, arm, now, configs[arm])
        # each arm's identified joint friction, in place of the MJCF's (joint_friction)
        self.friction = [
            FrictionOnJoints(model, ad.drive_dof[: robot.joint_count(ad.arm)], friction[ad.arm])
            for ad in self.buses.values()
            if friction[ad.arm] is not None
        ]
        self._publish()

    def _build_bus(
        self, channel: str, arm: Arm, now: float, arm_configs: tuple[DamiaoDriveConfig, ...]
    ) -> LiveDamiaoBus:
        """``arm``'s bus: a drive per joint (``arm_configs``), and the gripper's where the
        model drives a gripper joint."""
        m = self.model
        n = len(arm_configs)
        configs = list(arm_configs)
        names = [f"j{k}" for k in range(1, n + 1)]
        joints = [_joint_index(m, N.arm_joint(arm, k)) for k in range(1, n + 1)]
        acts = [m.actuator(N.arm_actuator(arm, k)).id for k in range(1, n + 1)]
        grip = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_ACTUATOR, N.gripper_actuator(arm))
        if grip >= 0 and int(m.actuator_trntype[grip]) == int(mujoco.mjtTrn.mjTRN_JOINT):
            configs.append(
                DamiaoDriveConfig(motor=GRIPPER_MOTOR, esc_id=GRIPPER_ESC_ID, mst_id=GRIPPER_MST_ID)
            )
            names.append(GRIPPER_NAME)
            jid = int(m.actuator_trnid[grip, 0])
            joints.append((int(m.jnt_qposadr[jid]), int(m.jnt_dofadr[jid])))
            acts.append(grip)
            self._torque_motor(grip, GRIPPER_MOTOR.peak_torque_nm)
        numbers = [*range(1, n + 1), DM.GRIPPER_DRIVE_NUMBER][: len(configs)]
        drives = [DamiaoDrive(j, c) for j, c in zip(numbers, configs, strict=True)]
        for d in drives:
            d.last_command_s = now
        return LiveDamiaoBus(
            channel=channel,
            arm=arm,
            drives=drives,
            names=tuple(names),
            qpos=np.array([q for q, _ in joints[:n]]),
            drive_qpos=np.array([q for q, _ in joints]),
            drive_dof=np.array([v for _, v in joints]),
            drive_actuators=np.array(acts),
            fd=self.fd,
        )

    def _torque_motor(self, act: int, peak_nm: float) -> None:
        """Make actuator ``act`` a torque motor limited to ``peak_nm`` (restored on close)."""
        m = self.model
        self._gripper_saved[act] = (
            int(m.actuator_gaintype[act]),
            int(m.actuator_biastype[act]),
            m.actuator_gainprm[act].copy(),
            m.actuator_biasprm[act].copy(),
            m.actuator_ctrlrange[act].copy(),
            int(m.actuator_ctrllimited[act]),
        )
        m.actuator_gaintype[act] = int(mujoco.mjtGain.mjGAIN_FIXED)
        m.actuator_biastype[act] = int(mujoco.mjtBias.mjBIAS_NONE)
        m.actuator_gainprm[act] = 0.0
        m.actuator_gainprm[act, 0] = 1.0
        m.actuator_biasprm[act] = 0.0
        m.actuator_ctrlrange[act] = (-peak_nm, peak_nm)
        m.actuator_ctrllimited[act] = 1
        self.data.ctrl[act] = 0.0

    # ------------------------------------------------------------------ wiring
    def attach(self, channel: str, outlet: Outlet) -> None:
        """Where frames the bank makes by itself (a second writer's, and the drives' answers
        to them) go out on ``channel``."""
        self.buses[channel].outlet = outlet

    @property
    def reply_ids(self) -> frozenset[int]:
        """Every id the bank's drives answer on (a client's frame there is a foreign reply)."""
        return frozenset().union(*(ad.reply_ids for ad in self.buses.values()))

    def drives_of(self, arm: Arm | str) -> LiveDamiaoBus:
        arm = Arm.parse(arm)
        for ad in self.buses.values():
            if ad.arm is arm:
                return ad
        raise UnknownNameError("arm on the bank's buses", arm.value, list(self.wiring().values()))

    def wiring(self) -> dict[str, str]:
        return {ch: ad.arm.value for ch, ad in self.buses.items()}

    # ------------------------------------------------------------------ the I/O side
    def respond(self, channel: str, msg: can.Message) -> list[can.Message]:
        """The drives' answers to ``msg`` (a frame received on ``channel``), at once."""
        ad = self.buses.get(channel)
        if ad is None:
            return []
        with self._lock:
            return self._handle(ad, msg, self._now)

    def _handle(self, ad: LiveDamiaoBus, msg: can.Message, now: float) -> list[can.Message]:
        """Under the lock: one frame into its drive; the reply (stamped now, Unix time)."""
        c = ad.counters
        c.frames_in += 1
        if ad.logger is not None:
            ad.logger.on_message_received(msg)
        if msg.is_extended_id or msg.is_remote_frame or msg.is_error_frame:
            c.not_for_us += 1
            return []
        data = bytes(msg.data)
        k = ad.drive_for(msg.arbitration_id, data)
        if k is None:
            c.not_for_us += 1
            return []
        if not ad.powered:
            c.unpowered += 1
            return []
        c.command_frames += 1
        fd = ad.fd and msg.is_fd  # a classic bus carries no FD frame, whatever a client says
        reply = ad.drives[k].on_frame(
            msg.arbitration_id,
            data,
            now,
            ad.q[k] + ad.encoder_offset_rad[k],
            ad.dq[k],
            is_fd=fd,
            bitrate_switch=fd and msg.bitrate_switch,
        )
        if reply is None:
            c.unanswered += 1
            return []
        if ad.silent[k]:
            c.silenced += 1
            return []
        out = can.Message(
            timestamp=time.time(),
            arbitration_id=reply.arbitration_id,
            data=reply.data,
            is_extended_id=False,
            is_fd=reply.is_fd,
            bitrate_switch=reply.bitrate_switch,
            channel=ad.channel,
        )
        c.replies += 1
        if ad.logger is not None:
            ad.logger.on_message_received(out)
        return [out]

    # ------------------------------------------------------------------ the physics side
    def service(self, now: float, dt: float) -> None:
        """Before a physics step: publish the state, apply faults, write the torques."""
        d = self.data
        outgoing: list[tuple[LiveDamiaoBus, list[can.Message]]] = []
        with self._lock:
            self._now = now
            self._publish()
            faulted, self._faulted = self._faulted, bool(self.faults)
            for ad in self.buses.values():
                if faulted or self._faulted:  # once more after the last fault went: reset
                    self._apply_faults(ad, now)
                    frames = self._second_writer(ad, now)
                    if frames:
                        outgoing.append((ad, frames))
                if not ad.powered:
                    d.ctrl[ad.drive_actuators] = 0.0
                    continue
                d.ctrl[ad.drive_actuators] = [
                    drv.torque(q, v, now) for drv, q, v in zip(ad.drives, ad.q, ad.dq, strict=True)
                ]
            for joints in self.friction:
                joints.apply(d)
        for ad, frames in outgoing:
            if ad.outlet is not None:
                ad.outlet(frames)

    def emit_feedback(self, now: float) -> None:
        """Nothing: Damiao drives answer each frame and send nothing unsolicited."""

    def _publish(self) -> None:
        """Under the lock (or before any I/O): each drive's joint state now."""
        d = self.data
        for ad in self.buses.values():
            ad.q = d.qpos[ad.drive_qpos].tolist()
            ad.dq = d.qvel[ad.drive_dof].tolist()

    def _apply_faults(self, ad: LiveDamiaoBus, now: float) -> None:
        apply_drive_faults(self.faults, ad, ad.drive_dof, self._jams, now)

    def _second_writer(self, ad: LiveDamiaoBus, now: float) -> list[can.Message]:
        """Under the lock: a second writer's MIT hold frames, when due, and the answers."""
        spec = self.faults.first(FaultKind.SECOND_WRITER, ad.arm, now)
        if spec is None:
            ad.writer_next_s = None
            return []
        if ad.writer_next_s is not None and now + 1e-12 < ad.writer_next_s:
            return []
        ad.writer_next_s = now + 1.0 / spec.params["rate_hz"]
        frames: list[can.Message] = []
        hold = MitCommand(spec.params["position_rad"], 0.0, SECOND_WRITER_KP, SECOND_WRITER_KD, 0.0)
        for drv in ad.drives:
            msg = can.Message(
                timestamp=time.time(),
                arbitration_id=drv.esc_id,
                data=encode_mit(hold, Scaling.of(drv.config.motor)),
                is_extended_id=False,
                is_fd=ad.fd,
                channel=ad.channel,
            )
            ad.counters.second_writer_frames += 1
            frames.append(msg)
            frames += self._handle(ad, msg, now)
        return frames

    # ------------------------------------------------------------------ status
    def bus_status(self, ad: LiveDamiaoBus) -> dict:
        """Per drive: name, ids, status nibble, enabled, control mode, last torque [Nm],
        reported position [rad]; the gripper's position when there is one."""
        with self._lock:
            drives = [
                {
                    "drive": name,
                    "esc_id": drv.esc_id,
                    "mst_id": drv.mst_id,
                    "status": drv.status,
                    "enabled": drv.enabled,
                    "mode": int(drv.registers[Register.CTRL_MODE]),  # 1 MIT .. 4 POS_FORCE
                    "torque_nm": round(drv.last_torque_nm, 4),
                    "position_rad": round(q - drv.zero_rad + off, 5),
                    "silent": silent,
                }
                for name, drv, q, off, silent in zip(
                    ad.names, ad.drives, ad.q, ad.encoder_offset_rad, ad.silent, strict=True
                )
            ]
        out: dict = {"drives": drives}
        if GRIPPER_NAME in ad.names:
            out["gripper_position_rad"] = round(ad.q[ad.names.index(GRIPPER_NAME)], 5)
        return out

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        for ad in self.buses.values():
            if ad.logger is not None:
                ad.logger.stop()
        self._jams.release_all()
        m = self.model
        for act, (gt, bt, gp, bp, cr, cl) in self._gripper_saved.items():
            m.actuator_gaintype[act], m.actuator_biastype[act] = gt, bt
            m.actuator_gainprm[act], m.actuator_biasprm[act] = gp, bp
            m.actuator_ctrlrange[act], m.actuator_ctrllimited[act] = cr, cl
        self._gripper_saved.clear()


class BusResponder:
    """Serves a python-can bus (a SocketCAN interface) with a responder: a thread receives
    every frame, hands it to ``respond(channel, msg)`` and sends the replies at once.
    ``send`` puts the bank's own frames on the bus (any thread). ``close()`` ends the
    thread (within ``poll_s``) and shuts the bus down."""

    def __init__(
        self,
        bus: can.BusABC,
        channel: str,
        respond: Callable[[str, can.Message], list[can.Message]],
        poll_s: float = 0.1,
    ):
        self.bus, self.channel, self._respond, self.poll_s = bus, channel, respond, poll_s
        self.frames_in = 0
        self.replies = 0
        self.errors = 0
        self.last_error = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"bank-rx-{channel}", daemon=True)

    def start(self) -> BusResponder:
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                msg = self.bus.recv(timeout=self.poll_s)
            except can.CanError as err:
                self.errors += 1
                self.last_error = f"receive on {self.channel} failed: {err}"
                continue
            if msg is None:
                continue
            self.frames_in += 1
            try:
                replies = self._respond(self.channel, msg)
            except Exception as err:  # noqa: BLE001 - counted and reported; serving goes on
                self.errors += 1
                self.last_error = f"responder failed on id 0x{msg.arbitration_id:X}: {err!r}"
                continue
            self.send(replies)
            self.replies += len(replies)

    def send(self, frames: list[can.Message]) -> None:
        for m in frames:
            try:
                self.bus.send(m)
            except can.CanError as err:
                self.errors += 1
                self.last_error = f"send on {self.channel} failed: {err}"

    def report(self) -> dict:
        return {
            "frames_in": self.frames_in,
            "replies": self.replies,
            "errors": self.errors,
            "last_error": self.last_error,
        }

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2.0)
        self.bus.shutdown()
