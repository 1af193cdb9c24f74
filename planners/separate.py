"""The contrast to group planning: each arm planned alone, blind to the other, then run in sync.

Shared by the crossing demo (``rob_twin.twin.scenario.crossing_demo``) and the crossing
experiment: the motion a planner without the other arm in its model would produce.
"""

from __future__ import annotations

import copy

import mujoco
import numpy as np
from rob_twin.models.names import group_arms
from rob_twin.planners.geom_pairs import GeomPairTable
from rob_twin.planners.group import ArmGroup

ARMS = group_arms()


def without_arm(model: mujoco.MjModel, arm: str) -> mujoco.MjModel:
    """A model copy where ``arm``'s geoms collide with nothing (it cannot be an obstacle)."""
    m = copy.deepcopy(model)
    geoms = GeomPairTable(model, ARMS).arm_geoms(arm)
    m.geom_contype[geoms] = 0
    m.geom_conaffinity[geoms] = 0
    return m


def separate_plans(
    model: mujoco.MjModel, start_qpos: np.ndarray, goals: dict[str, np.ndarray], seed: int = 0
) -> dict:
    """{arm: Plan}: each arm planned alone by a one-arm group on a model copy where the
    other arm cannot collide (it ignores the other arm entirely)."""
    plans = {}
    for a in ARMS:
        other = next(b for b in ARMS if b != a)
        g = ArmGroup(without_arm(model, other), ARMS)
        g.set_qpos(start_qpos)
        plans[a] = g.plan({a: goals[a]}, seed=seed).unwrap()
    return plans


def sync_states(model: mujoco.MjModel, start_qpos: np.ndarray, plans: dict) -> np.ndarray:
    """(N, nq) full states of separate plans run from one start stamp (the shorter one
    holds its end); ``model`` gives each arm's qpos indices."""
    n = max(p.t.size for p in plans.values())
    out = np.repeat(start_qpos[None, :], n, axis=0)
    g = ArmGroup(model, ARMS)
    for a, p in plans.items():
        q = p.arms[a].q
        out[:, g.checker.arm_qpos[a]] = np.vstack([q, np.repeat(q[-1:], n - len(q), axis=0)])
    return out
