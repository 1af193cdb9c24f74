"""ArmGroup's settings: ``GroupConfig``, its defaults and the wall-time budget check.

Units: metres, seconds, radians (per second, per second squared, per second cubed), hertz.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

from rob_twin.planners import collision, search
from rob_twin.planners.collision import CollisionConfig
from rob_twin.planners.errors import PlannerConfigError
from rob_twin.planners.pair_certificate import CertificateConfig
from rob_twin.planners.search import SearchConfig


@dataclass(frozen=True)
class GroupConfig:
    """Settings of ``ArmGroup`` (validated on construction, PlannerConfigError otherwise).

    Fields:

    - collision: margin [m] for planning (``horizon_m`` = margin keeps checks cheapest).
    - clearance_horizon_m: range [m] up to which the final check measures clearance (a longer
      range proves more samples free without a query); >= the margin.
    - search: RRT-Connect settings (``rob_twin.planners.search.SearchConfig``).
    - rate_hz: shared time base [Hz] of the samples.
    - substeps: states [count] between consecutive samples checked by the dense check
      (Cartesian plans, and the count of colliding states before a repair; ``plan``'s final
      check measures or proves free every sample and its certificate covers the time between).
    - max_repairs: segment re-plans [count] after a retimed state collides.
    - repair_step_factor: edge step of a repair relative to the search's [-], in (0, 1].
    - velocity: default joint velocity limit [rad/s] (per-arm ``JointLimits`` may be given to
      ArmGroup instead).
    - acceleration: default joint acceleration limit [rad/s^2].
    - jerk: default joint jerk limit [rad/s^3].
    - max_goal_combinations: goal candidate combinations [count] tried against the combined
      check.
    - max_goal_resamples: rounds [count] of extra candidates asked of resampling goals when no
      combination is free.
    - search_padding_m: extra clearance [m] the search keeps (so densely checked retimed states
      between its edge checks keep the margin); when the padded search fails it is retried
      unpadded, and repairs still try padded first.
    - certificate: how every returned plan is certified between its samples
      (``rob_twin.planners.pair_certificate``: declared uncertainty, payload reach, bisection
      rounds); a plan that cannot be certified at the margin is repaired like a colliding one,
      else fails with ``PlanStatus.UNCERTIFIED``.
    - time_budget_s: wall time [s] a ``plan`` call may take (None: no limit), overridable per
      call.
    - slow_factor: factor [-] in (0, 1) on the velocity and acceleration limits of a segment
      whose certificate stays inconclusive after bisection (before it is re-planned).
    - max_slowdowns: such slowdowns [count] per plan, in [0, 20].
    - free_filter: the search, the shortcutting and the repairs first ask the conservative
      free-space filter (``rob_twin.planners.free_filter``) about the states of each motion
      (a tree edge's interior from ``search.EDGE_PROVE_MIN_STATES`` states, other motions
      from ``search.PROVE_MIN_STATES``), in one batch, and give MuJoCo only those it cannot
      prove free: the same plans (it only ever proves "free"), fewer MuJoCo calls. The final
      check and the certificate never use it. Off by default: building it costs 0.02-0.9 s
      a scene (its distance tables) and about 0.7 s of numba loading once a process, which a
      one-plan scene does not earn back (``python -m rob_twin.experiments.bench
      free-filter``).
    """

    collision: CollisionConfig = field(default_factory=collision.default_config)
    clearance_horizon_m: float = 0.04
    search: SearchConfig = field(default_factory=search.default_config)
    rate_hz: float = 125.0
    substeps: int = 1
    max_repairs: int = 12
    repair_step_factor: float = 0.25
    velocity: float = 1.0
    acceleration: float = 2.5
    jerk: float = 15.0
    max_goal_combinations: int = 256
    max_goal_resamples: int = 3
    search_padding_m: float = 0.002
    certificate: CertificateConfig = field(default_factory=CertificateConfig)
    time_budget_s: float | None = None
    slow_factor: float = 0.5
    max_slowdowns: int = 3
    free_filter: bool = False

    def __post_init__(self) -> None:
        _check_budget("time_budget_s", self.time_budget_s)
        if not isinstance(self.free_filter, bool):
            raise PlannerConfigError("free_filter", self.free_filter, "True or False")
        if not (isinstance(self.slow_factor, numbers.Real) and 0.0 < self.slow_factor < 1.0):
            raise PlannerConfigError("slow_factor", self.slow_factor, "in (0, 1)")
        if (
            isinstance(self.max_slowdowns, bool)
            or not isinstance(self.max_slowdowns, numbers.Integral)
            or not 0 <= self.max_slowdowns <= 20
        ):
            raise PlannerConfigError("max_slowdowns", self.max_slowdowns, "an integer in [0, 20]")
        if not self.clearance_horizon_m >= self.collision.margin_m:
            raise PlannerConfigError(
                "clearance_horizon_m",
                self.clearance_horizon_m,
                f">= margin ({self.collision.margin_m} m)",
            )
        if not (math.isfinite(self.rate_hz) and self.rate_hz > 0):
            raise PlannerConfigError("rate_hz", self.rate_hz, "finite and > 0 Hz")
        for name in ("substeps", "max_repairs"):
            if getattr(self, name) < 0:
                raise PlannerConfigError(name, getattr(self, name), ">= 0")
        if not 0 < self.repair_step_factor <= 1:
            raise PlannerConfigError("repair_step_factor", self.repair_step_factor, "in (0, 1]")
        if self.max_goal_resamples < 0:
            raise PlannerConfigError("max_goal_resamples", self.max_goal_resamples, ">= 0")
        if self.max_goal_combinations < 1:
            raise PlannerConfigError("max_goal_combinations", self.max_goal_combinations, ">= 1")
        spec = self.certificate.spec
        floor = (
            self.collision.margin_m + 2 * spec.point_m + spec.obstacle_m + spec.query_tolerance_m
        )
        if floor >= self.clearance_horizon_m:
            raise PlannerConfigError(
                "certificate.spec",
                spec.as_dict(),
                f"margin + 2 point_m + obstacle_m + query_tolerance_m = {floor:.4g} m "
                f"< clearance_horizon_m ({self.clearance_horizon_m} m), else no pair "
                "can ever be certified",
            )


def _check_budget(field: str, value: object) -> float | None:
    """None or a finite real number of seconds > 0; PlannerConfigError otherwise."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not (math.isfinite(value) and value > 0)
    ):
        raise PlannerConfigError(field, value, "None (no limit) or a finite number of seconds > 0")
    return float(value)


def default_config() -> GroupConfig:
    """5 mm margin, clearance measured to 4 cm, 125 Hz, one sub-step, 1 rad/s, 2.5 rad/s^2,
    15 rad/s^3 on every joint (ASSUMED planning limits, well inside the OpenArm motors)."""
    return GroupConfig()
