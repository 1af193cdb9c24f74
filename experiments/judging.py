"""The experiments' independent collision judge: coal on a freshly loaded model.

Nothing of the planner's models or colliders is shared: ``fresh_judge()`` loads the scene
again and builds coal shapes (``rob_twin.planners.oracle``). States are judged at least twice as
densely as the planner checks its own plans (it checks every 125 Hz sample and
``substeps`` states between samples): each pair of consecutive states gets
``2 * (substeps + 1) - 1`` joint-space states in between, and a plan's waypoints (the
corners of the joint-space polyline it follows) are judged as well.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from rob_twin.models.loading import load_scene
from rob_twin.models.names import group_arms
from rob_twin.planners.geom_pairs import GeomPairTable
from rob_twin.planners.oracle import CoalOracle, clearances, densify

ARMS = group_arms()
JUDGE_HORIZON_M = 0.05  # clearances beyond this are reported as this
DENSITY_OVER_PLANNER = 2  # judged states per state the planner checks, at least


class FreshJudge:
    """Coal over the planner's pair policy (any arm), on its own freshly loaded model."""

    def __init__(self) -> None:
        model = load_scene()
        self.model = model
        self.oracle = CoalOracle(model)
        self.table = GeomPairTable(model, ARMS)

    def clearances(self, qpos_states: np.ndarray) -> tuple[np.ndarray, list[str]]:
        """(clearance [m] capped at ``JUDGE_HORIZON_M``, closest pair) per full-model state."""
        return clearances(self.oracle, self.table, qpos_states, JUDGE_HORIZON_M)

    def verdict(self, qpos_states: np.ndarray, threshold_m: float) -> dict:
        """Judged states, those below ``threshold_m`` [m], the smallest clearance and its pair."""
        dist, names = self.clearances(qpos_states)
        k = int(np.argmin(dist))
        return {
            "judged_states": int(dist.size),
            "colliding_states": int((dist < threshold_m).sum()),
            "threshold_m": threshold_m,
            "min_clearance_m": float(dist[k]),
            "min_clearance_pair": names[k],
        }


def judge_factor(substeps: int) -> int:
    """Joint-space subdivisions per interval between samples: twice the planner's density."""
    return DENSITY_OVER_PLANNER * (substeps + 1)


def plan_states(
    reference_qpos: np.ndarray, arm_qpos: Mapping[str, np.ndarray], plan, substeps: int
) -> np.ndarray:
    """Full-model states of ``plan`` to judge: its samples densified ``judge_factor(substeps)``
    times, then its waypoints; ``arm_qpos``: arm -> qpos addresses in the model."""
    samples = np.hstack([plan.arms[a].q for a in plan.arms])
    dense = densify(samples, judge_factor(substeps))
    stacked = np.vstack([dense, plan.waypoints])
    out = np.repeat(reference_qpos[None, :], len(stacked), axis=0)
    col = 0
    for a, traj in plan.arms.items():
        n = traj.q.shape[1]
        out[:, arm_qpos[a]] = stacked[:, col : col + n]
        col += n
    return out
