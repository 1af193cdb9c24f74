"""The simulated Damiao motor bank: one MIT-mode drive per arm joint, one CAN bus per arm.

An arm has as many drives as drive configs (``default_damiao_configs``: one per motor, ESC
ids 0x01.., MST ids 0x11..; OpenArm: seven), one per joint of the arm in the model.

The sibling of ``rob_twin.twin.drives.amber_bank.MotorBank`` (Amber position drives) with the same
surface (``service``, ``emit_feedback``, ``drives_of``, ``wiring``, ``close``), so the
closed loop can hold either. Every physics step ``service(now, dt)``: apply the drive
faults in force, answer every frame waiting on each bus (request-reply: the drives
send nothing unsolicited, so ``emit_feedback`` does nothing), then write each drive's
impedance torque to its joint's MuJoCo motor (``rob_twin.models.robot_model``).

Routing: MIT and special frames by ESC id (0x01..0x07 on OpenArm), register frames on
0x7FF by the ESC id in their first two bytes. Frames for no drive of the bus, extended
or remote frames are counted and ignored.

Drive faults of ``rob_twin.twin.sim.faults`` that apply here: ``feedback_freeze`` (the joints stop
answering), ``stall`` (jammed joint), ``encoder_offset`` (reported position shifted),
``power_loss`` (no answer, no torque), ``second_writer`` (another node writes MIT hold
frames on our ESC ids). Damiao-specific faults are injected with ``set_supply_v``,
``set_temperature_c`` and ``set_register`` (a drive whose PMAX/VMAX/TMAX differ from
the host's table). ``wrong_sign`` is not modelled for this family.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import can
import mujoco
import numpy as np
from rob_twin.controllers.damiao_codec import MitCommand, Register, Scaling, encode_mit
from rob_twin.controllers.damiao_transport import MAX_JOINTS, esc_ids, mst_ids
from rob_twin.models.damiao_motors import (
    OPENARM_ARM_MOTORS,
    MotorLimits,
)
from rob_twin.models.loading import arm_actuator_indices, arm_qpos_indices, model_arm_joints
from rob_twin.models.names import JOINTS_PER_ARM, Arm, UnknownNameError
from rob_twin.twin.bus.wire import open_virtual
from rob_twin.twin.drives.amber_bank import BankBuses, BusDrives
from rob_twin.twin.drives.damiao_drive import DamiaoDrive, DamiaoDriveConfig
from rob_twin.twin.drives.joint_friction import FrictionOnJoints, JointFriction
from rob_twin.twin.drives.joint_jam import JointJams
from rob_twin.twin.sim.faults import FaultKind, FaultSchedule


def default_damiao_configs(
    timeout_counts: int = 0, motors: tuple[MotorLimits, ...] = OPENARM_ARM_MOTORS
) -> tuple[DamiaoDriveConfig, ...]:
    """One drive per motor of ``motors`` (default OpenArm's seven: DM8009 x2, DM4340 x2,
    DM4310 x3; any count 1..``MAX_JOINTS``); ids 0x01.. / 0x11.. (OpenArm's addressing:
    ``controllers.damiao_transport.esc_ids`` / ``mst_ids``); TIMEOUT register
    ``timeout_counts`` (factory 0 = off)."""
    n = len(motors)
    if not 1 <= n <= MAX_JOINTS:
        raise UnknownNameError("drive count (motors)", n, [f"1..{MAX_JOINTS}"])
    return tuple(
        DamiaoDriveConfig(motor=m, esc_id=e, mst_id=r, timeout_counts=timeout_counts)
        for m, e, r in zip(motors, esc_ids(n), mst_ids(n), strict=True)
    )


@dataclass
class DamiaoBusCounters:
    frames_in: int = 0
    command_frames: int = 0  # frames addressed to a drive of this bus (MIT, special, register)
    replies: int = 0
    not_for_us: int = 0  # ids no drive of this bus answers to
    second_writer_frames: int = 0


@dataclass(kw_only=True)
class DamiaoArmDrives(BusDrives):
    """The Damiao drives on one bus; silent: drives that do not answer; encoder offsets
    [rad] of each drive's reported position."""

    drives: list[DamiaoDrive]
    counters: DamiaoBusCounters = field(default_factory=DamiaoBusCounters)
    silent: tuple[bool, ...] = (False,) * JOINTS_PER_ARM
    encoder_offset_rad: tuple[float, ...] = (0.0,) * JOINTS_PER_ARM


