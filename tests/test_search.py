"""Shortcutting in a synthetic 2-D world: discs as obstacles, a state check that counts.

What must hold for every seed: no returned waypoint collides, no returned edge collides
at the search's edge step, the path never gets longer, the same seed gives the same path,
the deadline stops the rounds, and the collision memory changes only the order of checks
(never the answer, never a state reported free that was not checked free).
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from rob_twin.planners.errors import PlannerConfigError
from rob_twin.planners.search import (
    CollisionMemory,
    SearchConfig,
    motion_is_free,
    path_length,
    rrt_connect,
    shortcut,
)

STEP = 0.05  # edge step [rad]
DISCS = np.array([[0.0, 0.0, 0.8], [1.6, 1.2, 0.5], [-1.5, -1.0, 0.6], [1.0, -1.6, 0.4]])
LOWER, UPPER = np.array([-3.0, -3.0]), np.array([3.0, 3.0])
START, GOAL = np.array([-2.5, 0.2]), np.array([2.5, -0.2])


class World:
    """Counts every state check and remembers each answer (exact state -> free)."""

    def __init__(self) -> None:
        self.calls = 0
        self.answers: dict[tuple[float, ...], bool] = {}

    def is_free(self, q: np.ndarray) -> bool:
        self.calls += 1
        d = np.hypot(q[0] - DISCS[:, 0], q[1] - DISCS[:, 1]) - DISCS[:, 2]
        free = bool(np.all(d > 0)) and bool(np.all(q >= LOWER) and np.all(q <= UPPER))
        self.answers[tuple(q.tolist())] = free
        return free


def _checked_free(path: list[np.ndarray], world: World, step: float) -> bool:
    """Every waypoint is free and every edge is free at its states ``step`` apart per
    coordinate (the resolution the shortcut promises), checked by a fresh world."""
    return all(world.is_free(p) for p in path) and all(
        motion_is_free(a, b, world.is_free, step) for a, b in zip(path, path[1:], strict=False)
    )


def _searched(seed: int) -> tuple[list[np.ndarray], World]:
    world = World()
    found = rrt_connect(START, GOAL, LOWER, UPPER, world.is_free, np.random.default_rng(seed))
    assert found.path is not None
    return found.path, world


@pytest.mark.parametrize("min_gain", [0.0, 0.02])
def test_shortcut_paths_are_free_and_never_longer(min_gain):
    for seed in range(16):
        path, world = _searched(seed)
        rng = np.random.default_rng(1000 + seed)
        out = shortcut(path, world.is_free, rng, 60, STEP, min_gain=min_gain)
        assert np.array_equal(out[0], START) and np.array_equal(out[-1], GOAL)
        assert path_length(out) <= path_length(path) + 1e-9
        assert _checked_free(out, World(), STEP), f"seed {seed}"


def test_shortcut_gain_threshold_shortens_the_search_path():
    shorter = 0
    for seed in range(10):
        path, world = _searched(seed)
        out = shortcut(path, world.is_free, np.random.default_rng(seed), 60, STEP, min_gain=0.02)
        shorter += path_length(out) < path_length(path) - 1e-6
    assert shorter >= 8  # RRT paths wander: shortcutting should almost always help


@pytest.mark.parametrize("min_gain", [0.0, 0.02])
def test_shortcut_is_deterministic_for_a_seed(min_gain):
    path, _ = _searched(3)
    outs = [
        shortcut(path, World().is_free, np.random.default_rng(7), 60, STEP, min_gain=min_gain)
        for _ in range(2)
    ]
    assert len(outs[0]) == len(outs[1])
    assert all(np.array_equal(a, b) for a, b in zip(*outs, strict=True))


def test_shortcut_stops_at_its_deadline():
    path, _ = _searched(5)
    world = World()
    out = shortcut(
        path, world.is_free, np.random.default_rng(0), 10_000, STEP, time.perf_counter() - 1.0
    )
    # no round ran: only drop_redundant's checks, and the path is still free
    unlimited = World()
    shortcut(path, unlimited.is_free, np.random.default_rng(0), 200, STEP)
    assert world.calls < unlimited.calls
    assert _checked_free(out, World(), STEP)


def test_gain_threshold_skips_checks():
    calls = {}
    for g in (0.0, 0.02):
        total = 0
        for seed in range(10):
            path, _ = _searched(seed)
            world = World()
            shortcut(path, world.is_free, np.random.default_rng(seed), 60, STEP, min_gain=g)
            total += world.calls
        calls[g] = total
    assert calls[0.02] < calls[0.0]


def test_memory_changes_only_the_order_of_checks():
    """The same motions get the same answer with and without the memory, and each state
    the memory's caller sees as free was checked free by the world."""
    rng = np.random.default_rng(11)
    world = World()
    memory = CollisionMemory(2, capacity=8)
    for _ in range(300):
        a, b = rng.uniform(LOWER, UPPER), rng.uniform(LOWER, UPPER)
        plain = motion_is_free(a, b, World().is_free, STEP)
        before = world.calls
        with_memory = motion_is_free(a, b, world.is_free, STEP, memory)
        assert with_memory == plain
        if with_memory:  # every interior state was checked, each one free
            n = max(1, math.ceil(float(np.max(np.abs(b - a))) / STEP))
            assert world.calls - before == n - 1
            for k in range(1, n):
                assert world.answers[tuple((a + (b - a) * (k / n)).tolist())] is True
    assert len(memory) == 8  # collisions were found and the oldest dropped
    for q in memory._q:  # only colliding states are remembered
        assert world.answers[tuple(q.tolist())] is False


