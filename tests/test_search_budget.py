"""The search under a wall-time budget, and tree edges checked as one batch through a proof.

- a budgeted search ends at its deadline, not at ``SearchConfig.max_iterations``
  (``budgeted_max_iterations`` is only a safety net), and ArmGroup's padded search hands
  over to the unpadded one after a fixed count of rounds, so a budgeted plan is the same
  for a seed whatever the clock (when it finishes in time);
- with a batch proof of free states, a tree edge's new end is checked exactly first, then
  all its interior states go to the proof in one call, and only the unproven ones to the
  exact check: the same paths, fewer exact checks, and a blocked end never reaches the proof.

Synthetic 2-D worlds (discs) and the two-arm stand (tests/models/two_arm_stand.xml).
Units: radians.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import pytest
from planner_fixtures import STAND_ARMS, STAND_START, load_stand
from rob_twin.planners import search
from rob_twin.planners.errors import PlannerConfigError
from rob_twin.planners.group import ArmGroup, GroupConfig
from rob_twin.planners.plan import PlanStatus
from rob_twin.planners.search import SearchConfig, rrt_connect

LOWER, UPPER = np.array([-3.0, -3.0]), np.array([3.0, 3.0])
# a wall at x = 0 with a narrow slit at y in (1.9, 2.3): the start and goal see each other
# only through it
WALL = np.array([[0.0, y, 0.12] for y in np.arange(-3.0, 1.85, 0.1)] + [[0.0, 2.6, 0.25]])
START, GOAL = np.array([-2.0, -1.0]), np.array([2.0, -1.0])
STAND_GOAL = {"a": [0.28, -0.25, -0.54, -0.25], "b": [-0.9, 0.31, -0.76, -1.61]}  # [rad]


class World:
    """Discs as obstacles; counts exact checks. ``proof`` proves a state free only when
    it is ``proof_gap`` (default 0.05) farther from every disc than needed (sound: never
    calls a colliding state free), counting its calls, states and batch sizes."""

    def __init__(self, discs: np.ndarray = WALL, proof_gap: float = 0.05) -> None:
        self.discs = discs
        self.proof_gap = proof_gap
        self.calls = 0
        self.proof_calls = 0
        self.proof_states = 0
        self.proof_batches: list[int] = []

    def gap(self, q: np.ndarray) -> np.ndarray:
        d = self.discs
        return np.hypot(q[..., 0, None] - d[:, 0], q[..., 1, None] - d[:, 1]) - d[:, 2]

    def is_free(self, q: np.ndarray) -> bool:
        self.calls += 1
        return bool(np.all(self.gap(q) > 0))

    def proof(self, states: np.ndarray) -> np.ndarray:
        self.proof_calls += 1
        self.proof_states += len(states)
        self.proof_batches.append(len(states))
        return np.all(self.gap(states) > self.proof_gap, axis=-1)


def test_iteration_cap_is_the_callers_and_is_validated():
    w = World()
    cfg = SearchConfig(max_iterations=3)
    capped = rrt_connect(START, GOAL, LOWER, UPPER, w.is_free, np.random.default_rng(0), cfg)
    assert capped.path is None and capped.iterations == 3
    assert capped.reason == "no path after 3 iterations" and not capped.timed_out
    more = rrt_connect(
        START, GOAL, LOWER, UPPER, w.is_free, np.random.default_rng(0), cfg, max_iterations=5000
    )
    assert more.path is not None and more.iterations > 3
    with pytest.raises(PlannerConfigError, match="max_iterations"):
        rrt_connect(START, GOAL, LOWER, UPPER, w.is_free, np.random.default_rng(0), cfg, None,
                    max_iterations=0)  # fmt: skip
    with pytest.raises(PlannerConfigError, match="budgeted_max_iterations"):
        SearchConfig(budgeted_max_iterations=0)


def test_a_deadline_still_ends_a_search_with_a_huge_cap():
    def corners_only(q: np.ndarray) -> bool:  # two free corners, never joined: no path
        return bool(np.all(np.abs(q) > 2.8))

    start, goal = np.array([-2.9, -2.9]), np.array([2.9, 2.9])
    t0 = time.perf_counter()
    found = rrt_connect(
        start, goal, LOWER, UPPER, corners_only, np.random.default_rng(0),
        deadline_s=t0 + 0.05, max_iterations=SearchConfig().budgeted_max_iterations,
    )  # fmt: skip
    assert found.timed_out and found.path is None
    assert time.perf_counter() - t0 < 0.5


@pytest.mark.parametrize("seed", range(6))
def test_edges_through_the_proof_give_the_same_path_with_fewer_exact_checks(seed):
    plain, proved = World(), World()
    a = rrt_connect(START, GOAL, LOWER, UPPER, plain.is_free, np.random.default_rng(seed))
    b = rrt_connect(
        START, GOAL, LOWER, UPPER, proved.is_free, np.random.default_rng(seed),
        prove_free=proved.proof,
    )  # fmt: skip
    assert a.path is not None and b.path is not None
    assert a.iterations == b.iterations and a.nodes == b.nodes
    assert all(np.array_equal(p, q) for p, q in zip(a.path, b.path, strict=True))
    assert proved.proof_calls > 0 and proved.calls < plain.calls
    # whole edges at once: the interior of an edge (at least EDGE_PROVE_MIN_STATES states)
    assert min(proved.proof_batches) >= search.EDGE_PROVE_MIN_STATES


def test_a_blocked_edge_end_is_rejected_before_the_proof():
    w = World(np.array([[0.0, 0.0, 1.0]]), proof_gap=0.2)
    q_near, q_new = np.array([-2.0, 0.0]), np.array([-0.5, 0.0])  # q_new inside the disc
    assert not search._edge_free(q_near, q_new, w.is_free, 0.05, w.proof)
    assert w.calls == 1 and w.proof_calls == 0
    # a free end: the 18 interior states (x = -1.95 ... -1.10) go to the proof in one call;
    # the two it cannot prove (x = -1.15, -1.10: within 0.2 of the disc) are checked exactly
    q_free = np.array([-1.05, 0.0])
    assert search._edge_free(q_near, q_free, w.is_free, 0.05, w.proof)
    assert w.proof_batches == [18]
    assert w.calls == 1 + 1 + 2


# ------------------------------------------------------------------ ArmGroup, budgeted


def _stand(search_cfg: SearchConfig, budget: float | None) -> ArmGroup:
    g = ArmGroup(load_stand(), STAND_ARMS, GroupConfig(search=search_cfg, time_budget_s=budget))
    for a, q in STAND_START.items():
        g.set_arm(a, q)
    return g


def test_a_budgeted_plan_searches_past_the_unbudgeted_cap_and_is_deterministic():
    """With 1 round per search and no budget the stand's crossing arms find no path; with
    a budget the unpadded search runs on to the deadline and does, the same plan twice."""
    tight = replace(SearchConfig(), max_iterations=1, arms_in_turn_rounds=0)
    unbudgeted = _stand(tight, None).plan(dict(STAND_GOAL), seed=2)
    assert unbudgeted.status is PlanStatus.NO_PATH
    assert unbudgeted.reason == "no path after 1 iterations"
    first = _stand(tight, 60.0).plan(dict(STAND_GOAL), seed=2).unwrap()
    again = _stand(tight, 60.0).plan(dict(STAND_GOAL), seed=2).unwrap()
    np.testing.assert_array_equal(first.t, again.t)
    np.testing.assert_array_equal(first.stacked(), again.stacked())
    assert first.certificate is not None and first.certificate.certified
