"""Plan and PlanResult: what ArmGroup.plan returns.

A ``Plan`` holds one trajectory per *moving* arm on one shared time base (``t``, at
``rate_hz``), the waypoints it was timed from, the smallest clearance seen over every
checked state (samples and sub-steps) with its time and geom pair, and the wall time of
each planning stage. A ``PlanResult`` is the typed outcome: a ``PlanStatus``, the plan
when it succeeded, otherwise the reason and, where a collision is the reason, the pair.

Units: seconds, radians, metres.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np
from rob_twin.planners.certificate_record import PlanClearanceCertificate
from rob_twin.planners.errors import PlanFailedError
from rob_twin.planners.geom_pairs import GeomPair


class PlanStatus(enum.Enum):
    SUCCESS = "success"
    START_IN_COLLISION = "start_in_collision"
    GOAL_IN_COLLISION = "goal_in_collision"
    NO_PATH = "no_path"  # the search gave up
    CHECK_FAILED = "check_failed"  # retimed samples still collide after the allowed repairs
    GOAL_UNREACHABLE = "goal_unreachable"  # a goal resolver (IK of a pose) found no candidate
    TIMEOUT = "timeout"  # the wall-time budget ran out before a checked plan was found
    UNCERTIFIED = "uncertified"  # the clearance between samples could not be certified


@dataclass(frozen=True)
class ArmTrajectory:
    """One arm on the shared time base: q [rad], qd [rad/s], qdd [rad/s^2], each (N, n)."""

    arm: str
    joint_names: tuple[str, ...]
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray


@dataclass(frozen=True)
class ClearanceRecord:
    """Smallest clearance [m] over the checked states, when [s] and between which geoms.

    ``lower_bound`` is True when no checked pair came within the measuring horizon: then
    ``distance_m`` is the horizon and ``time_s``/``pair`` are None.
    """

    distance_m: float
    time_s: float | None
    pair: GeomPair | None
    lower_bound: bool


@dataclass(frozen=True)
class Plan:
    """Trajectories of the moving arms on one time base ``t`` [s] (``rate_hz``)."""

    t: np.ndarray
    rate_hz: float
    arms: dict[str, ArmTrajectory]
    waypoints: np.ndarray  # stacked states of the moving arms, (K+1, n)
    min_clearance: ClearanceRecord
    stage_times_s: dict[str, float]
    checked_states: int  # retimed states measured in the final check (the rest proven free)
    repairs: int  # segments re-planned after a retimed state collided
    seed: int
    goal_resamples: int = 0  # rounds of extra goal candidates asked of resampling goals
    colliding_before_repair: int = 0  # retimed states (samples, sub-steps) within the margin
    # on the first retimed path, before any segment repair (0 when it was clean)
    certificate: PlanClearanceCertificate | None = None  # every plan ArmGroup.plan returns has one
    proven_samples: int = 0  # samples the final check proved free without measuring them
    slowdowns: int = 0  # segments slowed so that the certificate could hold

    @property
    def stage_shares(self) -> dict[str, float]:
        """certify_share (certify / total) and check_certify_share ((check + certify) /
        total) of the planning wall time (0 when no total was recorded)."""
        st = self.stage_times_s
        total = st.get("total", 0.0)
        if total <= 0:
            return {"certify_share": 0.0, "check_certify_share": 0.0}
        certify, check = st.get("certify", 0.0), st.get("check", 0.0)
        return {"certify_share": certify / total, "check_certify_share": (check + certify) / total}

    @property
    def moving(self) -> tuple[str, ...]:
        return tuple(self.arms)

    @property
    def duration_s(self) -> float:
        return float(self.t[-1])

    def stacked(self, what: str = "q") -> np.ndarray:
        """(N, n) stack of ``q``, ``qd`` or ``qdd`` of the moving arms, in ``moving`` order."""
        return np.hstack([getattr(a, what) for a in self.arms.values()])


@dataclass(frozen=True)
class PlanResult:
    """Typed outcome of ``ArmGroup.plan``: ``plan`` on success, else ``reason`` (and
    ``pair`` for collisions, ``arm`` when one arm's goal is at fault)."""

    status: PlanStatus
    plan: Plan | None = None
    reason: str = ""
    pair: GeomPair | None = None
    stage_times_s: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status is PlanStatus.SUCCESS

    def unwrap(self) -> Plan:
        """The plan, or PlanFailedError carrying this result."""
        if self.plan is None:
            raise PlanFailedError(self)
        return self.plan
