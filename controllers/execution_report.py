"""What a synchronized execution reports: outcome, acquisition failure, per-arm figures.

Data only (``rob_twin.controllers.executor`` produces these). Units: seconds, radians.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np
from rob_twin.models.names import Arm

# Owner's commanded position vs a trajectory's first sample [rad] beyond which acquisition
# fails with START_MISMATCH (``ExecutorConfig.start_tolerance_rad``'s default); the planner
# refuses such a start when planning (``rob_twin.planners.group.ArmGroup.for_loop``).
START_TOLERANCE_RAD = 1e-3


class Outcome(enum.Enum):
    COMPLETED = "completed"
    CANCELLED = "cancelled"  # abort(), or a missed settle deadline
    FAULTED = "faulted"  # an arm faulted, braked, lost its lease or refused a target
    ACQUISITION_FAILED = "acquisition_failed"


class AcquireReason(enum.Enum):
    NOT_ACCEPTING = "not_accepting"  # owner faulted, stopped or braking
    MOVING = "moving"
    START_MISMATCH = "start_mismatch"
    LIMITS = "limits"  # samples outside the owner's position/velocity/acceleration/jerk limits
    NO_OWNER = "no_owner"
    LEASE = "lease"


@dataclass(frozen=True)
class AcquisitionFailure:
    """Why ``arm`` could not be acquired (every arm was released)."""

    arm: Arm
    kind: AcquireReason
    reason: str


@dataclass(frozen=True, kw_only=True)
class ArmReport:
    """One arm's published commanded states (stamps [s], p [rad], v [rad/s], a [rad/s^2]),
    the plan at the instants they command (``planned_rad`` = q(stamp + period - start)), the
    stamp of its first published planned sample, ``start_offset_s`` = that minus the shared
    stamp, and the deviation of commanded from plan over [start, end of plan + settle]."""

    arm: Arm
    stamps_s: np.ndarray
    positions_rad: np.ndarray
    velocities_rad_s: np.ndarray
    accelerations_rad_s2: np.ndarray
    planned_rad: np.ndarray
    first_planned_s: float | None
    start_offset_s: float | None
    max_deviation_rad: float
    rms_deviation_rad: float
    targets_sent: int
    targets_rejected: int


@dataclass(frozen=True, kw_only=True)
class ExecutionReport:
    outcome: Outcome
    reason: str
    arm: Arm | None  # the arm whose failure decided the outcome, if any
    start_s: float | None
    duration_s: float
    arms: dict[Arm, ArmReport] = field(default_factory=dict)
    acquisition: AcquisitionFailure | None = None

    @property
    def start_skew_s(self) -> float | None:
        """Spread of the arms' first published planned samples [s] (0 = same tick)."""
        offs = [r.first_planned_s for r in self.arms.values() if r.first_planned_s is not None]
        return float(max(offs) - min(offs)) if len(offs) == len(self.arms) and offs else None

    @property
    def max_start_offset_s(self) -> float | None:
        offs = [r.start_offset_s for r in self.arms.values() if r.start_offset_s is not None]
        return float(max(offs)) if offs else None

    @property
    def max_deviation_rad(self) -> float:
        return max((r.max_deviation_rad for r in self.arms.values()), default=0.0)
