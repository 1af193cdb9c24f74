"""The simulated CAN motor bank: seven drives per arm, each arm on its own bus.

``wiring`` says which arm's drives sit on which bus channel; on ROB the RIGHT arm
(L-10) is on CAN10 and the LEFT arm (R-11) on CAN11 (``rob_twin.models.names.BUS_MAPPING``).
A swapped wiring is a fault the rehearsal must catch.

Every physics step ``service(now, dt)``: apply the drive faults in force, read every
frame waiting on each bus, hand position commands to their drives, advance each
drive's setpoint and write it to the joint's MuJoCo position servo. ``emit_feedback``
(at the feedback rate, 20 Hz by default) sends one 8-byte frame per powered joint.
Frames on other ids, and malformed command frames, are counted and otherwise ignored
(a drive never guesses). With ``log_dir`` every frame seen or sent on a bus is
written by python-can's standard logger (``CAN10@run.log``; suffix picks the format).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import can
import mujoco
import numpy as np
from rob_twin.controllers.codec import decode_command, encode_sample
from rob_twin.controllers.errors import CodecError
from rob_twin.models import dimensions as D
from rob_twin.models.loading import arm_actuator_indices, arm_qpos_indices
from rob_twin.models.names import (
    COMMAND_IDS,
    JOINTS_PER_ARM,
    Arm,
    UnknownNameError,
    arm_joints,
)
from rob_twin.twin.bus.wire import open_virtual
from rob_twin.twin.drives.amber_drive import (
    DRIVE_FRAME,
    DriveConfig,
    DriveConfigError,
    SimulatedDrive,
)
from rob_twin.twin.drives.joint_jam import JointJams
from rob_twin.twin.sim.faults import FaultKind, FaultSchedule


def default_drive_configs() -> tuple[DriveConfig, ...]:
    """Drives of one arm from ``rob_twin.models.dimensions`` (limits, no-load speeds, peak torque).

    ASSUMED torque constant: peak torque maps to 20 drive units of current."""
    return tuple(
        DriveConfig(
            lower_rad=s.lower,
            upper_rad=s.upper,
            max_velocity_rad_s=s.velocity_limit,
            amps_per_nm=20.0 / s.effort_limit,
        )
        for s in D.ARM_JOINTS
    )


@dataclass
class BusCounters:
    command_frames: int = 0
    malformed_frames: int = 0
    other_frames: int = 0
    feedback_frames: int = 0
    second_writer_frames: int = 0


@dataclass(kw_only=True)
class BusDrives:
    """What every bank knows of one bus: its arm, and where that arm lives in the MuJoCo
    model (indices of its joints' qpos, dofs and actuators); a traffic logger; whether
    the drives are powered; which drives are stalled."""

    channel: str
    arm: Arm
    bus: can.BusABC
    qpos: np.ndarray
    dof: np.ndarray
    actuators: np.ndarray
    logger: can.Listener | None = None
    powered: bool = True
    stalled: tuple[bool, ...] = (False,) * JOINTS_PER_ARM


@dataclass(kw_only=True)
class ArmDrives(BusDrives):
    """The Amber drives on one bus."""

    drives: list[SimulatedDrive]
    counters: BusCounters = field(default_factory=BusCounters)
    qpos_at: slice | np.ndarray = field(init=False, repr=False)
    ctrl_at: slice | np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # per-step reads/writes: a slice when the indices are contiguous (they are in
        # ROB's model), which numpy serves without a fancy-index gather/scatter
        self.qpos_at = _contiguous(self.qpos)
        self.ctrl_at = _contiguous(self.actuators)


def _contiguous(idx: np.ndarray) -> slice | np.ndarray:
    """``idx`` as an equivalent slice when it is a run of consecutive indices."""
    if len(idx) and np.array_equal(idx, np.arange(idx[0], idx[0] + len(idx))):
        return slice(int(idx[0]), int(idx[0]) + len(idx))
    return idx


class BankBuses:
    """The bus plumbing every drive bank shares (Amber ``MotorBank``, ``DamiaoBank``):
    ``buses`` maps a channel to that arm's drives (``.arm``, ``.channel``, ``.bus``,
    ``.logger``); a second writer's virtual buses; bus loggers."""

    buses: dict

    @classmethod
    def _bus_fields(
        cls,
        model: mujoco.MjModel,
        channel: str,
        arm: Arm | str,
        log_dir: Path | str | None,
        log_suffix: str,
    ) -> dict:
        """The ``BusDrives`` fields of ``channel`` carrying ``arm``'s drives: its virtual bus,
        where the arm lives in ``model`` (qpos, dof and actuator indices), its logger."""
        arm = Arm.parse(arm)
        return dict(
            channel=channel,
            arm=arm,
            bus=open_virtual(channel),
            qpos=arm_qpos_indices(model, arm),
            dof=np.array([model.jnt_dofadr[model.joint(n).id] for n in arm_joints(arm)]),
            actuators=arm_actuator_indices(model, arm),
            logger=cls._open_logger(log_dir, channel, log_suffix),
        )

    @staticmethod
    def _open_logger(log_dir: Path | str | None, channel: str, log_suffix: str):
        """A python-can logger for ``channel``'s traffic under ``log_dir`` (None: no log)."""
        if log_dir is None:
            return None
        path = Path(log_dir) / f"{channel.replace('/', '_')}{log_suffix}"
        path.parent.mkdir(parents=True, exist_ok=True)
        return can.Logger(str(path))

    def drives_of(self, arm: Arm | str):
        arm = Arm.parse(arm)
        for ad in self.buses.values():
            if ad.arm is arm:
                return ad
        raise UnknownNameError("arm on the bank's buses", arm.value, list(self.wiring().values()))

    def wiring(self) -> dict[str, str]:
        return {ch: ad.arm.value for ch, ad in self.buses.items()}

    def _second_writer_due(self, ad, now: float):
        """The SECOND_WRITER fault spec when its writer should send on ``ad``'s bus now
        (at its ``rate_hz``), else None; opens the writer's bus on first use."""
        spec = self.faults.first(FaultKind.SECOND_WRITER, ad.arm, now)
        if spec is None:
            return None
        ch = ad.channel
        if ch not in self._writers:
            self._writers[ch] = open_virtual(ch)
            self._writer_next[ch] = now
        if now + 1e-12 < self._writer_next[ch]:
            return None
        self._writer_next[ch] = now + 1.0 / spec.params["rate_hz"]
        return spec

    def _close_buses(self) -> None:
        for ad in self.buses.values():
            if ad.logger is not None:
                ad.logger.stop()
            ad.bus.shutdown()
        for bus in self._writers.values():
            bus.shutdown()