def apply_drive_faults(
    faults: FaultSchedule, ad, dofs: Sequence[int], jams: JointJams, now: float
) -> None:
    """The drive faults in force at ``now`` [s] on the Damiao drives of bus ``ad`` (its
    ``arm``, ``drives``; it takes ``silent``, ``encoder_offset_rad``, ``powered``,
    ``stalled``): frozen feedback silences a drive, an encoder offset shifts what it reports,
    a power loss takes the bus, a stall jams the joint of ``dofs[k]`` (MuJoCo dof of drive
    ``k``). The lockstep bank and the live bank (``damiao_live``) share it."""
    arm = ad.arm

    def hit(kind: FaultKind) -> tuple[bool, ...]:
        specs = faults.active(kind, arm, now)
        return tuple(any(s.hits_joint(drv.joint) for s in specs) for drv in ad.drives)

    ad.silent = hit(FaultKind.FEEDBACK_FREEZE)
    offsets = faults.active(FaultKind.ENCODER_OFFSET, arm, now)
    ad.encoder_offset_rad = tuple(
        sum(s.params["offset_rad"] for s in offsets if s.hits_joint(drv.joint)) for drv in ad.drives
    )
    ad.powered = faults.first(FaultKind.POWER_LOSS, arm, now) is None
    stalled = hit(FaultKind.STALL)
    if stalled != ad.stalled:
        ad.stalled = stalled
        for k, jam in enumerate(stalled):
            jams.set(int(dofs[k]), jam)


