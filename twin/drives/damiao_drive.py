"""One simulated Damiao drive: frames in, a joint torque and state frames out.

What the drive does (sources: ``shared/research/openarm_can_models.md`` section 2,
``openarm_host_clients.md``, ``motor_bank_peers.md`` section 1.3, damiao-motor 1.0.6's
register table and command encoders; parts marked ASSUMED or SIMULATED are not measured):

- Registers: the whole Damiao register table (``damiao_codec.Register``, 53 RIDs; values
  from ``models.damiao_motors.factory_registers``, some of them SIMULATED placeholders).
  Reads (0x33) of every one are answered, uint32 for RIDs 7-10, 13-16, 35-36, float32
  otherwise; VBUS, TPCB, TMTR, P_M and XOUT are live (supply voltage, the two reported
  temperatures, motor-side position = XOUT x Gr (SIMULATED), output position as in the
  state frame). Writes (0x55) to RAM take effect at once (PMAX/VMAX/TMAX rescale every
  frame, ESC_ID/MST_ID readdress, TIMEOUT arms the watchdog, CTRL_MODE switches mode and
  drops the held command) and are echoed with the value stored (float32). A write the
  drive cannot take (a read-only register, a value outside the register's range) gets no
  reply and changes nothing (ASSUMED; counted in ``ignored`` and ``refused_writes``).
  Save (0xAA) is echoed and snapshots the registers (``saved_registers``; no power cycle
  is modelled), refused without reply while enabled (ASSUMED). Refresh (0xCC) is answered
  with a state frame. Unknown RIDs and ops get no reply.
- Control modes (register CTRL_MODE): MIT frames on ESC_ID, POS_VEL on ESC_ID + 0x100,
  VEL on + 0x200 (4 or 8 bytes), POS_FORCE on + 0x300. The drive acts only on the frames
  of its selected mode; another mode's frames get no reply (damiao-motor: "if the
  register does not match, the motor will not respond to commands"). Every taken frame
  is answered with a state frame, also while disabled (then the command is dropped).
- Special frames ``FF..FC/FD/FE/FB`` are taken on ESC_ID in any mode (openarm_can, LeRobot
  and damiao-motor send them there) and also on the mode ids (older firmware, ASSUMED),
  and always answered with a state frame on MST_ID, from a disabled or faulted drive too.
  ``FC`` enables (no stale command: zero torque until one), ``FD`` disables, ``FB``
  clears a latched error and leaves the drive disabled (no effect without an error; an
  error whose cause persists latches again at once: ASSUMED), ``FE`` sets the present
  position as zero: the reported position (state frames, XOUT) is 0 at the present pose
  from then on (``zero_rad`` moves by the reported position; a second ``FE`` zeroes the
  new pose, it does not add up); refused while enabled (ASSUMED; LeRobot disables first).
- Torque every physics step, saturated at the motor's physical peak (40 / 27 / 7 Nm):
  MIT ``tau = kp (q_ref - q) + kd (dq_ref - dq) + tau_ff``; the other modes run a
  SIMULATED cascade (gains chosen, not measured, the real loops are not modelled):
  position loop ``v_ref = POS_LOOP_GAIN_1_S (q_ref - q)`` clipped to the frame's speed
  limit, then a PI speed loop ``kv (v_ref - dq) + ki integral`` with ``kv =
  SPEED_LOOP_KP_S_PER_RAD x peak`` and ``ki = SPEED_LOOP_KI_1_S x kv`` (integral clamped
  to the torque limit); VEL feeds its velocity straight to the speed loop; POS_FORCE
  limits the torque to ``current_pu x TMAX`` (damiao-motor: ``tau_lim = ratio x T_max``;
  the real drive limits the current to a fraction of IMAX).
- Errors latch in the status nibble until clear-error; a latched or disabled drive
  outputs zero torque (the arm goes limp: ASSUMED, the drives' protective state):
  COMMUNICATION_LOST (0xD) when enabled, TIMEOUT nonzero and no command frame for
  TIMEOUT x 50 us (the enable counts as one); UNDER_VOLTAGE when the supply drops below
  UV; MOS/ROTOR_OVER_TEMPERATURE above OT. Temperatures are fixed at ``ambient_c`` unless
  injected (no thermal model: ASSUMED, like Astera's). Status 0 disabled, 1 enabled.
- One reply per addressed frame, in the request's format: a CAN FD request gets an FD
  reply (same 8 data bytes, bit-rate switch as the request's), a classic one a classic
  reply (``DriveReply``). Nothing is sent unsolicited. Frames the drive does not
  understand (wrong length, non-finite values, unknown register) get no reply and are
  counted: a drive never guesses.
- State frames encode with the drive's own scaling; like the real drive's converter,
  values past the wire range saturate at its end (counted in ``saturated_reports``).

Pure Python: the motor bank applies ``torque`` to the MuJoCo motor actuator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

from rob_twin.controllers.damiao_codec import (
    CTRL_MODE_MIT,
    FRAME_LEN,
    INTEGER_REGISTERS,
    READ_ONLY_REGISTERS,
    TIMEOUT_UNIT_S,
    ControlMode,
    MitCommand,
    ModeCommand,
    PosForceCommand,
    Register,
    RegisterOp,
    Scaling,
    SpecialCommand,
    Status,
    VelCommand,
    check_register_value,
    decode_mit,
    decode_pos_force,
    decode_pos_vel,
    decode_register_frame,
    decode_vel,
    encode_register_reply,
    encode_state,
    special_command,
)
from rob_twin.controllers.damiao_errors import DamiaoCodecError
from rob_twin.models.damiao_motors import REGISTER_ID, MotorLimits, factory_registers

# SIMULATED loop gains of the POS_VEL / VEL / POS_FORCE modes (chosen, not measured):
# a position loop feeding a PI speed loop. With kv = 0.1 s/rad x peak torque the speed
# loop gives the peak torque for a 10 rad/s error (DM8009 4, DM4340 2.7, DM4310 0.7 Nm s/rad,
# near OpenArm's MIT kd); the cascade is stable for joint inertias below ~0.55 kv kg m^2.
POS_LOOP_GAIN_1_S = 20.0  # [rad/s per rad]
SPEED_LOOP_KP_S_PER_RAD = 0.1  # kv / peak torque [s/rad]
SPEED_LOOP_KI_1_S = 2.0  # ki / kv [1/s]
MAX_LOOP_DT_S = 0.01  # longest step the speed-loop integrator takes at once [s]

_LIVE_REGISTERS = frozenset(
    {Register.VBUS, Register.TPCB, Register.TMTR, Register.P_M, Register.XOUT}
)
_MODE_BY_OFFSET = {m.id_offset: m for m in ControlMode}


class DriveReply(NamedTuple):
    """A frame the drive sends: on ``arbitration_id`` (its MST id), 8 data bytes, CAN FD
    when the request was (``bitrate_switch`` as the request's), classic otherwise.
    Indexes like the old ``(id, data)`` pair: ``reply[0]``, ``reply[1]``."""

    arbitration_id: int
    data: bytes
    is_fd: bool = False
    bitrate_switch: bool = False


@dataclass(frozen=True)
class DamiaoDriveConfig:
    """One drive's installation: motor model, ids, factory registers and environment.

    timeout_counts: factory TIMEOUT register (50 us counts, 0 = off); supply_v: bus
    voltage [V]; uv_v, ot_c: UV [V] and OT [degC] registers (the DM4340P dump: 15 V,
    100 degC); ambient_c: reported temperatures [degC]; zero_offset_rad: encoder zero
    in the joint frame [rad] (joint = encoder - zero); ctrl_mode: CTRL_MODE at power-up
    (1 MIT, 2 POS_VEL, 3 VEL, 4 POS_FORCE); kp_scale, kd_scale: the gains the drive
    applies as a factor on the MIT frame's kp and kd (1: as commanded; a calibration fits
    them where a real drive's effective gains differ from the host's numbers)."""

    motor: MotorLimits
    esc_id: int
    mst_id: int
    timeout_counts: int = 0
    supply_v: float = 24.0
    uv_v: float = 15.0
    ot_c: float = 100.0
    ambient_c: int = 25
    zero_offset_rad: float = 0.0
    ctrl_mode: int = CTRL_MODE_MIT
    kp_scale: float = 1.0
    kd_scale: float = 1.0


@dataclass
class DriveCounters:
    commands: int = 0  # command frames taken (any mode)
    ignored: int = 0  # frames the drive did not act on (no reply)
    replies: int = 0
    saturated_reports: int = 0  # state values that hit the end of the wire range
    refused_writes: int = 0  # register writes not taken (read-only or out of range)
    saves: int = 0  # register saves (0xAA) taken


@dataclass
class DamiaoDrive:
    """Drive ``joint`` of one arm's bus (1..7 the arm joints, 8 the OpenArm gripper)."""

    joint: int
    config: DamiaoDriveConfig
    registers: dict[Register, int | float] = field(init=False)
    enabled: bool = field(default=False, init=False)
    error: Status | None = field(default=None, init=False)
    command: ModeCommand | None = field(default=None, init=False)
    last_command_s: float = field(default=0.0, init=False)
    zero_rad: float = field(init=False)
    t_mos_c: int = field(init=False)
    t_rotor_c: int = field(init=False)
    supply_v: float = field(init=False)
    counters: DriveCounters = field(default_factory=DriveCounters, init=False)
    last_torque_nm: float = field(default=0.0, init=False)
    saved_registers: dict[Register, int | float] | None = field(default=None, init=False)
    _scaling: Scaling | None = field(default=None, init=False, repr=False)
    _integral_nm: float = field(default=0.0, init=False, repr=False)
    _loop_s: float | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        c = self.config
        self.registers = {Register(rid): v for rid, v in factory_registers(c.motor).items()}
        self.registers.update(
            {
                Register.UV: c.uv_v,
                Register.OT: c.ot_c,
                Register.MST_ID: c.mst_id,
                Register.ESC_ID: c.esc_id,
                Register.TIMEOUT: c.timeout_counts,
                Register.CTRL_MODE: c.ctrl_mode,
            }
        )
        self.zero_rad = c.zero_offset_rad
        self.t_mos_c = self.t_rotor_c = c.ambient_c
        self.supply_v = c.supply_v

    # ------------------------------------------------------------------ identity
    @property
    def esc_id(self) -> int:
        return int(self.registers[Register.ESC_ID])

    @property
    def mst_id(self) -> int:
        return int(self.registers[Register.MST_ID])

    @property
    def mode(self) -> ControlMode | None:
        """The control mode register CTRL_MODE selects (None for a value no mode has)."""
        try:
            return ControlMode(int(self.registers[Register.CTRL_MODE]))
        except ValueError:
            return None

    def accepts(self, arbitration_id: int, data: bytes) -> bool:
        """True when a frame is addressed to this drive: its ESC id or a mode's id
        (ESC + 0x100 / 0x200 / 0x300), or 0x7FF naming its ESC id in D0-D1."""
        if arbitration_id == REGISTER_ID:
            return len(data) >= 2 and (data[0] | (data[1] << 8)) == self.esc_id
        return (arbitration_id - self.esc_id) in _MODE_BY_OFFSET

    @property
    def scaling(self) -> Scaling:
        """The wire scaling of the PMAX/VMAX/TMAX registers (cached until one is written)."""
        if self._scaling is None:
            r = self.registers
            self._scaling = Scaling(
                float(r[Register.PMAX]), float(r[Register.VMAX]), float(r[Register.TMAX])
            )
        return self._scaling

    def set_register(self, rid: Register, value: int | float) -> None:
        """Store a register value (already checked, or injected on purpose: not range
        checked); a scaling register takes effect at once."""
        rid = Register(rid)
        self.registers[rid] = int(value) if rid in INTEGER_REGISTERS else float(value)
        self._scaling = None

    def written_registers(self) -> dict[Register, int | float]:
        """The registers whose value is no longer the one this drive powered up with (its
        config's table): what a host wrote (the bring-up's TIMEOUT) or a test injected. A
        recording starting now stores them (``rob_twin.twin.bus.recording``) so that its
        replay's drives, built at power-up, hold them too."""
        powered_up = DamiaoDrive(self.joint, self.config).registers
        return {r: v for r, v in self.registers.items() if powered_up.get(r) != v}

    @property
    def timeout_s(self) -> float:
        """The CAN watchdog [s]; 0 when off."""
        return int(self.registers[Register.TIMEOUT]) * TIMEOUT_UNIT_S

    @property
    def status(self) -> int:
        if self.error is not None:
            return int(self.error)
        return int(Status.ENABLED if self.enabled else Status.DISABLED)

    def register_value(self, rid: Register, q_rad: float = 0.0) -> int | float:
        """What a read of ``rid`` answers with the joint at ``q_rad`` [rad] (live registers
        computed now, the others as stored)."""
        if rid not in _LIVE_REGISTERS:
            return self.registers[rid]
        if rid is Register.VBUS:
            return float(self.supply_v)
        if rid is Register.TPCB:
            return float(self.t_mos_c)
        if rid is Register.TMTR:
            return float(self.t_rotor_c)
        xout = q_rad - self.zero_rad if math.isfinite(q_rad) else 0.0
        if rid is Register.XOUT:
            return xout
        return xout * float(self.registers[Register.GR])  # P_M: SIMULATED motor side

    # ------------------------------------------------------------------ frames
    def on_frame(
        self,
        arbitration_id: int,
        data: bytes,
        now: float,
        q_rad: float,
        dq_rad_s: float,
        is_fd: bool = False,
        bitrate_switch: bool = False,
    ) -> DriveReply | None:
        """Act on a frame; return the reply, or None (not addressed here, or not taken).

        q_rad, dq_rad_s: the joint's present state (for the state reply); is_fd,
        bitrate_switch: the request's CAN FD flags, mirrored by the reply."""
        data = bytes(data)
        if not self.accepts(arbitration_id, data):
            return None  # addressed to another drive on this bus
        reply_id = self.mst_id  # a write of MST_ID answers on the old id
        if len(data) != FRAME_LEN and not (
            _MODE_BY_OFFSET.get(arbitration_id - self.esc_id) is ControlMode.VEL
            and 4 <= len(data) <= FRAME_LEN
        ):
            self.counters.ignored += 1
            return None
        if arbitration_id == REGISTER_ID:
            out = self._on_register(data, now, q_rad, dq_rad_s)
        else:
            out = self._on_command(
                _MODE_BY_OFFSET[arbitration_id - self.esc_id], data, now, q_rad, dq_rad_s
            )
        if out is None:
            return None
        return DriveReply(reply_id, out, bool(is_fd), bool(is_fd and bitrate_switch))

    def _on_command(
        self, frame_mode: ControlMode, data: bytes, now: float, q_rad: float, dq_rad_s: float
    ) -> bytes | None:
        special = special_command(data)
        if special is not None:
            self._on_special(special, q_rad, now)
            return self.state_frame(q_rad, dq_rad_s)
        if frame_mode is not self.mode:
            self.counters.ignored += 1  # another mode's frames: silently ignored
            return None
        cmd = _decode_command(frame_mode, data, self.scaling)
        if cmd is None:
            self.counters.ignored += 1  # non-finite values: not a command
            return None
        if self.enabled and self.error is None:
            if type(cmd) is not type(self.command):
                self._integral_nm = 0.0
            self.command = cmd
            self.last_command_s = now
            self.counters.commands += 1
        return self.state_frame(q_rad, dq_rad_s)

    def _on_special(self, cmd: SpecialCommand, q_rad: float, now: float) -> None:
        if cmd is SpecialCommand.ENABLE:
            if not self.enabled:
                self._drop_command()  # no stale command after an enable: zero torque until one
                self.last_command_s = now  # the watchdog counts from the enable
            self.enabled = True
        elif cmd is SpecialCommand.DISABLE:
            self.enabled = False
            self._drop_command()
        elif cmd is SpecialCommand.CLEAR_ERROR:
            if self.error is not None:
                self.error = None
                self.enabled = False
                self._drop_command()
                self._supervise(now)  # a cause still present latches again at once
        elif cmd is SpecialCommand.SET_ZERO and not self.enabled and math.isfinite(q_rad):
            self.zero_rad = q_rad  # the present joint position reads 0 from now on

    def _drop_command(self) -> None:
        self.command = None
        self._integral_nm = 0.0

    def _on_register(self, data: bytes, now: float, q_rad: float, dq_rad_s: float) -> bytes | None:
        try:
            fr = decode_register_frame(data)
        except DamiaoCodecError:
            self.counters.ignored += 1  # unknown operation or register: no reply
            return None
        if fr.op is RegisterOp.REFRESH:
            return self.state_frame(q_rad, dq_rad_s)
        if fr.op is RegisterOp.SAVE:
            if self.enabled:
                self.counters.ignored += 1  # the motor must be disabled before a flash save
                return None
            self.saved_registers = dict(self.registers)
            self.counters.saves += 1
            return bytes(data)
        rid = Register(fr.rid)
        if fr.op is RegisterOp.WRITE:
            try:
                if rid in READ_ONLY_REGISTERS:
                    raise DamiaoCodecError(f"register {rid.name} is read-only")
                value = check_register_value(rid, fr.value)
            except DamiaoCodecError:
                self.counters.ignored += 1
                self.counters.refused_writes += 1
                return None
            self.set_register(rid, value)
            if rid is Register.CTRL_MODE:
                self._drop_command()  # a mode change clears the held command
        return encode_register_reply(fr.esc_id, fr.op, rid, self.register_value(rid, q_rad))

    # ------------------------------------------------------------------ physics
    def torque(self, q_rad: float, dq_rad_s: float, now: float) -> float:
        """Supervise, then the selected mode's torque [Nm] at joint state (q [rad], dq [rad/s])."""
        self._supervise(now)
        dt = 0.0 if self._loop_s is None else min(max(now - self._loop_s, 0.0), MAX_LOOP_DT_S)
        self._loop_s = now
        cmd = self.command
        if not self.enabled or self.error is not None or cmd is None:
            self._integral_nm = 0.0
            self.last_torque_nm = 0.0
            return 0.0
        q = q_rad - self.zero_rad
        limit = self.config.motor.peak_torque_nm
        if isinstance(cmd, MitCommand):
            c = self.config
            tau = (
                c.kp_scale * cmd.kp * (cmd.q_rad - q)
                + c.kd_scale * cmd.kd * (cmd.dq_rad_s - dq_rad_s)
                + cmd.tau_nm
            )
        elif isinstance(cmd, VelCommand):
            tau = self._speed_loop(cmd.dq_rad_s, dq_rad_s, dt, limit)
        else:  # PosVelCommand or PosForceCommand
            if isinstance(cmd, PosForceCommand):
                limit = min(limit, cmd.current_pu * self.scaling.tmax_nm)
            vlim = abs(cmd.dq_limit_rad_s)
            v_ref = min(max(POS_LOOP_GAIN_1_S * (cmd.q_rad - q), -vlim), vlim)
            tau = self._speed_loop(v_ref, dq_rad_s, dt, limit)
        if not math.isfinite(tau):
            tau = 0.0
        self.last_torque_nm = min(max(tau, -limit), limit)
        return self.last_torque_nm

    def _speed_loop(self, v_ref: float, dq_rad_s: float, dt: float, limit: float) -> float:
        """The SIMULATED PI speed loop [Nm]; the integral is clamped to +-limit."""
        kv = SPEED_LOOP_KP_S_PER_RAD * self.config.motor.peak_torque_nm
        err = v_ref - dq_rad_s if math.isfinite(dq_rad_s) else 0.0
        i = self._integral_nm + SPEED_LOOP_KI_1_S * kv * err * dt
        self._integral_nm = min(max(i, -limit), limit)
        return kv * err + self._integral_nm

    def _supervise(self, now: float) -> None:
        if self.error is not None:
            return
        if self.supply_v < float(self.registers[Register.UV]):
            self.error = Status.UNDER_VOLTAGE
        elif self.t_mos_c > float(self.registers[Register.OT]):
            self.error = Status.MOS_OVER_TEMPERATURE
        elif self.t_rotor_c > float(self.registers[Register.OT]):
            self.error = Status.ROTOR_OVER_TEMPERATURE
        elif self.enabled and self.timeout_s > 0 and now - self.last_command_s > self.timeout_s:
            self.error = Status.COMMUNICATION_LOST

    # ------------------------------------------------------------------ reporting
    def state_frame(self, q_rad: float, dq_rad_s: float) -> bytes:
        """The state frame for the joint at (q [rad], dq [rad/s]) under the present torque."""
        s = self.scaling
        values = []
        for x, lim in (
            (q_rad - self.zero_rad, s.pmax_rad),
            (dq_rad_s, s.vmax_rad_s),
            (self.last_torque_nm, s.tmax_nm),
        ):
            if not math.isfinite(x):
                x = 0.0
            if abs(x) > lim:
                self.counters.saturated_reports += 1
                x = math.copysign(lim, x)
            values.append(x)
        self.counters.replies += 1
        return encode_state(
            self.esc_id, self.status, *values, _temp(self.t_mos_c), _temp(self.t_rotor_c), s
        )


def _temp(t: float) -> int:
    return int(min(max(round(t), 0), 255))


def _decode_command(mode: ControlMode, data: bytes, scaling: Scaling) -> ModeCommand | None:
    """The command a frame of ``mode`` carries, or None when a value is not finite."""
    cmd: ModeCommand
    if mode is ControlMode.MIT:
        return decode_mit(data, scaling)  # any 8 bytes decode
    if mode is ControlMode.POS_VEL:
        cmd = decode_pos_vel(data)
    elif mode is ControlMode.VEL:
        cmd = decode_vel(data)
    else:
        cmd = decode_pos_force(data)
    return cmd if all(math.isfinite(x) for x in cmd) else None
