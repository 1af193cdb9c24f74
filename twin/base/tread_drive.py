"""The tracked base drive: a (v, omega) command -> left/right tread speeds -> MuJoCo treads.

Each tread is a box geom whose contact surface moves at the tread's speed (MuJoCo
``geom/surfacevel``; ``model.flg_surfacevel`` must be set for runtime changes, which this
module does). The drive is a differential (skid-steer) drive::

    v_left  = v - omega * track_width / 2        v_right = v + omega * track_width / 2

Tread speeds ramp to their targets within ``tread_accel_m_s2`` at ``control_rate_hz``.
Slip is not scripted: it comes from the contact physics, because a tracked vehicle turning
on the spot drags its treads sideways over the floor (the yaw rate reached is well below
the kinematic ``(v_right - v_left) / track_width``; the ``odometry`` experiment measures it).

Base-stop: an E-stop (``estop()``) or any watched arm owner in FAULTED or STOPPED latches a
stop: both treads brake to 0 at ``stop_decel_m_s2`` and commands are refused
(``BaseStoppedError``) until ``reset()``; nothing restarts by itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from rob_twin.controllers.owner_types import Mode
from rob_twin.models import dimensions as D
from rob_twin.models import names as N
from rob_twin.models.errors import InvalidValueError, RobTwinError
from rob_twin.twin.errors import TwinInputError

STOPPING_MODES = (Mode.FAULTED, Mode.STOPPED)


class BaseCommandError(InvalidValueError):
    """A base command (v, omega) that is not finite or outside the drive's limits."""

    subject = "base command"


class BaseStoppedError(RobTwinError, RuntimeError):
    """A command while the base-stop is latched; names the cause. ``reset()`` clears it."""


@dataclass(frozen=True, kw_only=True)
class BaseDriveConfig:
    """track_width_m: distance between the tread centre lines [m]; tread_max_speed_m_s: the
    treads' top surface speed [m/s]; tread_accel_m_s2: the ramp of each tread's speed
    [m/s^2]; stop_decel_m_s2: the braking ramp of a base-stop [m/s^2]; control_rate_hz: how
    often speeds are updated (must divide the physics rate)."""

    track_width_m: float = 2 * D.BODY.tread_y
    tread_max_speed_m_s: float = D.BODY.tread_max_speed
    tread_accel_m_s2: float = 1.0
    stop_decel_m_s2: float = 2.5
    control_rate_hz: float = 100.0

    def __post_init__(self) -> None:
        for name in (
            "track_width_m",
            "tread_max_speed_m_s",
            "tread_accel_m_s2",
            "stop_decel_m_s2",
            "control_rate_hz",
        ):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise TwinInputError(name, value, "a finite number > 0")

    @property
    def max_speed_m_s(self) -> float:
        """Largest forward speed [m/s] (both treads at full speed)."""
        return self.tread_max_speed_m_s

    @property
    def max_yaw_rate_rad_s(self) -> float:
        """Largest commanded yaw rate [rad/s] (treads at full speed, opposite directions)."""
        return 2.0 * self.tread_max_speed_m_s / self.track_width_m


def default_config() -> BaseDriveConfig:
    return BaseDriveConfig()


def place_base(twin, x_m: float, y_m: float, yaw_rad: float) -> None:
    """Put the base at (x, y) [m] on the floor, heading ``yaw_rad``, at rest (then mj_forward).

    ROB starts at the origin facing +x with the table ahead; drive runs that need room
    place it first (the room's walls are at ``rob_twin.models.dimensions.SCENE.room_x/room_y``)."""
    import mujoco

    q = twin.model.jnt_qposadr[twin.model.joint(N.BASE_FREEJOINT).id]
    v = twin.model.jnt_dofadr[twin.model.joint(N.BASE_FREEJOINT).id]
    twin.data.qpos[q : q + 2] = (x_m, y_m)
    twin.data.qpos[q + 3 : q + 7] = (math.cos(yaw_rad / 2), 0.0, 0.0, math.sin(yaw_rad / 2))
    twin.data.qvel[v : v + 6] = 0.0
    mujoco.mj_forward(twin.model, twin.data)


def tread_speeds(v_m_s: float, omega_rad_s: float, track_width_m: float) -> tuple[float, float]:
    """(left, right) tread speeds [m/s] of a differential drive for (v, omega)."""
    half = omega_rad_s * track_width_m / 2.0
    return v_m_s - half, v_m_s + half


