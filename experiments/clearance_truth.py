"""The true clearance of a plan, judged independently: coal every ``step_s`` along the plan.

Between its 125 Hz samples the plan is followed by linear interpolation (a motion within the
certificate's speed bound, so the certificate must hold for it too). Every checked pair is
measured with coal (``rob_twin.planners.certificate_check.coal_pair_distances``: bounding-sphere gap
beyond the horizon, coal GJK/EPA within it). Units: metres, seconds.
"""

from __future__ import annotations

import numpy as np
from rob_twin.planners.certificate_check import coal_pair_distances
from rob_twin.planners.certificate_geometry import _group_geometry
from rob_twin.planners.oracle import CoalOracle


def dense_states(plan, step_s: float = 0.001) -> tuple[np.ndarray, np.ndarray]:
    """(times [s], stacked q [rad]) every ``step_s`` along ``plan`` (ends included)."""
    t = plan.t
    dense_t = np.append(np.arange(0.0, t[-1], step_s), t[-1])
    q = plan.stacked("q")
    return dense_t, np.column_stack([np.interp(dense_t, t, q[:, j]) for j in range(q.shape[1])])


def true_min_clearance(
    group,
    plan,
    oracle: CoalOracle | None = None,
    step_s: float = 0.001,
    horizon_m: float | None = None,
) -> tuple[float, np.ndarray]:
    """(smallest clearance over all checked pairs [m], per-pair minima (P,) [m]), each capped
    at ``horizon_m`` (default: the certificate's horizon)."""
    horizon = horizon_m or plan.certificate.horizon_m
    geo = _group_geometry(group, plan.moving, plan.certificate.payload_reach_m)
    _, states = dense_states(plan, step_s)
    idx = np.concatenate([group.checker.arm_qpos[a] for a in plan.moving])
    d, _ = coal_pair_distances(
        oracle or CoalOracle(group.model), geo, group.reference_qpos, idx, states, horizon
    )
    per_pair = d.min(axis=1)
    return float(per_pair.min()) if per_pair.size else horizon, per_pair
