"""One simulated Damiao drive in MIT mode: frames in, a joint torque and state frames out.

What the drive does (sources: ``shared/research/openarm_can_models.md`` section 2,
``motor_bank_peers.md`` section 1.3; parts marked ASSUMED are not measured):

- Registers (RID): PMAX/VMAX/TMAX (the wire scaling the drive decodes with; writable
  in RAM, effective at once, so a host whose table disagrees scales every command
  wrongly), ESC_ID/MST_ID (addressing), TIMEOUT (CAN watchdog in 50 us counts, 0 =
  off, the factory value in a real register dump), CTRL_MODE (1 = MIT), UV, OT.
- Enable state: a drive powers up DISABLED (zero torque, still answering). ``FF..FC``
  enables, ``FF..FD`` disables, ``FF..FE`` sets the present position as zero (refused
  while enabled, ASSUMED), ``FF..FB`` clears a latched error (and the held command,
  leaving the drive disabled, like the Astera emulator).
- Impedance law every physics step: ``tau = kp (q_ref - q) + kd (dq_ref - dq) + tau_ff``,
  saturated at the motor's physical peak (40 / 27 / 7 Nm), distinct from TMAX.
- Errors latch in the status nibble until clear-error; a latched or disabled drive
  outputs zero torque (the arm goes limp: ASSUMED, the drives' protective state):
  COMMUNICATION_LOST when enabled and no command for TIMEOUT; UNDER_VOLTAGE when
  the supply drops below UV; MOS/ROTOR_OVER_TEMPERATURE above OT. Temperatures are
  fixed at ``ambient_c`` unless injected (no thermal model: ASSUMED, like Astera's).
- One reply per addressed frame (request-reply): MIT, special and refresh frames get
  a state frame, register reads/writes an echo carrying the value; nothing is sent
  unsolicited. Frames the drive does not understand (wrong length, unknown register,
  an MIT frame outside MIT mode) get no reply and are counted: a drive never guesses.
- State frames encode with the drive's own scaling; like the real drive's converter,
  values past the wire range saturate at its end (counted in ``saturated_reports``).

Pure Python: the motor bank applies ``torque`` to the MuJoCo motor actuator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from rob_twin.controllers.damiao_codec import (
    CTRL_MODE_MIT,
    FRAME_LEN,
    TIMEOUT_UNIT_S,
    MitCommand,
    Register,
    RegisterOp,
    Scaling,
    SpecialCommand,
    Status,
    check_register_value,
    decode_mit,
    decode_register_frame,
    encode_register_reply,
    encode_state,
    special_command,
)
from rob_twin.controllers.damiao_errors import DamiaoCodecError
from rob_twin.models.damiao_motors import REGISTER_ID, MotorLimits


@dataclass(frozen=True)
class DamiaoDriveConfig:
    """One drive's installation: motor model, ids, factory registers and environment.

    timeout_counts: factory TIMEOUT register (50 us counts, 0 = off); supply_v: bus
    voltage [V]; uv_v, ot_c: UV [V] and OT [degC] registers (the DM4340P dump: 15 V,
    100 degC); ambient_c: reported temperatures [degC]; zero_offset_rad: encoder zero
    in the joint frame [rad] (joint = encoder - zero)."""

    motor: MotorLimits
    esc_id: int
    mst_id: int
    timeout_counts: int = 0
    supply_v: float = 24.0
    uv_v: float = 15.0
    ot_c: float = 100.0
    ambient_c: int = 25
    zero_offset_rad: float = 0.0


@dataclass
class DriveCounters:
    commands: int = 0  # MIT frames taken
    ignored: int = 0  # frames the drive did not act on (no reply)
    replies: int = 0
    saturated_reports: int = 0  # state values that hit the end of the wire range


@dataclass
class DamiaoDrive:
    """Joint ``joint`` (1..7) of one arm."""

    joint: int
    config: DamiaoDriveConfig
    registers: dict[Register, int | float] = field(init=False)
    enabled: bool = field(default=False, init=False)
    error: Status | None = field(default=None, init=False)
    command: MitCommand | None = field(default=None, init=False)
    last_command_s: float = field(default=0.0, init=False)
    zero_rad: float = field(init=False)
    t_mos_c: int = field(init=False)
    t_rotor_c: int = field(init=False)
    supply_v: float = field(init=False)
    counters: DriveCounters = field(default_factory=DriveCounters, init=False)
    last_torque_nm: float = field(default=0.0, init=False)
    _scaling: Scaling | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        c = self.config
        m = c.motor
        self.registers = {
            Register.UV: c.uv_v,
            Register.OT: c.ot_c,
            Register.MST_ID: c.mst_id,
            Register.ESC_ID: c.esc_id,
            Register.TIMEOUT: c.timeout_counts,
            Register.CTRL_MODE: CTRL_MODE_MIT,
            Register.PMAX: m.pmax_rad,
            Register.VMAX: m.vmax_rad_s,
            Register.TMAX: m.tmax_nm,
        }
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
    def scaling(self) -> Scaling:
        """The wire scaling of the PMAX/VMAX/TMAX registers (cached until one is written)."""
        if self._scaling is None:
            r = self.registers
            self._scaling = Scaling(
                float(r[Register.PMAX]), float(r[Register.VMAX]), float(r[Register.TMAX])
            )
        return self._scaling

    def set_register(self, rid: Register, value: int | float) -> None:
        """Store a register value (already checked); a scaling register takes effect at once."""
        self.registers[Register(rid)] = value
        self._scaling = None

    @property
    def timeout_s(self) -> float:
        """The CAN watchdog [s]; 0 when off."""
        return int(self.registers[Register.TIMEOUT]) * TIMEOUT_UNIT_S

    @property
    def status(self) -> int:
        if self.error is not None:
            return int(self.error)
        return int(Status.ENABLED if self.enabled else Status.DISABLED)

    # ------------------------------------------------------------------ frames
    def on_frame(
        self, arbitration_id: int, data: bytes, now: float, q_rad: float, dq_rad_s: float
    ) -> tuple[int, bytes] | None:
        """Act on a frame addressed to this drive; return the reply (id, payload) or None.

        q_rad, dq_rad_s: the joint's present state (for the state reply)."""
        if len(data) != FRAME_LEN:
            self.counters.ignored += 1
            return None
        if arbitration_id == REGISTER_ID:
            return self._on_register(data, now, q_rad, dq_rad_s)
        special = special_command(data)
        if special is not None:
            self._on_special(special, q_rad, now)
        elif int(self.registers[Register.CTRL_MODE]) != CTRL_MODE_MIT:
            self.counters.ignored += 1  # MIT frames outside MIT mode: silently ignored
            return None
        elif self.enabled and self.error is None:
            self.command = decode_mit(data, self.scaling)
            self.last_command_s = now
            self.counters.commands += 1
        return self.mst_id, self.state_frame(q_rad, dq_rad_s)

    def _on_special(self, cmd: SpecialCommand, q_rad: float, now: float) -> None:
        if cmd is SpecialCommand.ENABLE:
            if not self.enabled:
                self.command = None  # no stale command after an enable: zero torque until one
                self.last_command_s = now  # the watchdog counts from the enable
            self.enabled = True
        elif cmd is SpecialCommand.DISABLE:
            self.enabled = False
            self.command = None
        elif cmd is SpecialCommand.CLEAR_ERROR:
            self.error = None
            self.enabled = False
            self.command = None
        elif cmd is SpecialCommand.SET_ZERO and not self.enabled:
            self.zero_rad += q_rad  # the present joint position reads 0 from now on

    def _on_register(
        self, data: bytes, now: float, q_rad: float, dq_rad_s: float
    ) -> tuple[int, bytes] | None:
        esc = data[0] | (data[1] << 8)
        if esc != self.esc_id:
            return None  # addressed to another drive on this bus
        try:
            fr = decode_register_frame(data)
        except DamiaoCodecError:
            self.counters.ignored += 1
            return None
        reply_id = self.mst_id
        if fr.op is RegisterOp.REFRESH:
            return reply_id, self.state_frame(q_rad, dq_rad_s)
        if fr.op is RegisterOp.SAVE:
            if self.enabled:
                self.counters.ignored += 1  # the motor must be disabled before a flash save
                return None
            return reply_id, bytes(data)
        rid = Register(fr.rid)
        if fr.op is RegisterOp.WRITE:
            try:
                value = check_register_value(rid, fr.value)
            except DamiaoCodecError:
                self.counters.ignored += 1
                return None
            self.set_register(rid, value)
            if rid is Register.CTRL_MODE:
                self.command = None  # a mode change clears the held command
        return reply_id, encode_register_reply(esc, fr.op, rid, self.registers[rid])

    # ------------------------------------------------------------------ physics
    def torque(self, q_rad: float, dq_rad_s: float, now: float) -> float:
        """Supervise, then the impedance law [Nm] at joint state (q [rad], dq [rad/s])."""
        self._supervise(now)
        cmd = self.command
        if not self.enabled or self.error is not None or cmd is None:
            self.last_torque_nm = 0.0
            return 0.0
        q = q_rad - self.zero_rad
        tau = cmd.kp * (cmd.q_rad - q) + cmd.kd * (cmd.dq_rad_s - dq_rad_s) + cmd.tau_nm
        peak = self.config.motor.peak_torque_nm
        self.last_torque_nm = min(max(tau, -peak), peak)
        return self.last_torque_nm

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
