"""One simulated joint drive: decodes position frames, shapes a setpoint, reports feedback.

What the drive does (the parts marked ASSUMED are not measured on ROB's drives):

- Command frames are decoded with the project's codec in the *drive* frame (raw
  counts, sign +1); the drive's installation maps them to the joint frame:
  ``joint = sign * drive + zero_offset``. A host whose codec sign disagrees with the
  installation moves the joint the wrong way (the ``wrong_sign`` fault).
- The joint-frame command is clamped to the drive's limits (status bit LIMIT).
- Setpoint shaping: rate limit at the motor's no-load speed (a drive cannot slew
  faster), then a first-order lag of ``lag_s`` (ASSUMED 2 ms current/velocity loop).
- Integral action (ASSUMED, like the PI position loop of a servo drive): the servo
  target is the setpoint plus ``integral_gain`` times the integrated position error,
  clamped to ``integral_limit_rad``, so gravity leaves no steady-state error. MuJoCo's
  position actuator alone is a P-D loop and would sag by up to 0.03 rad under gravity.
- Command timeout (ASSUMED 0.1 s): with no valid command for that long the drive
  holds its present setpoint, whatever the last command said, and sets TIMEOUT.
- Feedback (8 bytes, ``codec.encode_feedback``): position in the drive frame plus any
  encoder offset, current = joint torque * ``amps_per_nm`` (ASSUMED torque constant),
  a raw status byte (bits below, ours), an opaque byte 0 (a rolling frame counter),
  velocity word 0: its units are unverified on the real drive, so it is not simulated.

Pure Python: the motor bank applies setpoints to MuJoCo actuators.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rob_twin.controllers.codec import CodecConfig, Frame, count_to_rad, encode_feedback
from rob_twin.models.errors import RobTwinError

STATUS_ENABLED = 0x01  # powered and answering
STATUS_TIMEOUT = 0x02  # holding: no valid command for command_timeout_s
STATUS_LIMIT = 0x04  # the last command was clamped to the drive's limits
STATUS_FOLLOWING = 0x08  # |setpoint - position| above following_error_rad


class DriveConfigError(RobTwinError, ValueError):
    """A drive configuration value out of its valid range (the message names both)."""


DRIVE_FRAME = CodecConfig().unbounded()  # signs +1: the drive's own frame, no bounds


@dataclass(frozen=True)
class DriveConfig:
    """One drive's installation and behaviour.

    sign: +1/-1, joint = sign * drive + zero_offset_rad [rad]; lower/upper_rad: joint
    limits [rad]; max_velocity_rad_s: setpoint rate limit [rad/s]; lag_s: setpoint lag
    time constant [s]; command_timeout_s [s]; amps_per_nm: current per joint torque
    [drive units / Nm]; following_error_rad: threshold of the FOLLOWING status bit [rad];
    integral_gain [1/s] and integral_limit_rad [rad]: the drive's integral action.
    """

    sign: int = 1
    zero_offset_rad: float = 0.0
    lower_rad: float = -math.pi
    upper_rad: float = math.pi
    max_velocity_rad_s: float = 5.45
    lag_s: float = 0.002
    command_timeout_s: float = 0.1
    amps_per_nm: float = 0.5
    following_error_rad: float = 0.1
    integral_gain: float = 10.0
    integral_limit_rad: float = 0.1

    def __post_init__(self) -> None:
        if self.sign not in (1, -1):
            raise DriveConfigError(f"drive sign must be +1 or -1, got {self.sign!r}")
        if not self.lower_rad < self.upper_rad:
            raise DriveConfigError(
                f"drive limits need lower < upper, got {self.lower_rad!r}, {self.upper_rad!r}"
            )
        for name in ("max_velocity_rad_s", "command_timeout_s", "amps_per_nm"):
            if not getattr(self, name) > 0:
                raise DriveConfigError(f"drive {name} must be > 0, got {getattr(self, name)!r}")
        if not self.lag_s >= 0:
            raise DriveConfigError(f"drive lag_s must be >= 0 s, got {self.lag_s!r}")


class SimulatedDrive:
    """Joint ``joint`` (1..7) of one arm; ``initial_rad`` is where it starts holding [rad]."""

    def __init__(self, joint: int, config: DriveConfig, initial_rad: float, now: float = 0.0):
        self.joint = joint
        self.config = config
        self.command_rad = float(initial_rad)  # latest (clamped) joint-frame command
        self._ramped = float(initial_rad)  # rate-limited setpoint
        self.setpoint_rad = float(initial_rad)  # after the lag: what the servo tracks
        self._integral = 0.0  # integral correction added to the servo target [rad]
        self.last_command_s = now
        self.commands = 0
        self.timed_out = False
        self.clamped = False
        self.following = False
        # fault state, set by the motor bank from the fault schedule
        self.sign_flipped = False
        self.encoder_offset_rad = 0.0
        self.powered = True
        self._frames = 0

    @property
    def sign(self) -> int:
        return -self.config.sign if self.sign_flipped else self.config.sign

    def on_command(self, count: int, now: float) -> None:
        """A decoded position command (``count`` in 1/128 deg, drive frame) at ``now`` [s]."""
        if not self.powered:
            return
        c = self.config
        q = count_to_rad(count, self.sign) + c.zero_offset_rad
        self.clamped = not c.lower_rad <= q <= c.upper_rad
        self.command_rad = min(max(q, c.lower_rad), c.upper_rad)
        self.last_command_s = now
        self.commands += 1

    def update(self, now: float, dt: float, position_rad: float) -> float:
        """Advance by ``dt`` [s] with the joint at ``position_rad`` [rad]; return the servo
        target [rad, joint frame]: the shaped setpoint plus the integral correction."""
        # Runs 14,000 times per simulated second: locals and conditional clamps instead of
        # attribute round trips and min(max()) calls; the same float operations in the same
        # order (each clamp is ``min(max(x, -lim), lim)`` spelled out, NaN included).
        c = self.config
        timed_out = self.timed_out = now - self.last_command_s > c.command_timeout_s
        ramped = self._ramped
        step = c.max_velocity_rad_s * dt
        d = (ramped if timed_out else self.command_rad) - ramped
        if -step > d:
            d = -step
        if step < d:
            d = step
        ramped = self._ramped = ramped + d
        lag = c.lag_s
        if lag > 0:
            sp = self.setpoint_rad
            sp = self.setpoint_rad = sp + (ramped - sp) * (dt / (lag + dt))
        else:
            sp = self.setpoint_rad = ramped
        lim = c.integral_limit_rad
        i = self._integral + c.integral_gain * (sp - position_rad) * dt
        if -lim > i:
            i = -lim
        if lim < i:
            i = lim
        self._integral = i
        return sp + i

    def hold_at(self, q: float) -> None:
        """Re-seed the setpoint chain at ``q`` [rad] (after power returns)."""
        self.command_rad = self._ramped = self.setpoint_rad = float(q)
        self._integral = 0.0

    def status(self, position_rad: float) -> int:
        s = STATUS_ENABLED if self.powered else 0
        if self.timed_out:
            s |= STATUS_TIMEOUT
        if self.clamped:
            s |= STATUS_LIMIT
        self.following = abs(self.setpoint_rad - position_rad) > self.config.following_error_rad
        if self.following:
            s |= STATUS_FOLLOWING
        return s

    def feedback_frame(self, position_rad: float, torque_nm: float) -> Frame:
        """The 8-byte feedback frame for the joint at ``position_rad`` [rad] under ``torque_nm``."""
        c = self.config
        drive_rad = self.sign * (position_rad - c.zero_offset_rad) + self.encoder_offset_rad
        current = max(-127.0, min(127.0, self.sign * torque_nm * c.amps_per_nm))
        self._frames += 1
        return encode_feedback(
            self.joint,
            drive_rad,
            current=current,
            status=self.status(position_rad),
            diagnostic=self._frames & 0xFF,
            config=DRIVE_FRAME,
        )