def test_memory_finds_a_known_obstacle_first():
    world = World()
    memory = CollisionMemory(2)
    a, b = np.array([-2.0, 0.05]), np.array([2.0, -0.05])  # through the disc at the origin
    assert not motion_is_free(a, b, world.is_free, STEP, memory)
    # a nearby parallel motion through the same disc fails on its first check
    world.calls = 0
    assert not motion_is_free(a + [0.0, 0.1], b + [0.0, 0.1], world.is_free, STEP, memory)
    assert world.calls == 1


def test_shortcut_with_and_without_memory_is_the_same_path():
    """min_gain 0 keeps the path of the plain algorithm: the memory only reorders."""
    import rob_twin.planners.search as search

    for seed in range(8):
        path, _ = _searched(seed)
        got = shortcut(path, World().is_free, np.random.default_rng(seed), 60, STEP)
        original = search.CollisionMemory.first_indices
        search.CollisionMemory.first_indices = lambda self, a, b, n: ()
        try:
            ref = shortcut(path, World().is_free, np.random.default_rng(seed), 60, STEP)
        finally:
            search.CollisionMemory.first_indices = original
        assert len(got) == len(ref)
        assert all(np.array_equal(x, y) for x, y in zip(got, ref, strict=True))


def test_drop_first_must_be_a_bool():
    with pytest.raises(PlannerConfigError, match="shortcut_drop_first"):
        SearchConfig(shortcut_drop_first=1)


@pytest.mark.parametrize("bad", [-0.1, 1.0, math.nan])
def test_min_gain_is_validated(bad):
    with pytest.raises(PlannerConfigError, match="shortcut_min_gain"):
        SearchConfig(shortcut_min_gain=bad)


def test_drop_first_checks_less_and_keeps_paths_free_and_short():
    """A greedy farthest-visible pass over the raw search path before the random rounds:
    fewer state checks over ten searches, every path still checked free, never longer than
    the search's."""
    calls = {}
    for first in (False, True):
        total = 0
        for seed in range(10):
            path, _ = _searched(seed)
            world = World()
            rng = np.random.default_rng(seed)
            out = shortcut(path, world.is_free, rng, 60, STEP, min_gain=0.1, drop_first=first)
            total += world.calls
            assert np.array_equal(out[0], START) and np.array_equal(out[-1], GOAL)
            assert path_length(out) <= path_length(path) + 1e-9
            assert _checked_free(out, World(), STEP), f"seed {seed}"
        calls[first] = total
    assert calls[True] < calls[False]


def test_search_config_defaults_drop_first_at_a_tenth_gain():
    from rob_twin.planners.search import default_config

    cfg = default_config()
    assert cfg.shortcut_drop_first is True and cfg.shortcut_min_gain == 0.1
