"""The arm owner's vocabulary: its modes, fault kinds and brake causes, the hooks it
calls, the report of one tick and its running counts."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from rob_twin.controllers.publish import PublishOutcome, PublishReport
from rob_twin.controllers.target import ArmTarget


class Mode(enum.Enum):
    TRACKING = "tracking"
    BRAKING = "braking"
    HOLD = "hold"
    STOPPED = "stopped"
    FAULTED = "faulted"


class FaultKind(enum.Enum):
    UNCERTAIN_OUTPUT = "uncertain_output"
    PARTIAL_OUTPUT = "partial_output"
    STALE_FEEDBACK = "stale_feedback"
    TRACKING_ERROR = "tracking_error"
    BLOCKED_BRAKING_PATH = "blocked_braking_path"
    LATE_TICK = "late_tick"
    PLANNER_ERROR = "planner_error"
    LIMIT_VIOLATION = "limit_violation"
    FOREIGN_WRITER = (
        "foreign_writer"  # someone else writes our command ids (seed 000: exclusive output)
    )
    TORQUE_LIMIT = "torque_limit"  # a feed-forward torque beyond the motor's limit (never clipped)
    DRIVE_ERROR = (
        "drive_error"  # a drive reports an error, is not enabled, or disagrees on registers
    )
    INVALID_CLOCK = (
        "invalid_clock"  # the clock read NaN/inf or ran backwards: no time-based check holds
    )
    INTERNAL_ERROR = "internal_error"  # something raised inside the tick (a hook, a bug): contained


class BrakeCause(enum.Enum):
    STOP = "stop"
    LEASE = "lease"  # lease expired or revoked (loss of authority)
    LATE_TICK = "late_tick"
    OUTPUT_REFUSED = "output_refused"
    RELEASE = "release"


@dataclass
class OwnerHooks:
    """Deterministic interleaving points (tests/experiments). Called inside the barrier:
    a hook must not call back into the owner's barrier-taking methods (tick/stop/reset)."""

    after_take: Callable[[ArmTarget], None] | None = None
    after_compute: Callable[[np.ndarray], None] | None = None
    before_publish: Callable[[np.ndarray], None] | None = None
    after_publish: Callable[[PublishReport], None] | None = None


@dataclass(frozen=True, kw_only=True)
class TickReport:
    """What one tick did. compute_s: wall time of the whole tick incl. publish [s];
    ruckig_s: Ruckig's own calculation time [s]; gap_periods: time since the previous
    tick in periods; positions/velocities/accelerations: commanded state after the tick
    [rad, rad/s, rad/s^2]; stamp_s: the tick's time on the owner's clock [s]."""

    index: int
    stamp_s: float
    mode: Mode
    published: bool
    outcome: PublishOutcome | None
    new_plan: bool
    target_sequence: int | None
    moving_retarget: bool
    positions_rad: np.ndarray
    velocities_rad_s: np.ndarray
    accelerations_rad_s2: np.ndarray
    fault: FaultKind | None
    reason: str
    compute_s: float
    ruckig_s: float
    gap_periods: float


@dataclass
class OwnerStats:
    """Running counts of one owner since construction (``reset()`` keeps them); ``faults``
    lists every latched (FaultKind, reason) in order."""

    ticks: int = 0
    published: int = 0
    plans: int = 0
    moving_retargets: int = 0
    dropped_at_take: int = 0
    refused_outputs: int = 0
    faults: list = field(default_factory=list)
    feedback_refused: int = 0  # observations refused (bad stamp or positions): FeedbackError raised
    feedback_out_of_order: int = 0  # observations older than the newest one: ignored