class MotorBank(BankBuses):
    """All drives of the twin. model/data: the twin's (owned by the stepping thread).

    wiring: {channel: arm whose drives sit on that bus}; faults: the run's schedule;
    configs: per-joint drive configs, one tuple for every arm or a tuple per arm
    (``{Arm: configs}``, e.g. a calibration's; default ``default_drive_configs()``)."""

    def __init__(
        self,
        model: mujoco.MjModel,
        data: mujoco.MjData,
        wiring: dict[str, Arm],
        faults: FaultSchedule | None = None,
        configs: tuple[DriveConfig, ...] | dict[Arm, tuple[DriveConfig, ...]] | None = None,
        log_dir: Path | str | None = None,
        log_suffix: str = ".log",
        now: float = 0.0,
    ):
        self.model, self.data = model, data
        # views of the joint and control arrays, fetched once: the bindings build a new
        # array object on every attribute read, and service() runs every physics step
        self._qpos, self._ctrl = data.qpos, data.ctrl
        self.faults = faults if faults is not None else FaultSchedule()
        configs = configs or default_drive_configs()
        per_arm = configs if isinstance(configs, dict) else {arm: configs for arm in Arm}
        for arm in set(wiring.values()):
            if len(per_arm.get(arm, ())) != JOINTS_PER_ARM:
                raise DriveConfigError(
                    f"need {JOINTS_PER_ARM} drive configs for {arm}, "
                    f"got {len(per_arm.get(arm, ()))}"
                )
        self._gain = model.actuator_gainprm[:, 0].copy()
        self._bias = model.actuator_biasprm[:, :3].copy()
        self._jams = JointJams(model, data)
        self._faults_were_set = False  # the schedule held faults at the last service
        self.buses: dict[str, ArmDrives] = {}
        for channel, arm in wiring.items():
            fields = self._bus_fields(model, channel, arm, log_dir, log_suffix)
            q0 = data.qpos[fields["qpos"]]
            drives = [
                SimulatedDrive(j, per_arm[arm][j - 1], float(q0[j - 1]), now)
                for j in range(1, JOINTS_PER_ARM + 1)
            ]
            self.buses[channel] = ArmDrives(drives=drives, **fields)
        self._writers: dict[str, can.BusABC] = {}
        self._writer_next: dict[str, float] = {}

    # ------------------------------------------------------------------ per step
    def service(self, now: float, dt: float) -> None:
        """Apply faults, decode waiting commands, advance setpoints, write the servos."""
        # once more after the schedule empties (clear_faults): a jam, a power loss or a
        # frozen drive of the last fault is lifted, not left in force
        faults, qpos, ctrl = bool(self.faults) or self._faults_were_set, self._qpos, self._ctrl
        self._faults_were_set = bool(self.faults)
        for ad in self.buses.values():
            if faults:
                self._apply_drive_faults(ad, now)
                self._second_writer(ad, now)
            recv = ad.bus.recv
            while (msg := recv(timeout=0)) is not None:
                self._handle(ad, msg, now)
            if ad.powered:
                q = qpos[ad.qpos_at].tolist()
                ctrl[ad.ctrl_at] = [
                    drv.update(now, dt, qk) for drv, qk in zip(ad.drives, q, strict=True)
                ]

    def _handle(self, ad: ArmDrives, msg: can.Message, now: float) -> None:
        if ad.logger is not None:
            ad.logger.on_message_received(msg)
        if msg.arbitration_id not in COMMAND_IDS or msg.is_extended_id:
            ad.counters.other_frames += 1
            return
        try:
            cmd = decode_command(msg.arbitration_id, msg.data, DRIVE_FRAME)
        except CodecError:
            ad.counters.malformed_frames += 1
            return
        ad.counters.command_frames += 1
        ad.drives[cmd.joint - 1].on_command(cmd.count, now)

    def emit_feedback(self, now: float) -> None:
        """Every powered joint whose feedback is not frozen sends one frame."""
        d = self.data
        for ad in self.buses.values():
            if not ad.powered:
                continue
            frozen = (
                self.faults.active(FaultKind.FEEDBACK_FREEZE, ad.arm, now) if self.faults else ()
            )
            q = d.qpos[ad.qpos]
            tau = d.actuator_force[ad.actuators]
            for k, drv in enumerate(ad.drives):
                if frozen and any(s.hits_joint(drv.joint) for s in frozen):
                    continue
                fr = drv.feedback_frame(float(q[k]), float(tau[k]))
                msg = can.Message(
                    timestamp=now,
                    arbitration_id=fr.arbitration_id,
                    data=fr.data,
                    is_extended_id=False,
                )
                ad.bus.send(msg)
                ad.counters.feedback_frames += 1
                if ad.logger is not None:
                    ad.logger.on_message_received(msg)

    # ------------------------------------------------------------------ faults
    def _apply_drive_faults(self, ad: ArmDrives, now: float) -> None:
        f, arm = self.faults, ad.arm
        flips = f.active(FaultKind.WRONG_SIGN, arm, now)
        offsets = f.active(FaultKind.ENCODER_OFFSET, arm, now)
        for drv in ad.drives:
            drv.sign_flipped = any(s.hits_joint(drv.joint) for s in flips)
            drv.encoder_offset_rad = sum(
                s.params["offset_rad"] for s in offsets if s.hits_joint(drv.joint)
            )
        powered = f.first(FaultKind.POWER_LOSS, arm, now) is None
        if powered != ad.powered:
            self._set_power(ad, powered, now)
        stalls = f.active(FaultKind.STALL, arm, now)
        stalled = tuple(any(s.hits_joint(drv.joint) for s in stalls) for drv in ad.drives)
        if stalled != ad.stalled:
            ad.stalled = stalled
            for k, jam in enumerate(stalled):
                self._jams.set(ad.dof[k], jam)

    def _set_power(self, ad: ArmDrives, on: bool, now: float) -> None:
        ad.powered = on
        m = self.model
        for k, (a, drv) in enumerate(zip(ad.actuators, ad.drives, strict=True)):
            drv.powered = on
            if on:  # power back: hold where the joint is now, gains restored
                drv.hold_at(float(self.data.qpos[ad.qpos[k]]))
                drv.last_command_s = now
                m.actuator_gainprm[a, 0] = self._gain[a]
                m.actuator_biasprm[a, :3] = self._bias[a]
            else:  # limp: the position servo produces no force
                m.actuator_gainprm[a, 0] = 0.0
                m.actuator_biasprm[a, :3] = 0.0

    def _second_writer(self, ad: ArmDrives, now: float) -> None:
        spec = self._second_writer_due(ad, now)
        if spec is None:
            return
        ch = ad.channel
        pos = np.clip(
            np.full(JOINTS_PER_ARM, spec.params["position_rad"]),
            [d.config.lower_rad for d in ad.drives],
            [d.config.upper_rad for d in ad.drives],
        )
        for fr in encode_sample(pos, DRIVE_FRAME):
            self._writers[ch].send(
                can.Message(
                    timestamp=now,
                    arbitration_id=fr.arbitration_id,
                    data=fr.data,
                    is_extended_id=False,
                )
            )
            ad.counters.second_writer_frames += 1

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        self._close_buses()
        self.model.actuator_gainprm[:, 0] = self._gain
        self.model.actuator_biasprm[:, :3] = self._bias
        self._jams.release_all()