class BaseDrive:
    """Drives ROB's treads on a ``Twin``; registers its control task on the twin's scheduler.

    ``command(v, omega)`` sets the target; ``tread_speed_m_s`` is what the tread motors run
    at now (their encoders' reading, before any slip on the floor)."""

    def __init__(self, twin, config: BaseDriveConfig | None = None):
        self.config = cfg = config or default_config()
        self.twin = twin
        model = twin.model
        self._geoms = [model.geom(N.TREAD_LEFT_GEOM).id, model.geom(N.TREAD_RIGHT_GEOM).id]
        model.flg_surfacevel = True
        self.target_m_s = np.zeros(2)  # (left, right)
        self.tread_speed_m_s = np.zeros(2)
        self.command_v_omega = (0.0, 0.0)
        self.stop_cause: str | None = None
        self._watches: list[Callable[[], str | None]] = []
        self._dt = 1.0 / cfg.control_rate_hz
        self.task_name = "base_drive"
        twin.scheduler.add(self.task_name, cfg.control_rate_hz, self.tick)
        self._apply()

    # ------------------------------------------------------------------ commands
    def command(self, v_m_s: float, omega_rad_s: float) -> tuple[float, float]:
        """Drive forward at ``v_m_s`` [m/s] while turning at ``omega_rad_s`` [rad/s]
        (counter-clockwise seen from above). Returns the target (left, right) tread speeds.
        Raises BaseCommandError (state unchanged) outside the limits, BaseStoppedError while
        the base-stop is latched."""
        cfg = self.config
        v, w = _finite("v_m_s", v_m_s), _finite("omega_rad_s", omega_rad_s)
        if abs(v) > cfg.max_speed_m_s:
            raise BaseCommandError("v_m_s", v, f"[-{cfg.max_speed_m_s}, {cfg.max_speed_m_s}] m/s")
        if abs(w) > cfg.max_yaw_rate_rad_s:
            raise BaseCommandError(
                "omega_rad_s",
                w,
                f"[-{cfg.max_yaw_rate_rad_s:.4g}, {cfg.max_yaw_rate_rad_s:.4g}] rad/s",
            )
        left, right = tread_speeds(v, w, cfg.track_width_m)
        if max(abs(left), abs(right)) > cfg.tread_max_speed_m_s + 1e-12:
            raise BaseCommandError(
                "(v_m_s, omega_rad_s)",
                (v, w),
                f"|v| + |omega| * {cfg.track_width_m / 2:.4g} m <= {cfg.tread_max_speed_m_s} m/s "
                f"(each tread within its top speed; this asks {left:.4g} / {right:.4g} m/s)",
            )
        self._check_running()
        self.target_m_s[:] = (left, right)
        self.command_v_omega = (v, w)
        return left, right

    def estop(self, reason: str = "E-stop") -> None:
        """Latch a base-stop now (the deck's emergency stop)."""
        self._latch(reason)

    def watch_owners(self, loop) -> None:
        """Latch a base-stop when any arm owner of ``loop`` (a ClosedLoop) faults or stops."""

        def check() -> str | None:
            for arm, driver in loop.drivers.items():
                owner = driver.owner
                if owner.mode in STOPPING_MODES:
                    why = f": {owner.fault_reason}" if owner.fault_reason else ""
                    return f"{arm.value} arm owner {owner.mode.value}{why}"
            return None

        self._watches.append(check)

    def watch(self, check: Callable[[], str | None]) -> None:
        """Latch a base-stop when ``check()`` returns a cause (a string) at a control tick."""
        self._watches.append(check)

    def reset(self) -> None:
        """Clear a latched base-stop once the base stands still; targets start at zero."""
        if np.any(self.tread_speed_m_s != 0.0):
            raise BaseStoppedError(
                f"base-stop ({self.stop_cause}) cannot be reset while the "
                f"treads still run at {self.tread_speed_m_s.tolist()} m/s"
            )
        self.stop_cause = None
        self.target_m_s[:] = 0.0
        self.command_v_omega = (0.0, 0.0)

    @property
    def stopped(self) -> bool:
        return self.stop_cause is not None

    # ------------------------------------------------------------------ control task
    def tick(self, now: float) -> None:
        if self.stop_cause is None:
            for check in self._watches:
                cause = check()
                if cause is not None:
                    self._latch(cause)
                    break
        limit = (
            self.config.stop_decel_m_s2 if self.stopped else self.config.tread_accel_m_s2
        ) * self._dt
        step = np.clip(self.target_m_s - self.tread_speed_m_s, -limit, limit)
        self.tread_speed_m_s += step
        self._apply()

    def _apply(self) -> None:
        # A tread surface moving backwards (-x of its geom) pushes the base forwards.
        sv = self.twin.model.geom_surfacevel
        for gid, speed in zip(self._geoms, self.tread_speed_m_s, strict=True):
            sv[gid, :] = 0.0
            sv[gid, 0] = -speed

    def _latch(self, cause: str) -> None:
        if self.stop_cause is None:
            self.stop_cause = cause
        self.target_m_s[:] = 0.0
        self.command_v_omega = (0.0, 0.0)

    def _check_running(self) -> None:
        if self.stop_cause is not None:
            raise BaseStoppedError(
                f"base-stop latched ({self.stop_cause}); commands are refused until reset()"
            )


def _finite(name: str, value) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise BaseCommandError(name, value, "a finite number") from None
    if not math.isfinite(v):
        raise BaseCommandError(name, value, "a finite number")
    return v
