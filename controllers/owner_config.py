"""An arm owner's configuration: per-joint limits and supervision thresholds.

``OwnerConfig`` is frozen and validated on construction (``OwnerConfigError`` names the
field, the value and what is valid); ``default_config()`` is the configuration an
``ArmOwner`` uses when given none.

The arm's joint count is the config's: its per-joint tuples (``OwnerConfig.joints``, the
length of ``position_lower``; every per-joint tuple must have it). The defaults are seven
joints (ROB's and OpenArm's arms); ``with_bounds`` gives the config of an arm with other
joint bounds, and any joint count, from one whose limits are the same on every joint.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

import numpy as np
from rob_twin.controllers.checks import finite_real
from rob_twin.controllers.errors import OwnerConfigError
from rob_twin.models.dimensions import ARM_LOWER_RAD, ARM_UPPER_RAD
from rob_twin.models.names import JOINTS_PER_ARM

N = JOINTS_PER_ARM  # the defaults' joint count
PER_JOINT_LIMITS = ("max_velocity", "max_acceleration", "max_jerk")
PER_JOINT_FIELDS = (*PER_JOINT_LIMITS, "position_lower", "position_upper")


class LateTickAction(enum.Enum):
    """What a late tick (a gap above ``OwnerConfig.late_tick_periods``) does."""

    BRAKE = "brake"
    FAULT = "fault"


@dataclass(frozen=True)
class OwnerConfig:
    """Explicit per-joint limits and supervision thresholds of one owner.

    Per-joint fields hold one value per joint, the same number in each (``joints``: one or
    more; the defaults: seven); the limits also bound braking. Every numeric value is a
    finite real number (bools refused).
    """

    period_s: float = 0.005
    """Control period [s]."""
    max_velocity: tuple[float, ...] = (0.3,) * N
    """Velocity limit per joint [rad/s]."""
    max_acceleration: tuple[float, ...] = (0.6,) * N
    """Acceleration limit per joint [rad/s^2]."""
    max_jerk: tuple[float, ...] = (2.0,) * N
    """Jerk limit per joint [rad/s^3]."""
    position_lower: tuple[float, ...] = ARM_LOWER_RAD
    """Lower position bound of targets per joint [rad] (``rob_twin.models.dimensions``)."""
    position_upper: tuple[float, ...] = ARM_UPPER_RAD
    """Upper position bound of targets per joint [rad] (``rob_twin.models.dimensions``)."""
    late_tick_periods: float = 3.0
    """A tick gap above this many periods [periods of ``period_s``] is late."""
    late_tick_action: LateTickAction = LateTickAction.BRAKE
    """What a late tick does: brake to hold, or latch a LATE_TICK fault."""
    require_feedback: bool = True
    """Whether missing, stale or future-stamped feedback latches STALE_FEEDBACK."""
    feedback_timeout_s: float = 0.05
    """Oldest feedback age accepted [s]; before the first observation, the longest time
    since the start (or reset) [s]."""
    tracking_error_rad: float = 0.05
    """Largest |measured - commanded| position per joint [rad], against the commanded
    position at the feedback's stamp."""
    limit_tolerance: float = 1e-9
    """Slack of the per-sample limit check, in each limit's unit (rad, rad/s, rad/s^2,
    rad/s^3); float rounding only: at most 1e-6."""
    rest_velocity_rad_s: float = 1e-9
    """|v| below this on every joint counts as at rest [rad/s]."""
    feedback_future_tolerance_s: float = 0.001
    """How far a feedback stamp may lie ahead of the owner's clock [s] (clock-read jitter
    between threads; at most ``feedback_timeout_s``)."""

    def __post_init__(self) -> None:
        for name in (
            "period_s",
            "late_tick_periods",
            "feedback_timeout_s",
            "tracking_error_rad",
            "limit_tolerance",
            "rest_velocity_rad_s",
            "feedback_future_tolerance_s",
        ):
            finite_real(getattr(self, name), name, "a finite number", OwnerConfigError)
        lower = self.position_lower
        if isinstance(lower, (str, bytes)) or not hasattr(lower, "__len__") or len(lower) < 1:
            raise OwnerConfigError(
                "position_lower", lower, "one or more per-joint values (one per arm joint)"
            )
        n = len(lower)  # the arm's joint count: every per-joint field has one value per joint
        for name in PER_JOINT_FIELDS:
            vals = getattr(self, name)
            if isinstance(vals, (str, bytes)) or not hasattr(vals, "__len__") or len(vals) != n:
                raise OwnerConfigError(
                    name, vals, f"{n} per-joint values (one per joint: position_lower has {n})"
                )
            for x in vals:
                finite_real(x, name, f"{n} finite per-joint numbers", OwnerConfigError)
            object.__setattr__(self, name, tuple(float(x) for x in vals))
        if not isinstance(self.late_tick_action, LateTickAction):
            raise OwnerConfigError(
                "late_tick_action",
                self.late_tick_action,
                f"one of {[a.value for a in LateTickAction]}",
            )
        if not isinstance(self.require_feedback, bool):
            raise OwnerConfigError("require_feedback", self.require_feedback, "True or False")
        if not self.period_s > 0:
            raise OwnerConfigError("period_s", self.period_s, "> 0 s")
        for name in ("max_velocity", "max_acceleration", "max_jerk"):
            if not all(np.isfinite(x) and x > 0 for x in getattr(self, name)):
                raise OwnerConfigError(name, getattr(self, name), "finite values > 0")
        if not all(
            lo < hi for lo, hi in zip(self.position_lower, self.position_upper, strict=True)
        ):
            raise OwnerConfigError(
                "position_lower/upper",
                (self.position_lower, self.position_upper),
                "lower < upper per joint",
            )
        if not self.late_tick_periods >= 1.0:
            raise OwnerConfigError("late_tick_periods", self.late_tick_periods, ">= 1 period")
        if not self.feedback_timeout_s > 0:
            raise OwnerConfigError("feedback_timeout_s", self.feedback_timeout_s, "> 0 s")
        if not self.tracking_error_rad > 0:
            raise OwnerConfigError("tracking_error_rad", self.tracking_error_rad, "> 0 rad")
        if not 0 <= self.limit_tolerance <= 1e-6:
            raise OwnerConfigError(
                "limit_tolerance", self.limit_tolerance, "0..1e-6 (float rounding only)"
            )
        if not self.rest_velocity_rad_s >= 0:
            raise OwnerConfigError("rest_velocity_rad_s", self.rest_velocity_rad_s, ">= 0 rad/s")
        if not 0 <= self.feedback_future_tolerance_s <= self.feedback_timeout_s:
            raise OwnerConfigError(
                "feedback_future_tolerance_s",
                self.feedback_future_tolerance_s,
                f"0..feedback_timeout_s ({self.feedback_timeout_s} s)",
            )

    @property
    def joints(self) -> int:
        """The arm's joint count: the length of every per-joint tuple."""
        return len(self.position_lower)

    def with_bounds(self, lower, upper) -> OwnerConfig:
        """This config with ``lower`` / ``upper`` [rad] as its position bounds, for an arm of
        ``len(lower)`` joints. A limit (``PER_JOINT_LIMITS``) with another joint count is
        taken over when it is the same on every joint (one value per joint of the new arm);
        a limit that differs between joints names no value for the new joints:
        OwnerConfigError naming it."""
        n = len(lower) if hasattr(lower, "__len__") else 0
        changes: dict[str, object] = {"position_lower": lower, "position_upper": upper}
        for name in PER_JOINT_LIMITS:
            vals = getattr(self, name)
            if len(vals) == n or n < 1:
                continue
            if len(set(vals)) != 1:
                raise OwnerConfigError(
                    name,
                    vals,
                    f"{n} per-joint values for an arm of {n} joints (a {len(vals)}-joint limit "
                    "carries over only when it is the same on every joint)",
                )
            changes[name] = (vals[0],) * n
        return replace(self, **changes)


def default_config() -> OwnerConfig:
    """Seed 000's illustrative streaming bounds at 200 Hz (period 0.005 s): velocity 0.3 rad/s,
    acceleration 0.6 rad/s^2, jerk 2 rad/s^3 per joint."""
    return OwnerConfig()