class DamiaoBank(BankBuses):
    """All Damiao drives of the twin; model/data belong to the stepping thread.

    wiring: {channel: arm on that bus}; configs: the drives of an arm, one per joint of each
    wired arm in the model (default: OpenArm's seven), or {Arm: configs}; friction: {Arm:
    each joint's identified friction} (``joint_friction``; None or an arm left out: the
    MJCF's damping and friction loss act alone)."""

    def __init__(
        self,
        model: mujoco.MjModel,
        data: mujoco.MjData,
        wiring: dict[str, Arm],
        faults: FaultSchedule | None = None,
        configs: tuple[DamiaoDriveConfig, ...] | dict | None = None,
        log_dir: Path | str | None = None,
        log_suffix: str = ".log",
        now: float = 0.0,
        friction: dict[Arm, tuple[JointFriction, ...]] | None = None,
    ):
        self.model, self.data = model, data
        self.faults = faults if faults is not None else FaultSchedule()
        configs = configs or default_damiao_configs()
        per_arm = {
            Arm.parse(a): configs[Arm.parse(a)] if isinstance(configs, dict) else configs
            for a in set(wiring.values())
        }
        for arm, arm_configs in per_arm.items():
            joints = len(model_arm_joints(model, arm))
            if len(arm_configs) != joints:
                raise UnknownNameError(
                    f"drive config count of the {arm.value} arm", len(arm_configs), [str(joints)]
                )
        self._jams = JointJams(model, data)
        self._faults_were_set = False  # the schedule held faults at the last service
        self.buses: dict[str, DamiaoArmDrives] = {}
        for channel, arm in wiring.items():
            fields = self._bus_fields(model, channel, arm, log_dir, log_suffix)
            arm_configs = per_arm[Arm.parse(arm)]
            n = len(arm_configs)
            drives = [DamiaoDrive(j, arm_configs[j - 1]) for j in range(1, n + 1)]
            for d in drives:
                d.last_command_s = now
            self.buses[channel] = DamiaoArmDrives(
                drives=drives,
                silent=(False,) * n,
                encoder_offset_rad=(0.0,) * n,
                stalled=(False,) * n,
                **fields,
            )
        self._writers: dict[str, can.BusABC] = {}
        self._writer_next: dict[str, float] = {}
        # each wired arm's identified joint friction, in place of the MJCF's (joint_friction)
        self.friction = [
            FrictionOnJoints(model, ad.dof, friction[ad.arm])
            for ad in self.buses.values()
            if friction is not None and friction.get(ad.arm) is not None
        ]

    @classmethod
    def _bus_fields(
        cls,
        model: mujoco.MjModel,
        channel: str,
        arm: Arm | str,
        log_dir: Path | str | None,
        log_suffix: str,
    ) -> dict:
        """``BankBuses._bus_fields`` for an arm of any joint count: the dofs of the joints
        the model's arm has (``model_arm_joints``), not of seven."""
        arm = Arm.parse(arm)
        return dict(
            channel=channel,
            arm=arm,
            bus=open_virtual(channel),
            qpos=arm_qpos_indices(model, arm),
            dof=np.array(
                [model.jnt_dofadr[model.joint(n).id] for n in model_arm_joints(model, arm)]
            ),
            actuators=arm_actuator_indices(model, arm),
            logger=cls._open_logger(log_dir, channel, log_suffix),
        )

    # ------------------------------------------------------------------ injection
    def set_supply_v(self, arm: Arm | str, volts: float, joints: tuple[int, ...] = ()) -> None:
        """Bus voltage [V] seen by the listed drives (all when empty)."""
        for d in self._pick(arm, joints):
            d.supply_v = float(volts)

    def set_temperature_c(
        self, arm: Arm | str, t_mos_c: float, t_rotor_c: float, joints: tuple[int, ...] = ()
    ) -> None:
        """MOS and rotor temperatures [degC] of the listed drives (no thermal model)."""
        for d in self._pick(arm, joints):
            d.t_mos_c, d.t_rotor_c = int(round(t_mos_c)), int(round(t_rotor_c))

    def set_register(self, arm: Arm | str, joint: int, rid: Register, value: float) -> None:
        """Change one drive's register behind the host's back (a mis-configured motor)."""
        self._pick(arm, (joint,))[0].set_register(Register(rid), value)

    def _pick(self, arm: Arm | str, joints: tuple[int, ...]) -> list[DamiaoDrive]:
        drives = self.drives_of(arm).drives
        for j in joints:
            if not 1 <= j <= len(drives):
                raise UnknownNameError(
                    "joint number", j, [str(i) for i in range(1, len(drives) + 1)]
                )
        return [d for d in drives if not joints or d.joint in joints]

    # ------------------------------------------------------------------ per step
    def service(self, now: float, dt: float) -> None:
        """Apply faults, answer waiting frames, write each drive's torque to its motor."""
        d = self.data
        # once more after the schedule empties (clear_faults): the last fault's jam, power
        # loss or silence is lifted, not left in force
        faults = bool(self.faults) or self._faults_were_set
        self._faults_were_set = bool(self.faults)
        for ad in self.buses.values():
            if faults:
                self._apply_faults(ad, now)
                self._second_writer(ad, now)
            while (msg := ad.bus.recv(timeout=0)) is not None:
                self._handle(ad, msg, now)
            q = d.qpos[ad.qpos].tolist()
            dq = d.qvel[ad.dof].tolist()
            if not ad.powered:
                d.ctrl[ad.actuators] = 0.0
                continue
            d.ctrl[ad.actuators] = [
                drv.torque(qk, vk, now) for drv, qk, vk in zip(ad.drives, q, dq, strict=True)
            ]
        for joints in self.friction:
            joints.apply(d)

    def _handle(self, ad: DamiaoArmDrives, msg: can.Message, now: float) -> None:
        ad.counters.frames_in += 1
        if ad.logger is not None:
            ad.logger.on_message_received(msg)
        if msg.is_extended_id or msg.is_remote_frame or msg.is_error_frame or not ad.powered:
            ad.counters.not_for_us += 1
            return
        data = bytes(msg.data)
        # ESC id, the mode ids ESC + 0x100/0x200/0x300, or 0x7FF naming the ESC id in D0-D1
        targets = [drv for drv in ad.drives if drv.accepts(msg.arbitration_id, data)]
        if not targets:
            ad.counters.not_for_us += 1
            return
        ad.counters.command_frames += 1
        for drv in targets:
            k = drv.joint - 1
            q = float(self.data.qpos[ad.qpos[k]]) + ad.encoder_offset_rad[k]
            dq = float(self.data.qvel[ad.dof[k]])
            fd, brs = bool(msg.is_fd), bool(msg.bitrate_switch)
            reply = drv.on_frame(msg.arbitration_id, data, now, q, dq, fd, brs)
            if reply is None or ad.silent[k]:
                continue
            out = can.Message(  # in the request's format: FD in, FD out
                timestamp=now,
                arbitration_id=reply.arbitration_id,
                data=reply.data,
                is_extended_id=False,
                is_fd=reply.is_fd,
                bitrate_switch=reply.bitrate_switch,
            )
            ad.bus.send(out)
            ad.counters.replies += 1
            if ad.logger is not None:
                ad.logger.on_message_received(out)

    def emit_feedback(self, now: float) -> None:
        """Nothing: Damiao drives answer each frame and send nothing unsolicited."""

    # ------------------------------------------------------------------ faults
    def _apply_faults(self, ad: DamiaoArmDrives, now: float) -> None:
        apply_drive_faults(self.faults, ad, ad.dof, self._jams, now)

    def _second_writer(self, ad: DamiaoArmDrives, now: float) -> None:
        spec = self._second_writer_due(ad, now)
        if spec is None:
            return
        ch = ad.channel
        for drv in ad.drives:
            m = drv.config.motor
            hold = MitCommand(spec.params["position_rad"], 0.0, 20.0, 1.0, 0.0)
            data = encode_mit(hold, Scaling.of(m))
            self._writers[ch].send(
                can.Message(
                    timestamp=now, arbitration_id=drv.esc_id, data=data, is_extended_id=False
                )
            )
            ad.counters.second_writer_frames += 1

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        self._close_buses()
        self._jams.release_all()
